"""Unit tests of the Segre-manifold rank-one solvers (geometry, retractions, methods)."""

from __future__ import annotations

import numpy as np
import pytest

from optiforge.errors import SolverError
from optiforge.solvers.structured.segre import (
    RankOne,
    fit_linear_rate,
    fit_order,
    gaussian_measurements,
    hosvd_rank_one,
    perturb,
    random_rank_one,
    riemannian_gradient,
    solve_rank_one,
    spectral_init,
    tangent_basis,
    tangent_project,
)
from optiforge.solvers.structured.segre import _retract as retract

SHAPE = (5, 6, 4)


def _tangent(x: RankOne, rng: np.random.Generator) -> np.ndarray:
    return tangent_project(x, rng.standard_normal(x.shape))


def test_tangent_basis_is_orthonormal_with_the_segre_dimension() -> None:
    rng = np.random.default_rng(0)
    x = random_rank_one(SHAPE, 2.0, rng)
    b = tangent_basis(x)
    d = 1 + sum(n - 1 for n in SHAPE)
    assert b.shape == (int(np.prod(SHAPE)), d)
    np.testing.assert_allclose(b.T @ b, np.eye(d), atol=1e-12)
    # the tensor itself and the curves lam * (u1 + t v1) (x) ... are tangent
    assert np.allclose(b @ (b.T @ x.full().ravel()), x.full().ravel())


def test_tangent_projection_matches_basis_and_is_idempotent() -> None:
    rng = np.random.default_rng(1)
    x = random_rank_one(SHAPE, 1.5, rng)
    g = rng.standard_normal(SHAPE)
    p = tangent_project(x, g)
    b = tangent_basis(x)
    np.testing.assert_allclose(p.ravel(), b @ (b.T @ g.ravel()), atol=1e-12)
    np.testing.assert_allclose(tangent_project(x, p), p, atol=1e-12)
    # the residual is orthogonal to the tangent space
    assert abs(float(np.sum((g - p) * p))) < 1e-10


@pytest.mark.parametrize("how", ["hosvd", "factor"])
def test_retractions_are_first_order_and_feasible(how: str) -> None:
    rng = np.random.default_rng(2)
    x = random_rank_one(SHAPE, 1.0, rng)
    xi = _tangent(x, rng)
    xi /= np.linalg.norm(xi)
    r0 = retract(x, 0.0 * xi, how)  # type: ignore[arg-type]
    np.testing.assert_allclose(r0.full(), x.full(), atol=1e-12)
    gaps = []
    for t in (1e-1, 1e-2, 1e-3):
        r = retract(x, t * xi, how)  # type: ignore[arg-type]
        assert r.lam > 0
        for f in r.factors:
            assert abs(np.linalg.norm(f) - 1.0) < 1e-12
        gaps.append(np.linalg.norm(r.full() - x.full() - t * xi))
    # second-order agreement: the gap shrinks ~100x per 10x smaller step
    assert gaps[1] < gaps[0] / 30 and gaps[2] < gaps[1] / 30


def test_unknown_retraction_and_factor_retraction_leaving_the_manifold() -> None:
    rng = np.random.default_rng(3)
    x = random_rank_one(SHAPE, 1.0, rng)
    with pytest.raises(SolverError):
        retract(x, 0 * x.full(), "qr")  # type: ignore[arg-type]
    with pytest.raises(SolverError):
        retract(x, -2.0 * x.full(), "factor")


def test_hosvd_rank_one_recovers_a_rank_one_tensor_and_folds_the_sign() -> None:
    rng = np.random.default_rng(4)
    x = random_rank_one(SHAPE, 3.0, rng)
    y = hosvd_rank_one(-x.full())
    assert y.lam == pytest.approx(3.0)
    np.testing.assert_allclose(y.full(), -x.full(), atol=1e-12)
    with pytest.raises(SolverError):
        hosvd_rank_one(np.zeros(SHAPE))


def test_riemannian_gradient_matches_finite_differences_along_curves() -> None:
    rng = np.random.default_rng(5)
    x = random_rank_one(SHAPE, 1.0, rng)
    a, y = gaussian_measurements(x, 40, 0.1, rng)
    z = perturb(x, 0.2, rng)
    g = riemannian_gradient(z, y, a)
    xi = _tangent(z, rng)
    amat = a.reshape(40, -1)

    def f(w: RankOne) -> float:
        r = amat @ w.full().ravel() - y
        return 0.5 * float(r @ r)

    h = 1e-6
    fd = (f(retract(z, h * xi, "hosvd")) - f(retract(z, -h * xi, "hosvd"))) / (2 * h)
    assert fd == pytest.approx(float(np.sum(g * xi)), rel=1e-5)


