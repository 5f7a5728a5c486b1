"""LOO-CRPS measured by the harness from kernel matrices; a number a candidate reports is never read.

Kernel *source* is candidate code (an LLM wrote it). It runs only inside sandboxes, in
two runs that share nothing but what the harness passes between them:

1. fit (``harness/kernel_fit.py``): validates the kernel (``validate_kernel``) and fits
   its hyperparameters by marginal likelihood on (``X``, ``y``); the harness takes back
   only the hyperparameter *values*, checked (names, shapes, finite, positive, count).
2. Gram (``harness/kernel_gram.py``): a fresh run that sees ``X`` and those values, never
   ``y``; it saves ``K = k(X, X)`` with numpy to ``gram.npy``.

The harness loads ``gram.npy`` without pickle and checks it (``checked_gram``: shape
`n x n`, finite, symmetric, PSD up to the relative jitter ``validate_kernel`` allows).
Everything after that is trusted code here (``gram_score``): the signal variance, noise
and mean are fitted by marginal likelihood on (``K``, ``y``) and the score is the
closed-form LOO-CRPS of that GP (R&W eq. 5.12, hyperparameters at the full-data fit).
Library kernels (``KernelSpec`` built by the parent) go through the same ``gram_score``,
so both kinds are scored by one rule. Nothing the candidate prints, and no other file it
writes (a ``result.json``, a ``loo_crps`` line), is read.

Held-out scoring (``heldout``: a list of test-index sets, e.g. ``kfold_splits``): for each
set the kernel's hyperparameters are fitted on the *other* points only (in the fit run for
kernel source, here for library kernels), the Gram matrix is computed with those values,
and ``heldout_crps`` (trusted code here) fits signal variance, noise and mean on the
training block and scores the Gaussian predictive of each held-out observation. The
score's value is the mean held-out CRPS; the per-point values (``details["heldout_crps"]``)
let a caller pair two kernels point by point. Unlike LOO-CRPS, no hyperparameter saw the
point it is scored on.

Residual channel, stated plainly: the fit run sees ``y`` (fitting needs it), and a
candidate that deliberately encoded ``y`` into its hyperparameter values could carry
information about it into the Gram run. The values are checked for form, not meaning.
With ``heldout`` the fit run receives all of ``y`` too (one run fits every fold; the
harness code there fits each fold on its training rows only): a kernel that deliberately
reads the request file could leak a held-out value into that fold's hyperparameters. An
honest kernel cannot; nothing here claims more.
"""

from __future__ import annotations

import io
import json
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor

from optiforge.errors import InvalidCandidate, SolverError
from optiforge.evals.protocol import Score
from optiforge.solvers.gp import ExactGP, KernelSpec

if TYPE_CHECKING:  # pragma: no cover
    from optiforge.sandboxes import Sandbox

_DT = torch.float64
FAILED_VALUE = 1e30
"""``Score.value`` of a rejected candidate (worse than any real LOO-CRPS)."""

FOLD_RESTARTS = 0
"""Random restarts of each held-out fold's kernel fit (besides the start at the declared
initial values): the folds multiply the fitting cost, so they get none. The start is the
declared ``init``, never the full-data fit (which saw the fold)."""

GRAM_JITTER_MAX = 1e-4
"""Largest relative jitter (times mean diag) that may make a returned Gram matrix PSD."""

_HARNESS = Path(__file__).resolve().parent / "harness"
_NUMERICS_ENV = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "MKL_CBWR", "ATEN_CPU_CAPABILITY")
"""Host settings that pick BLAS code paths: passed on so sandboxed numerics round as here."""
_SHIPPED = ("optiforge.errors", "optiforge.solvers.gp")
"""The optiforge modules the harness programs import inside the sandbox."""


# ----------------------------------------------------------------------------- trusted math


def load_npy(raw: bytes | str | None, name: str = "gram.npy") -> np.ndarray:
    """A numeric array saved with ``np.save`` (never unpickled); ``InvalidCandidate`` otherwise."""
    if raw is None:
        raise InvalidCandidate(f"the harness run left no {name}")
    data = raw.encode("utf-8") if isinstance(raw, str) else raw
    try:
        arr = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError) as e:
        raise InvalidCandidate(f"{name} is not a plain numpy array: {e}") from e
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "fiu":
        raise InvalidCandidate(f"{name} holds {getattr(arr, 'dtype', type(arr))}, not numbers")
    return arr


