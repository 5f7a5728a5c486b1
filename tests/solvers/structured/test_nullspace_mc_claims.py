"""Claim tests for nullspace-perturbation matrix completion (issue 45, item 1).

1. The surrogate's solution is O(eps)-close to the truth: the log-log slope of the relative
   error against eps is ~1 (a bias-free surrogate would show slope 0, a sqrt bias 0.5).
2. In a coherent, low-sampling regime (30 x 30, rank 2, p = 0.4, row/column weights
   i^-1) the method (small-init factorized GD on the surrogate) succeeds on more seeds than
   plain factorized GD on the completion loss (exact rank, random init at the scale of M),
   paired by seed; the test fails for plain GD in the method's place.

What did NOT hold at this scale (see README / benchmarks/nullspace_mc_claims.py): the same
small-init GD with eps = 0 (no nullspace perturbation) succeeds just as often, so the gain
over plain GD is the small initialization's, not the perturbation's; and wider factors
(k > r) converge more slowly within the same step budget.
"""

from __future__ import annotations

import numpy as np
import pytest

from optiforge.solvers.structured.nullspace_mc import (
    complete,
    make_problem,
    plain_factorized_gd,
    rel_error,
)

SUCCESS = 2e-2


def test_error_scales_linearly_with_eps() -> None:
    epss = np.array([0.1, 0.03, 0.01, 0.003])
    slopes = []
    for seed in range(2):
        M, mask = make_problem(30, 30, 2, 0.5, seed=seed)
        errs = [
            rel_error(complete(M, mask, 2, eps=e, k=2, max_iter=4000, seed=seed).X, M) for e in epss
        ]
        slope = np.polyfit(np.log(epss), np.log(errs), 1)[0]
        slopes.append(slope)
        # O(eps): the error is a bounded multiple of eps
        assert max(np.array(errs) / epss) < 2.0
    assert all(0.8 < s < 1.2 for s in slopes), slopes


def _successes(method: str, seeds: range) -> list[bool]:
    out = []
    for seed in seeds:
        M, mask = make_problem(30, 30, 2, 0.4, coherence=1.0, seed=seed)
        if method == "nullspace":
            X = complete(M, mask, 2, k=2, eps=1e-3, max_iter=8000, seed=seed).X
        elif method == "eps0":
            X = complete(M, mask, 2, k=2, eps=0.0, max_iter=8000, seed=seed).X
        else:
            X = plain_factorized_gd(M, mask, 2, seed=seed, max_iter=8000).X
        out.append(rel_error(X, M) < SUCCESS)
    return out


@pytest.mark.slow
def test_coherent_low_sampling_method_beats_plain_gd() -> None:
    seeds = range(8)
    ours = _successes("nullspace", seeds)
    plain = _successes("plain", seeds)
    # paired: no seed where plain succeeds and ours fails, and ours wins on >= 3 seeds
    assert not any(p and not o for o, p in zip(ours, plain, strict=True))
    assert sum(ours) - sum(plain) >= 3, (ours, plain)
    assert sum(ours) >= 6
    # discriminates: plain GD in the method's place fails the same bar
    assert not sum(plain) >= 6


@pytest.mark.slow
def test_what_holds_the_gain_is_small_init_not_the_perturbation() -> None:
    # Recorded negative: the eps = 0 ablation (same small-init solver, no nullspace
    # perturbation) succeeds on the same seeds as the method at this scale.
    seeds = range(4)
    assert _successes("eps0", seeds) == _successes("nullspace", seeds)