def test_pca_cauchy_step_is_one_and_rgd_equals_rgn() -> None:
    rng = np.random.default_rng(6)
    x = random_rank_one(SHAPE, 4.0, rng)
    t = x.full() + 0.05 * rng.standard_normal(SHAPE)
    x0 = perturb(x, 0.3, rng)
    rgd = solve_rank_one(t, None, method="rgd", x0=x0, n_iter=5)
    rgn = solve_rank_one(t, None, method="rgn", x0=x0, n_iter=5)
    np.testing.assert_allclose(rgd.steps, 1.0, rtol=1e-10)
    np.testing.assert_allclose(rgd.losses, rgn.losses, rtol=1e-8)


@pytest.mark.parametrize("method", ["rgd", "rgn", "pgd", "als"])
def test_every_method_decreases_the_loss_and_stays_rank_one(method: str) -> None:
    rng = np.random.default_rng(7)
    x = random_rank_one(SHAPE, 1.0, rng)
    a, y = gaussian_measurements(x, 90, 1e-3, rng)
    res = solve_rank_one(y, a, method=method, x0=perturb(x, 0.3, rng), n_iter=40, truth=x)  # type: ignore[arg-type]
    assert res.losses[-1] < 0.05 * res.losses[0]
    assert res.errors[-1] < 0.05
    assert res.x.lam > 0 and all(abs(np.linalg.norm(f) - 1) < 1e-10 for f in res.x.factors)
    assert res.errors.shape == res.losses.shape == (41,)


def test_pca_als_is_tensorlys_parafac_and_exact_in_one_sweep_noise_free() -> None:
    rng = np.random.default_rng(8)
    x = random_rank_one(SHAPE, 2.0, rng)
    res = solve_rank_one(x.full(), None, method="als", x0=perturb(x, 0.3, rng), n_iter=3, truth=x)
    assert res.errors.shape == (4,)
    assert res.errors[0] > 0.03 and res.errors[1] < 1e-12


def test_factor_retraction_rgn_is_also_quadratic() -> None:
    rng = np.random.default_rng(9)
    x = random_rank_one(SHAPE, 1.0, rng)
    a, y = gaussian_measurements(x, 90, 0.0, rng)
    res = solve_rank_one(
        y, a, method="rgn", x0=perturb(x, 0.2, rng), n_iter=6, retraction="factor", truth=x
    )
    assert fit_order(res.errors, 1e-13, 0.5) > 1.6


def test_spectral_init_is_close_with_many_measurements() -> None:
    rng = np.random.default_rng(10)
    x = random_rank_one(SHAPE, 1.0, rng)
    a, y = gaussian_measurements(x, 2000, 0.0, rng)
    z = spectral_init(y, a)
    assert np.linalg.norm(z.full() - x.full()) < 0.5
    res = solve_rank_one(y, a, method="rgn", n_iter=8, truth=x)  # spectral start
    assert res.errors[-1] < 1e-10


def test_tol_stops_early() -> None:
    rng = np.random.default_rng(11)
    x = random_rank_one(SHAPE, 1.0, rng)
    a, y = gaussian_measurements(x, 90, 1e-2, rng)
    res = solve_rank_one(y, a, method="rgn", x0=perturb(x, 0.2, rng), n_iter=50, tol=1e-6)
    assert res.losses.shape[0] < 20


def test_rate_fits() -> None:
    e = np.asarray(0.5 * 0.6 ** np.arange(30), dtype=np.float64)
    assert fit_linear_rate(e, 1e-8, 1.0) == pytest.approx(0.6)
    assert fit_order(e, 1e-8, 1.0) == pytest.approx(1.0)
    q = np.array([0.1, 0.01, 1e-4, 1e-8])
    assert fit_order(q, 1e-12, 1.0) == pytest.approx(2.0)
    with pytest.raises(SolverError):
        fit_linear_rate(e, 0.4, 0.45)
    with pytest.raises(SolverError):
        fit_order(q, 0.05, 1.0)


def test_bad_inputs_raise_solver_error() -> None:
    rng = np.random.default_rng(12)
    x = random_rank_one(SHAPE, 1.0, rng)
    a, y = gaussian_measurements(x, 30, 0.0, rng)
    with pytest.raises(SolverError):
        solve_rank_one(y[:-1], a)
    with pytest.raises(SolverError):
        solve_rank_one(y, a[:, 0, 0, :])  # a vector per sample: not a tensor problem
    with pytest.raises(SolverError):
        solve_rank_one(np.ones(5), None)
    with pytest.raises(SolverError):
        solve_rank_one(y, a, method="newton")  # type: ignore[arg-type]
    with pytest.raises(SolverError):
        solve_rank_one(y, a, step=-1.0)
    with pytest.raises(SolverError):
        solve_rank_one(y, a, x0=random_rank_one((3, 3, 3), 1.0, rng))
    with pytest.raises(SolverError):
        solve_rank_one(y, a, n_iter=-1)
    with pytest.raises(SolverError):
        random_rank_one((1, 3), 1.0, rng)
    y2 = y.copy()
    y2[0] = np.nan
    with pytest.raises(SolverError):
        solve_rank_one(y2, a)
