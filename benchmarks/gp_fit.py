"""Time our ExactGP fit + LOO-CRPS against BoTorch SingleTaskGP + fit_gpytorch_mll (same process).

Usage (timings to report: through ``/work/wt/exclusive`` or on a quiet machine)::

    python benchmarks/gp_fit.py [--sizes 100 300 800 1000 2000] [--d 25] [--threads 1]
        [--reps 1] [--dense-max-n N] [--no-dense]

Both sides: RBF-ARD kernel with an outputscale, constant mean, Gaussian noise, one
L-BFGS-B start (ours: ``n_restarts=0``), float64, the same data (uniform inputs in
``[0,1]^d``, a smooth test function of the inputs plus noise std 0.1, standardised y).
BoTorch runs with its defaults: above 800 points GPyTorch's fit uses CG and stochastic
Lanczos quadrature instead of Cholesky.

Reported per n: median wall seconds of our fit (the default path: dense below
``DENSE_MAX_N`` points, subset of data + full-data refinement above; the mode is printed),
of BoTorch's fit, their ratio (< 1: ours is faster), and both sides' **exact** negative
log marginal likelihood per point at their fitted hyperparameters (BoTorch's evaluated
with Cholesky whatever n, so the two are comparable: "the same likelihood" means
``ours_nll <= bt_nll`` up to noise). Where the subset path ran, our dense fit is timed too
and the approximation's error against it is printed: the NLL-per-point gap and the
predictive mean / variance differences at 500 new points (``dmu``: max |mean difference|
in units of y's standard deviation; ``dvar``: max |log variance ratio|).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
import warnings

import torch
from threadpoolctl import threadpool_limits


def _data(n: int, d: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    X = torch.rand(n, d, generator=g, dtype=torch.float64)
    f = torch.sin(3 * X[:, 0]) + X[:, 1] * X[:, 2] + 0.5 * torch.cos(2 * X[:, 3:].sum(1))
    y = f + 0.1 * torch.randn(n, generator=g, dtype=torch.float64)
    return X, (y - y.mean()) / y.std()


def _ours(X: torch.Tensor, y: torch.Tensor, dense_max_n: int | None) -> tuple[float, object]:
    from optiforge.solvers.gp import ExactGP, rbf

    t0 = time.perf_counter()
    gp = ExactGP(rbf(ard=True), n_restarts=0, dense_max_n=dense_max_n).fit(X, y)
    gp.loo_crps()
    return time.perf_counter() - t0, gp


def _botorch(X: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
    import gpytorch
    from botorch.fit import fit_gpytorch_mll
    from botorch.models import SingleTaskGP
    from gpytorch.kernels import RBFKernel, ScaleKernel
    from gpytorch.likelihoods import GaussianLikelihood
    from gpytorch.mlls import ExactMarginalLogLikelihood

    t0 = time.perf_counter()
    model = SingleTaskGP(
        X,
        y.unsqueeze(-1),
        likelihood=GaussianLikelihood(),
        covar_module=ScaleKernel(RBFKernel(ard_num_dims=X.shape[1])),
        outcome_transform=None,
    )
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_gpytorch_mll(mll)
    dt = time.perf_counter() - t0
    model.train()
    # exact (Cholesky) whatever n: comparable with ours
    with torch.no_grad(), gpytorch.settings.max_cholesky_size(10**9):
        nll = -float(mll(model(X), y))
    return dt, nll


def _vs_dense(sub: object, dense: object, d: int) -> tuple[float, float]:
    """Max |mean difference| (y sd units; y is standardised) and max |log var ratio| at
    500 new uniform points."""
    Xs = torch.rand(500, d, generator=torch.Generator().manual_seed(123), dtype=torch.float64)
    m1, v1 = sub.predict(Xs)  # type: ignore[attr-defined]
    m2, v2 = dense.predict(Xs)  # type: ignore[attr-defined]
    return float((m1 - m2).abs().max()), float((v1 / v2).log().abs().max())


def main() -> None:
    from optiforge.solvers.gp.exact import DENSE_MAX_N

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 300, 800, 1000, 2000])
    ap.add_argument("--d", type=int, default=25)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument(
        "--dense-max-n",
        type=int,
        default=DENSE_MAX_N,
        help=f"our subset-of-data threshold (default {DENSE_MAX_N}; 0: always dense)",
    )
    ap.add_argument("--no-dense", action="store_true", help="skip the dense reference fit")
    a = ap.parse_args()
    thr = a.dense_max_n or None
    torch.set_num_threads(a.threads)
    with threadpool_limits(a.threads):
        _ours(*_data(20, a.d, 0), thr)  # warm-up: imports, allocator
        _botorch(*_data(20, a.d, 0))
        print(
            f"d={a.d} threads={a.threads} reps={a.reps} dense_max_n={thr} "
            f"load average {os.getloadavg()}"
        )
        print(
            "| n | ours s | mode | BoTorch s | ours/BoTorch | ours NLL/pt | BoTorch NLL/pt "
            "| dense s | dense/BoTorch | dense NLL/pt | ours-dense NLL/pt | dmu | dvar |"
        )
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for n in a.sizes:
            ours, bt, dense = [], [], []
            cells: dict[str, str] = {}
            for r in range(a.reps):
                X, y = _data(n, a.d, r)
                # Interleave the sides so load changes hit all alike.
                t, gp = _ours(X, y, thr)
                ours.append(t)
                t, nll_b = _botorch(X, y)
                bt.append(t)
                nll_o = gp.nll_  # type: ignore[attr-defined]
                mode = gp.fit_mode_  # type: ignore[attr-defined]
                if mode != "dense" and not a.no_dense:
                    t, gd = _ours(X, y, None)
                    dense.append(t)
                    dmu, dvar = _vs_dense(gp, gd, a.d)
                    cells = {
                        "nll_d": f"{gd.nll_:.4f}",  # type: ignore[attr-defined]
                        "gap": f"{nll_o - gd.nll_:+.4f}",  # type: ignore[attr-defined]
                        "dmu": f"{dmu:.3f}",
                        "dvar": f"{dvar:.3f}",
                    }
            mo, mb = statistics.median(ours), statistics.median(bt)
            md = statistics.median(dense) if dense else math.nan
            print(
                f"| {n} | {mo:.2f} | {mode} | {mb:.2f} | {mo / mb:.2f} | {nll_o:.4f} "
                f"| {nll_b:.4f} | "
                + (f"{md:.2f} | {md / mb:.2f} | " if dense else "- | - | ")
                + " | ".join(cells.get(k, "-") for k in ("nll_d", "gap", "dmu", "dvar"))
                + " |",
                flush=True,
            )
        print(f"load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
