"""Kernel candidates: load from source, validate on probe points, deduplicate functionally.

``kernel_from_source`` executes code in a namespace holding only ``torch``, ``math`` and a
few harmless builtins. That is a guard against accidents, not a security boundary:
untrusted (LLM) code must run inside a sandbox, e.g. via
``python -m optiforge.solvers.gp.validate_cli < request.json``.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field
from torch import Tensor

from optiforge.errors import InvalidCandidate, SolverError
from optiforge.solvers.gp.exact import ExactGP
from optiforge.solvers.gp.kernels import HyperSpec, KernelSpec

_DT = torch.float64

# --- loading from source ---------------------------------------------------------------

_SAFE_BUILTINS = {
    name: getattr(builtins, name)
    for name in (
        "abs",
        "all",
        "any",
        "bool",
        "dict",
        "enumerate",
        "float",
        "int",
        "isinstance",
        "len",
        "list",
        "max",
        "min",
        "pow",
        "range",
        "reversed",
        "round",
        "sorted",
        "str",
        "sum",
        "tuple",
        "zip",
        "ValueError",
        "TypeError",
        "KeyError",
        "Exception",
        "True",
        "False",
        "None",
    )
    if hasattr(builtins, name)
}
_ALLOWED_IMPORTS = {"torch", "math"}


def _restricted_import(
    name: str, globals_: Any = None, locals_: Any = None, fromlist: Any = (), level: int = 0
) -> Any:
    if name.split(".")[0] not in _ALLOWED_IMPORTS:
        raise ImportError(f"import of {name!r} is not allowed in kernel code (only torch, math)")
    return builtins.__import__(name, globals_, locals_, fromlist, level)


def _hyperspec(name: str, raw: Any) -> HyperSpec:
    if isinstance(raw, HyperSpec):
        return raw
    if not isinstance(raw, Mapping):
        raise InvalidCandidate(f"HYPERPARAMETERS[{name!r}] must be a dict with shape/init/bounds")
    unknown = set(raw) - {"shape", "init", "bounds"}
    if unknown:
        raise InvalidCandidate(f"HYPERPARAMETERS[{name!r}] has unknown keys {sorted(unknown)}")
    try:
        bounds = tuple(float(b) for b in raw.get("bounds", (1e-3, 1e3)))
        if len(bounds) != 2:
            raise ValueError("bounds needs two numbers")
        return HyperSpec(
            shape=raw.get("shape", "scalar"), init=float(raw.get("init", 1.0)), bounds=bounds
        )  # type: ignore[arg-type]
    except (TypeError, ValueError) as e:
        raise InvalidCandidate(f"HYPERPARAMETERS[{name!r}] is malformed: {e}") from e


def kernel_from_source(src: str, *, name: str | None = None) -> KernelSpec:
    """Build a ``KernelSpec`` from source defining ``def kernel(x1, x2, params)`` and ``HYPERPARAMETERS``.

    ``HYPERPARAMETERS`` maps names to ``{"shape": "scalar"|"ard", "init": float,
    "bounds": [lo, hi]}``. An optional ``NAME`` string names the kernel.
    """
    ns: dict[str, Any] = {
        "torch": torch,
        "math": math,
        "__builtins__": {**_SAFE_BUILTINS, "__import__": _restricted_import},
    }
    try:
        code = compile(src, "<kernel>", "exec")
        exec(code, ns)  # noqa: S102  # trusted: only sandboxed harnesses (validate_cli, harness/*) call this
    except SyntaxError as e:
        raise InvalidCandidate(f"kernel source does not parse: {e.msg} (line {e.lineno})") from e
    except Exception as e:  # any failure at definition time is the candidate's fault
        raise InvalidCandidate(
            f"kernel source failed at definition: {type(e).__name__}: {e}"
        ) from e
    fn = ns.get("kernel")
    if not callable(fn):
        raise InvalidCandidate("kernel source must define a function `kernel(x1, x2, params)`")
    hyp_raw = ns.get("HYPERPARAMETERS", {})
    if not isinstance(hyp_raw, Mapping):
        raise InvalidCandidate("HYPERPARAMETERS must be a dict")
    hyp = {str(k): _hyperspec(str(k), v) for k, v in hyp_raw.items()}
    kname = name or str(ns.get("NAME", "custom"))
    return KernelSpec(name=kname, fn=fn, hyperparameters=hyp, expression=kname)


# --- validation --------------------------------------------------------------------------


class ValidationReport(BaseModel):
    """Outcome of ``validate_kernel``; ``reason`` is one clear line when ``ok`` is false."""

    model_config = ConfigDict(extra="forbid")

    ok: bool
    reason: str = ""
    """Why the kernel was rejected (empty when accepted)."""
    n_hyperparameters: int = 0
    jitter_used: float = 0.0
    """Largest relative jitter the Cholesky checks needed."""
    warnings: list[str] = Field(default_factory=list)


def _sample_params(spec: KernelSpec, d: int, gen: torch.Generator) -> dict[str, Tensor]:
    out = {}
    for k, h in spec.hyperparameters.items():
        lo, hi = math.log(h.bounds[0]), math.log(h.bounds[1])
        # Stay in the middle half of the log-box: extreme corners are legitimately ill-conditioned.
        a, b = lo + 0.25 * (hi - lo), hi - 0.25 * (hi - lo)
        u = torch.rand(h.size(d), generator=gen, dtype=_DT)
        v = (a + (b - a) * u).exp()
        out[k] = v if h.shape == "ard" else v[0]
    return out


def _cholesky_jitter(K: Tensor, jitter_max: float) -> float | None:
    """Smallest relative jitter in {0, 1e-10, ..., jitter_max} making ``K`` Cholesky-able."""
    scale = float(torch.diagonal(K).abs().mean().clamp_min(1e-300))
    eye = torch.eye(K.shape[0], dtype=K.dtype)
    jitters = [0.0] + [10.0**e for e in range(-10, 1) if 10.0**e <= jitter_max * (1 + 1e-12)]
    for j in jitters:
        _, info = torch.linalg.cholesky_ex(K + j * scale * eye)
        if int(info) == 0:
            return j
    return None


def validate_kernel(
    spec: KernelSpec,
    d: int,
    *,
    n_probe: int = 32,
    max_hyperparameters: int = 64,
    jitter_max: float = 1e-4,
    n_param_samples: int = 2,
    seed: int = 0,
) -> ValidationReport:
    """Run ``spec`` on seeded probe points in ``[0,1]^d`` and accept it only if it is a sane kernel.

    Checks, in order: hyperparameter count <= ``max_hyperparameters``; it runs and returns an
    `n x n` floating tensor; finite; symmetric (max |K - K^T| <= 1e-8 max(1, max|K|)); rows
    of ``k(X[:4], X)`` equal those of ``k(X, X)`` (no data-dependent normalisation);
    positive semi-definite (Cholesky of ``K + j mean(diag K) I`` succeeds for some relative
    jitter ``j <= jitter_max``) at the initial and ``n_param_samples`` random
    hyperparameters; finite gradients wrt every hyperparameter and the inputs.
    """
    if d < 1 or n_probe < 4:
        raise InvalidCandidate("validate_kernel needs d >= 1 and n_probe >= 4")
    n_hyp = spec.n_hyperparameters(d)
    rep = ValidationReport(ok=False, n_hyperparameters=n_hyp)
    if n_hyp > max_hyperparameters:
        rep.reason = f"too many hyperparameters: {n_hyp} > {max_hyperparameters} (d={d})"
        return rep
    gen = torch.Generator().manual_seed(seed)
    X = torch.rand(n_probe, d, generator=gen, dtype=_DT)
    param_sets = [spec.initial_params(d)] + [
        _sample_params(spec, d, gen) for _ in range(n_param_samples)
    ]
    jit_used = 0.0
    for idx, p0 in enumerate(param_sets):
        where = "at initial hyperparameters" if idx == 0 else f"at random hyperparameters #{idx}"
        params = {k: v.clone().requires_grad_(True) for k, v in p0.items()}
        Xg = X.clone().requires_grad_(True)
        try:
            K = spec.fn(Xg, Xg, params)
            Kc = spec.fn(X[:4], X, {k: v.detach() for k, v in params.items()})
        except Exception as e:  # any crash in candidate code is a rejection, reported verbatim
            rep.reason = f"kernel raised {type(e).__name__}: {e}"
            return rep
        if not isinstance(K, Tensor) or not K.is_floating_point():
            rep.reason = f"kernel must return a floating torch.Tensor, got {type(K).__name__}"
            return rep
        if tuple(K.shape) != (n_probe, n_probe):
            rep.reason = f"kernel returned shape {tuple(K.shape)} for inputs {n_probe} x {d} and {n_probe} x {d}; expected ({n_probe}, {n_probe})"
            return rep
        K = K.to(_DT)
        Kd = K.detach()
        if not bool(torch.isfinite(Kd).all()):
            rep.reason = f"non-finite values in the Gram matrix {where}"
            return rep
        asym = float((Kd - Kd.T).abs().max())
        if asym > 1e-8 * max(1.0, float(Kd.abs().max())):
            rep.reason = f"not symmetric: max |K - K^T| = {asym:.3g} {where}"
            return rep
        if (
            not isinstance(Kc, Tensor)
            or tuple(Kc.shape) != (4, n_probe)
            or not torch.allclose(Kc.to(_DT), Kd[:4], rtol=1e-6, atol=1e-9)
        ):
            rep.reason = "inconsistent: k(X[:4], X) differs from the first rows of k(X, X) (kernel must not depend on the batch)"
            return rep
        j = _cholesky_jitter(Kd, jitter_max)
        if j is None:
            rep.reason = f"not PSD: Cholesky failed with jitter up to {jitter_max:g} {where}"
            return rep
        jit_used = max(jit_used, j)
        w = torch.randn(n_probe, n_probe, generator=gen, dtype=_DT)
        names = list(params)
        grads = torch.autograd.grad(
            (K * (w + w.T)).sum(), [params[k] for k in names] + [Xg], allow_unused=True
        )
        for name, g in zip(names, grads[:-1], strict=True):
            if g is None:
                if idx == 0:
                    rep.warnings.append(f"hyperparameter {name!r} does not affect the kernel")
            elif not bool(torch.isfinite(g).all()):
                rep.reason = f"non-finite gradient wrt {name} {where}"
                return rep
        gx = grads[-1]
        if gx is not None and not bool(torch.isfinite(gx).all()):
            rep.reason = f"non-finite gradient wrt inputs {where}"
            return rep
    rep.ok = True
    rep.jitter_used = jit_used
    return rep


# --- functional deduplication ----------------------------------------------------------

DUPLICATE_TOL = 2e-2
"""Two kernels are duplicates if their fitted, normalised Gram matrices differ by at most this (max abs)."""


def kernel_fingerprint(
    spec: KernelSpec,
    X: Tensor,
    y: Tensor,
    *,
    probe: Tensor | None = None,
    n_restarts: int = 1,
    seed: int = 0,
) -> Tensor:
    """Normalised Gram matrix (`p x p`, unit diagonal) on ``probe`` (default ``X``) after fitting on (``X``, ``y``).

    Normalising by ``sqrt(k(x,x) k(x',x'))`` removes the signal variance, so ``c * k`` and
    ``k`` share a fingerprint.
    """
    gp = ExactGP(spec, n_restarts=n_restarts, seed=seed).fit(X, y)
    assert gp.params is not None
    P = torch.as_tensor(X if probe is None else probe, dtype=_DT)
    with torch.no_grad():
        K = spec.fn(P, P, gp.params.kernel).to(_DT)
        dg = torch.diagonal(K).clamp_min(1e-300).sqrt()
        return K / (dg.unsqueeze(-1) * dg.unsqueeze(0))


def are_duplicates(
    spec_a: KernelSpec,
    spec_b: KernelSpec,
    X: Tensor,
    y: Tensor,
    *,
    tol: float = DUPLICATE_TOL,
    **kw: Any,
) -> bool:
    """Whether two kernels are functionally the same on (``X``, ``y``): max |F_a - F_b| <= ``tol``."""
    fa = kernel_fingerprint(spec_a, X, y, **kw)
    fb = kernel_fingerprint(spec_b, X, y, **kw)
    return float((fa - fb).abs().max()) <= tol


class DedupReport(BaseModel):
    """Which proposals were functional duplicates of an earlier one."""

    model_config = ConfigDict(extra="forbid")

    n_proposals: int
    n_unique: int
    n_duplicates: int
    duplicate_of: list[int | None]
    """For each proposal, the index of the first equivalent earlier proposal, or None."""
    n_failed: int = 0
    """Proposals whose fit failed (kept as unique, never called duplicates)."""


def deduplicate(
    specs: Sequence[KernelSpec], X: Tensor, y: Tensor, *, tol: float = DUPLICATE_TOL, **kw: Any
) -> DedupReport:
    """Greedy functional dedup of ``specs`` in order, comparing against earlier unique ones."""
    reps: list[tuple[int, Tensor]] = []
    dup_of: list[int | None] = []
    failed = 0
    for i, s in enumerate(specs):
        try:
            f = kernel_fingerprint(s, X, y, **kw)
        except SolverError:
            failed += 1
            dup_of.append(None)
            continue
        match = next((j for j, fr in reps if float((f - fr).abs().max()) <= tol), None)
        dup_of.append(match)
        if match is None:
            reps.append((i, f))
    n_dup = sum(m is not None for m in dup_of)
    return DedupReport(
        n_proposals=len(specs),
        n_unique=len(specs) - n_dup,
        n_duplicates=n_dup,
        duplicate_of=dup_of,
        n_failed=failed,
    )
