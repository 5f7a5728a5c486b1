"""Time our ExactGP fit + LOO-CRPS against BoTorch SingleTaskGP + fit_gpytorch_mll (same process).

Usage: ``python benchmarks/gp_fit.py [--sizes 100 500 1000] [--d 20] [--threads 1] [--reps 1]``.
Both sides: RBF-ARD kernel with an outputscale, constant mean, Gaussian noise, one
L-BFGS-B start (ours: ``n_restarts=0``), float64, the same data (uniform inputs in
``[0,1]^d``, a smooth test function of the inputs plus noise std 0.1, standardised y).
Reported: median wall seconds of each side, the ratio ours/BoTorch (< 1 means ours is
faster), and both final NLLs per point (ours from our own objective; BoTorch's from
gpytorch's mll, which includes no priors here because we build the model without them).
"""

from __future__ import annotations

import argparse
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


def _ours(X: torch.Tensor, y: torch.Tensor) -> tuple[float, float, float]:
    from optiforge.solvers.gp import ExactGP, rbf

    t0 = time.perf_counter()
    gp = ExactGP(rbf(ard=True), n_restarts=0).fit(X, y)
    crps = gp.loo_crps()
    return time.perf_counter() - t0, gp.nll_, crps


def _botorch(X: torch.Tensor, y: torch.Tensor) -> tuple[float, float]:
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
    with torch.no_grad():
        nll = -float(mll(model(X), y))
    return dt, nll


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 500, 1000])
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--reps", type=int, default=1)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    with threadpool_limits(a.threads):
        _ours(*_data(20, a.d, 0))  # warm-up: imports, allocator
        _botorch(*_data(20, a.d, 0))
        print(f"d={a.d} threads={a.threads} reps={a.reps}")
        print(
            f"{'n':>6} {'ours_s':>9} {'botorch_s':>10} {'ratio':>7} {'ours_nll':>9} {'bt_nll':>9} {'loo_crps':>9}"
        )
        for n in a.sizes:
            ours, bt = [], []
            for r in range(a.reps):
                X, y = _data(n, a.d, r)
                # Interleave the two sides so load changes hit both.
                t, nll_o, crps = _ours(X, y)
                ours.append(t)
                t, nll_b = _botorch(X, y)
                bt.append(t)
            mo, mb = statistics.median(ours), statistics.median(bt)
            print(
                f"{n:>6} {mo:>9.2f} {mb:>10.2f} {mo / mb:>7.2f} {nll_o:>9.4f} {nll_b:>9.4f} {crps:>9.4f}"
            )


if __name__ == "__main__":
    main()