def checked_gram(K: np.ndarray | Tensor, n: int) -> Tensor:
    """``K`` as a checked `n x n` float64 Gram matrix; ``InvalidCandidate`` if it is not sane.

    Checks: shape `n x n`; finite; symmetric (max |K - K^T| <= 1e-8 max(1, max|K|)); PSD:
    Cholesky of ``K + j mean(diag K) I`` succeeds for some ``j`` in {0, 1e-10, ..., 1e-4}.
    Returns the symmetrised matrix plus that jitter.
    """
    arr = K.detach().cpu().numpy() if isinstance(K, Tensor) else np.asarray(K)
    if arr.shape != (n, n):
        raise InvalidCandidate(f"Gram matrix has shape {arr.shape}, expected ({n}, {n})")
    K = torch.from_numpy(arr.astype(np.float64, copy=True))
    if not bool(torch.isfinite(K).all()):
        raise InvalidCandidate("Gram matrix has non-finite entries")
    asym = float((K - K.T).abs().max())
    if asym > 1e-8 * max(1.0, float(K.abs().max())):
        raise InvalidCandidate(f"Gram matrix is not symmetric: max |K - K^T| = {asym:.3g}")
    K = 0.5 * (K + K.T)
    scale = float(torch.diagonal(K).abs().mean().clamp_min(1e-300))
    eye = torch.eye(n, dtype=_DT)
    for j in [0.0] + [10.0**e for e in range(-10, -3)]:
        if int(torch.linalg.cholesky_ex(K + j * scale * eye)[1]) == 0:
            return K + j * scale * eye
    raise InvalidCandidate(
        f"Gram matrix is not PSD: Cholesky failed with relative jitter up to {GRAM_JITTER_MAX:g}"
    )


def _precomputed(K: Tensor) -> KernelSpec:
    """A kernel over row indices that looks entries up in ``K`` (inputs: `n x 1` indices)."""

    def fn(a: Tensor, b: Tensor, p: Any) -> Tensor:
        return K[a[:, 0].long()][:, b[:, 0].long()]

    return KernelSpec("gram", fn, {})


def gram_score(
    K: Tensor,
    y: Tensor,
    *,
    n_hyperparameters: int,
    seed: int = 0,
    n_restarts: int = 2,
    n_fingerprint: int = 16,
) -> Score:
    """LOO-CRPS of the GP with kernel matrix ``K`` (`n x n`, fixed) on ``y`` (`n`).

    Signal variance, noise and mean are fitted here by marginal likelihood (``ExactGP``
    with its usual data-scaled bounds and starts); ``n_hyperparameters`` (the kernel's
    own) enters the BIC only.
    """
    K = torch.as_tensor(K, dtype=_DT)
    y = torch.as_tensor(y, dtype=_DT).reshape(-1)
    n = y.shape[0]
    idx = torch.arange(n, dtype=_DT).unsqueeze(-1)
    try:
        gp = ExactGP(_precomputed(K), n_restarts=n_restarts, seed=seed).fit(idx, y)
        crps = gp.loo_crps()
        lml = gp.log_marginal_likelihood()
    except SolverError as e:
        return Score(value=FAILED_VALUE, passed=False, details={"reason": f"fit failed: {e}"})
    assert gp.params is not None
    P = K[:n_fingerprint, :n_fingerprint]
    dg = torch.diagonal(P).clamp_min(1e-300).sqrt()
    fingerprint = (P / (dg.unsqueeze(-1) * dg.unsqueeze(0))).tolist()
    return Score(
        value=crps,
        passed=math.isfinite(crps),
        metrics={
            "nll": gp.nll_,
            "bic": -2.0 * lml + (n_hyperparameters + 3) * math.log(n),
            "n_hyperparameters": float(n_hyperparameters),
        },
        details={
            "fingerprint": fingerprint,
            "gp": {
                "outputscale": gp.params.outputscale,
                "noise": gp.params.noise,
                "mean": gp.params.mean,
            },
            "scored_by": "harness: LOO-CRPS from the kernel matrix",
        },
    )


def checked_heldout(heldout: Any, n: int) -> list[list[int]]:
    """``heldout`` as non-empty test-index sets within ``range(n)``, each leaving >= 2 training points."""
    out: list[list[int]] = []
    for t in heldout:
        idx = sorted({int(i) for i in t})
        if not idx or idx[0] < 0 or idx[-1] >= n or n - len(idx) < 2:
            raise ValueError(f"bad held-out set {t!r} for n={n}")
        out.append(idx)
    if not out:
        raise ValueError("held-out scoring needs at least one test set")
    return out


