"""iMuon's claims at CI size (``benchmarks/imuon_claims.py`` is the full-size run):

1. On low-rank matrix sensing (30 x 20, rank 3, 600 measurements), iMuon's convergence does
   not depend on how ``W`` is split into factors: from ``W0 = L R^T`` with the mixing of
   ``(L, R)`` conditioned 1 or 1000 it runs the same iterates and meets the bound
   (relative error < 1e-6 in 200 steps) on every seed. Muon on the factors meets the same
   bound from the balanced split but fails it from a 100-conditioned split at every step
   size of a grid (so the failure is the conditioning, not a bad step size).
2. Iterates stay on the manifold (tested in ``test_imuon.py`` too).
3. Subspace learning on Grassmann: top-5 PCA subspace of a 60 x 60 covariance, the largest
   principal angle < 1e-4 after 200 steps on every seed.
"""

from __future__ import annotations

import numpy as np
import pytest

from optiforge.solvers.train.imuon.problems import (  # fmt: skip
    make_pca,
    make_sensing,
    run_factor_muon,
    run_imuon,
    run_pca,
)

SEEDS = (0, 1, 2)
STEPS, BOUND = 200, 1e-6
GRID = [float(v) for v in np.geomspace(1e-3, 0.3, 9)]


@pytest.mark.slow
def test_imuon_rate_does_not_depend_on_factor_conditioning_and_factor_muon_fails() -> None:
    for seed in SEEDS:
        p = make_sensing(seed)
        runs = {}
        for kappa in (1.0, 1000.0):
            left, right = p.split(kappa, seed)
            runs[kappa] = run_imuon(p, 0.07, STEPS, w_init=left @ right.T)
            assert runs[kappa].errs[-1] < BOUND, (seed, kappa, runs[kappa].errs[-1])
        # the same iterates (the split never enters), to float precision
        assert np.allclose(np.log10(runs[1.0].errs[:100]), np.log10(runs[1000.0].errs[:100]), atol=1e-3)  # fmt: skip
        best = {k: min(run_factor_muon(p, lr, STEPS, kappa=k, split_seed=seed).errs[-1] for lr in GRID) for k in (1.0, 100.0)}  # fmt: skip
        assert best[1.0] < BOUND, (seed, best)  # naive Muon is fine on a balanced split ...
        assert best[100.0] > 1e3 * BOUND, (
            seed,
            best,
        )  # ... and fails the bound on an ill-conditioned one


def test_imuon_learns_the_pca_subspace_on_grassmann() -> None:
    for seed in SEEDS:
        pr = make_pca(seed)
        angles, x = run_pca(pr, 0.04, 200, method="imuon")
        assert angles[0] > 0.3 and angles[-1] < 1e-4, (seed, angles[0], angles[-1])
        assert float(np.abs(x.T.numpy() @ x.numpy() - np.eye(5)).max()) < 1e-10
