"""Unit tests for optiforge/solvers/structured/nullspace_mc.py."""

from __future__ import annotations

import numpy as np
import pytest

from optiforge.errors import InvalidTask
from optiforge.solvers.structured.nullspace_mc import (
    build_surrogate,
    complete,
    make_problem,
    plain_factorized_gd,
    rel_error,
    spectral_scale,
)


def test_surrogate_agrees_on_observed_and_perturbs_nullspace_at_eps() -> None:
    M, mask = make_problem(12, 10, 2, 0.5, seed=1)
    eps = 1e-2
    sur = build_surrogate(M, mask, 2, eps=eps, rng=np.random.default_rng(0))
    n_obs = int(mask.sum())
    assert sur.A.shape == (n_obs + 2 * 22, 120)
    omega = mask.ravel()
    # observed block is an isometry
    Ao = sur.A[:, omega]
    np.testing.assert_allclose(Ao.T @ Ao, np.eye(n_obs), atol=1e-10)
    # y only depends on observed entries: changing unobserved values leaves it unchanged
    M2 = np.where(mask, M, 123.0)
    sur2 = build_surrogate(M2, mask, 2, eps=eps, rng=np.random.default_rng(0))
    np.testing.assert_allclose(sur.y, sur2.y)
    # the truth's residual is the eps-level nullspace term, linear in eps
    r1 = sur.residual(M)
    sur3 = build_surrogate(M, mask, 2, eps=eps / 10, rng=np.random.default_rng(0))
    assert r1 > 0
    assert sur3.residual(M) == pytest.approx(r1 / 10, rel=1e-8)
    assert r1 < 3 * eps * np.linalg.norm(np.where(mask, 0.0, M))
    # Gram form is consistent
    np.testing.assert_allclose(sur.Q, sur.A.T @ sur.A)


def test_eps_zero_surrogate_is_the_completion_loss() -> None:
    M, mask = make_problem(8, 9, 1, 0.6, seed=2)
    sur = build_surrogate(M, mask, 1, eps=0.0)
    X = np.random.default_rng(3).standard_normal(M.shape)
    assert sur.residual(X) == pytest.approx(float(np.linalg.norm(np.where(mask, X - M, 0.0))))


def test_complete_recovers_easy_instance() -> None:
    M, mask = make_problem(20, 20, 2, 0.6, seed=0)
    res = complete(M, mask, 2, max_iter=4000, seed=0)
    assert res.U.shape[0] == 20 and res.X.shape == (20, 20)
    assert rel_error(res.X, M) < 1e-2


def test_plain_gd_recovers_easy_instance() -> None:
    M, mask = make_problem(20, 20, 2, 0.6, seed=0)
    assert rel_error(plain_factorized_gd(M, mask, 2, seed=0).X, M) < 1e-4


def test_spectral_scale_estimates_norm() -> None:
    M, mask = make_problem(40, 40, 2, 0.5, seed=0)
    s = spectral_scale(M, mask)
    assert 0.5 < s / np.linalg.norm(M, 2) < 2.0


def test_errors() -> None:
    M, mask = make_problem(5, 5, 1, 0.5, seed=0)
    with pytest.raises(InvalidTask):
        build_surrogate(M, mask[:4], 1)
    with pytest.raises(InvalidTask):
        build_surrogate(M, np.zeros_like(mask), 1)
    with pytest.raises(InvalidTask):
        build_surrogate(M, mask, 1, eps=-1.0)
    with pytest.raises(InvalidTask):
        build_surrogate(M, mask, 1, m=1)