def heldout_crps(
    grams: list[Tensor],
    y: Tensor,
    heldout: list[list[int]],
    *,
    seed: int = 0,
    n_restarts: int = 2,
) -> tuple[Tensor, Tensor, Tensor]:
    """Per-point held-out CRPS, predictive mean and sd (each `m`, test sets concatenated).

    ``grams[j]`` (`n x n`) is the kernel matrix with hyperparameters fitted without the
    points ``heldout[j]``; signal variance, noise and mean are fitted here on the training
    block only, and each held-out ``y_i`` is scored under the GP's predictive of a new
    observation (noise included). ``SolverError`` if a fold's fit fails.
    """
    from optiforge.solvers.gp.exact import gaussian_crps

    y = torch.as_tensor(y, dtype=_DT).reshape(-1)
    n = y.shape[0]
    idx = torch.arange(n, dtype=_DT).unsqueeze(-1)
    crps, mus, sds = [], [], []
    for K, test in zip(grams, heldout, strict=True):
        t = torch.tensor(test, dtype=torch.long)
        mask = torch.ones(n, dtype=torch.bool)
        mask[t] = False
        gp = ExactGP(_precomputed(K), n_restarts=n_restarts, seed=seed).fit(idx[mask], y[mask])
        mu, var = gp.predict(idx[t], include_noise=True)
        sd = var.clamp_min(1e-12).sqrt()
        crps.append(gaussian_crps(mu, sd, y[t]))
        mus.append(mu)
        sds.append(sd)
    return torch.cat(crps), torch.cat(mus), torch.cat(sds)


def heldout_score(
    base: Score,
    grams: list[Tensor],
    y: Tensor,
    heldout: list[list[int]],
    *,
    seed: int,
    n_restarts: int,
) -> Score:
    """``base`` (the full-data ``gram_score``) re-valued by mean held-out CRPS (``heldout_crps``);
    its LOO-CRPS moves to ``metrics["loo_crps"]``."""
    if not base.passed:
        return base
    try:
        crps, mu, sd = heldout_crps(grams, y, heldout, seed=seed, n_restarts=n_restarts)
    except SolverError as e:
        return Score(value=FAILED_VALUE, passed=False, details={"reason": f"fold fit failed: {e}"})
    value = float(crps.mean())
    base.metrics.update(loo_crps=base.value, heldout_points=float(crps.numel()),
                        heldout_sets=float(len(heldout)))  # fmt: skip
    base.details.update(
        heldout=heldout,
        heldout_crps=crps.tolist(),
        heldout_mean=mu.tolist(),
        heldout_sd=sd.tolist(),
        scored_by="harness: held-out CRPS (hyperparameters fitted without the scored points)",
    )
    base.value, base.passed = value, math.isfinite(value)
    return base


# ----------------------------------------------------------------------------- kernel source


def _checked_params(
    fit: Any, d: int, max_hyperparameters: int
) -> tuple[dict[str, str], dict[str, list[float]]]:
    """Shapes and values from the fit run's ``fit.json``; ``InvalidCandidate`` if malformed."""
    shapes, params = fit.get("shapes"), fit.get("params")
    if not isinstance(shapes, dict) or not isinstance(params, dict) or set(shapes) != set(params):
        raise InvalidCandidate("the fit run returned no hyperparameters")
    total = 0
    out: dict[str, list[float]] = {}
    for name, shape in shapes.items():
        vals = params[name]
        if not isinstance(name, str) or len(name) > 200 or shape not in ("scalar", "ard"):
            raise InvalidCandidate(f"hyperparameter {name!r}: bad name or shape {shape!r}")
        want = d if shape == "ard" else 1
        if not isinstance(vals, list) or len(vals) != want:
            raise InvalidCandidate(f"hyperparameter {name!r}: expected {want} values")
        try:
            fv = [float(v) for v in vals]
        except (TypeError, ValueError) as e:
            raise InvalidCandidate(f"hyperparameter {name!r}: non-numeric value") from e
        if not all(math.isfinite(v) and v > 0 for v in fv):
            raise InvalidCandidate(f"hyperparameter {name!r}: values must be finite and positive")
        out[name] = fv
        total += want
    if total > max_hyperparameters:
        raise InvalidCandidate(f"too many hyperparameters: {total} > {max_hyperparameters} (d={d})")
    return shapes, out


def numerics_env() -> dict[str, str]:
    """The caller's BLAS code-path settings (``_NUMERICS_ENV``; never secrets) for a sandbox run."""
    return {k: os.environ[k] for k in _NUMERICS_ENV if k in os.environ}


def _harness_run(
    sandbox: Sandbox, program: str, request: dict[str, Any], output: str, timeout_s: float
) -> bytes | str:
    files: dict[str, str | bytes] = {}
    from optiforge.sandboxes.payload import package_files

    files.update(package_files(*_SHIPPED))
    files[program] = (_HARNESS / program).read_text()
    files["request.json"] = json.dumps(request)
    res = sandbox.run(
        f"{sys.executable} {program}",
        files=files,
        timeout_s=timeout_s,
        env={"OMP_NUM_THREADS": "1", **numerics_env()},
        collect=[output],
    )
    if res.timed_out:
        raise InvalidCandidate(f"kernel evaluation timed out after {timeout_s:g} s")
    if output not in res.files:
        tail = (res.stderr or "").strip().splitlines()[-1:] or [f"exit {res.returncode}"]
        raise InvalidCandidate(f"kernel code crashed ({program}): {tail[0][:300]}")
    return res.files[output]


def score_kernel_source(
    src: str,
    X: Tensor,
    y: Tensor,
    sandbox: Sandbox | None,
    *,
    seed: int = 0,
    n_restarts: int = 2,
    n_fingerprint: int = 16,
    max_hyperparameters: int = 256,
    timeout_s: float = 300.0,
    heldout: list[list[int]] | None = None,
) -> Score:
    """LOO-CRPS of kernel source on (``X`` `n x D`, ``y`` `n`): two sandbox runs, scored here.

    ``heldout`` (test-index sets): the fit run also fits each set's complement, the Gram
    run computes one matrix per fit, and the value is the mean held-out CRPS
    (``heldout_score``).

    ``sandbox`` None: ``get_sandbox("local")`` (refused where the containment promise is
    unmet, unless ``--unsafe-sandbox``). Kernel source never runs in this process.
    """
    if sandbox is None:
        from optiforge.sandboxes import get_sandbox

        sandbox = get_sandbox("local")
    X = torch.as_tensor(X, dtype=_DT)
    y = torch.as_tensor(y, dtype=_DT).reshape(-1)
    n, d = X.shape
    try:
        sets = checked_heldout(heldout, n) if heldout is not None else None
    except ValueError as e:
        raise InvalidCandidate(str(e)) from e
    try:
        raw = _harness_run(
            sandbox,
            "kernel_fit.py",
            {
                "source": src,
                "d": d,
                "X": X.tolist(),
                "y": y.tolist(),
                "seed": seed,
                "n_restarts": n_restarts,
                "max_hyperparameters": max_hyperparameters,
                **({"heldout": sets, "fold_restarts": FOLD_RESTARTS} if sets is not None else {}),
            },
            "fit.json",
            timeout_s,
        )
        try:
            fit = json.loads(raw if isinstance(raw, str) else raw.decode("utf-8", "replace"))
        except json.JSONDecodeError as e:
            raise InvalidCandidate("the fit run's fit.json is not JSON") from e
        if not isinstance(fit, dict) or fit.get("ok") is not True:
            reason = fit.get("reason", "rejected") if isinstance(fit, dict) else "rejected"
            raise InvalidCandidate(str(reason)[:500])
        shapes, params = _checked_params(fit, d, max_hyperparameters)
        fold_params = []
        if sets is not None:
            raw_folds = fit.get("fold_params")
            if not isinstance(raw_folds, list) or len(raw_folds) != len(sets):
                raise InvalidCandidate("the fit run returned no per-fold hyperparameters")
            fold_params = [
                _checked_params({"shapes": shapes, "params": fp}, d, max_hyperparameters)[1]
                for fp in raw_folds
            ]
        gram = _harness_run(
            sandbox,
            "kernel_gram.py",
            {"source": src, "X": X.tolist(), "shapes": shapes, "params": params,
             **({"fold_params": fold_params} if sets is not None else {})},
            "gram.npy",
            timeout_s,
        )  # fmt: skip
        arr = load_npy(gram)
        if sets is None:
            K = checked_gram(arr, n)
            folds_K: list[Tensor] = []
        else:
            if arr.ndim != 3 or arr.shape[0] != len(sets) + 1:
                raise InvalidCandidate(
                    f"gram.npy has shape {arr.shape}, expected a stack of {len(sets) + 1}"
                )
            K = checked_gram(arr[0], n)
            folds_K = [checked_gram(a, n) for a in arr[1:]]
    except InvalidCandidate as e:
        return Score(value=FAILED_VALUE, passed=False, details={"reason": str(e)})
    n_hyp = sum(len(v) for v in params.values())
    score = gram_score(
        K,
        y,
        n_hyperparameters=n_hyp,
        seed=seed,
        n_restarts=n_restarts,
        n_fingerprint=n_fingerprint,
    )
    if sets is not None:
        score = heldout_score(score, folds_K, y, sets, seed=seed, n_restarts=n_restarts)
    warnings = fit.get("warnings")
    score.details.update(
        params=params,
        warnings=[str(w)[:200] for w in warnings[:10]] if isinstance(warnings, list) else [],
        isolated="sandbox",
    )
    return score
