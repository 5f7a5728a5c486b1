"""The random exploration step for d-stationarity around DCA and the prox-linear method."""

from __future__ import annotations

import numpy as np
import pytest

from optiforge.errors import SolverError
from optiforge.solvers.structured.dstationarity import (
    DCA,
    Polyhedron,
    ProxLinear,
    RandomExploration,
    kinked_composite_instance,
    random_dc_instance,
    stalled_dc_instance,
    trapped_dc_instance,
)

TOL = 1e-6  # certificate tolerance: d-stationary when min F'(x; d) >= -TOL


def _fd_min(value, x, cons, rng, n_dirs=400, t=1e-7):
    """Smallest one-sided difference quotient over random feasible unit directions."""
    best = np.inf
    for _ in range(n_dirs):
        d = cons.project_to_cone(rng.standard_normal(x.size), x, 1e-6)
        if np.linalg.norm(d) < 1e-12:
            continue
        d /= np.max(np.abs(d))  # |d|_inf = 1, the certificate's normalization
        if cons.max_step(x, d, 1e-6) < t:
            continue
        best = min(best, (value(x + t * d) - value(x)) / t)
    return best


# ------------------------------------------------------------------------------ unit tests


def test_polyhedron_box_cone_projection_and_steps():
    box = Polyhedron.box(3, -1.0, 1.0)
    x = np.array([1.0, 0.0, -1.0])
    assert set(box.active(x, 1e-9)) == {0, 5}
    z = np.array([2.0, 1.0, -3.0])
    d = box.project_to_cone(z, x, 1e-9)
    np.testing.assert_allclose(d, [0.0, 1.0, 0.0], atol=1e-12)
    # Moreau: z - d lies in the normal cone and is orthogonal to d
    assert abs((z - d) @ d) < 1e-12
    assert box.max_step(x, np.array([0.0, 1.0, 0.0])) == pytest.approx(1.0)
    assert box.max_step(x, np.array([1.0, 0.0, 0.0])) == 0.0
    assert box.max_step(np.zeros(3), np.array([0.0, 0.0, 0.0])) == np.inf
    # a row within tol of active counts as active
    near = np.array([1.0 - 1e-9, 0.0, 0.0])
    assert box.max_step(near, np.array([1.0, 0.0, 0.0]), tol=1e-6) == 0.0


def test_dc_subgradient_rules_and_certificate_against_finite_differences():
    p, xs = stalled_dc_instance(n=5, pieces=3, seed=1)
    assert set(p.active_pieces(xs)) == {0, 1, 2}
    np.testing.assert_allclose(p.subgradient_h(xs, "first"), p.A[0])
    np.testing.assert_allclose(p.subgradient_h(xs, "average"), p.A[:3].mean(axis=0))
    cert = p.min_directional_derivative(xs)
    fd = _fd_min(p.value, xs, p.constraints, np.random.default_rng(0))
    assert cert < -0.1
    assert fd >= cert - 1e-4  # the LP is a lower bound on every direction
    assert fd <= 0.3 * cert  # and random directions come close to it
    # at a generic point (one active piece, interior) the certificate is -|grad|_1
    q = random_dc_instance(n=4, seed=2)
    x = np.zeros(4)
    i = q.active_pieces(x)
    assert i.size == 1
    g = q.Q @ x + q.q - q.A[i[0]]
    assert q.min_directional_derivative(x) == pytest.approx(-np.abs(g).sum(), rel=1e-8)


def test_dca_decreases_monotonically_and_reaches_d_stationarity_on_generic_problems():
    for seed in range(3):
        p = random_dc_instance(n=6, seed=seed)
        run = DCA(p).run(np.random.default_rng(seed).uniform(-1, 1, 6))
        assert np.all(np.diff(run.values) <= 1e-9)
        assert p.min_directional_derivative(run.x) >= -TOL
        assert np.all(p.constraints.slack(run.x) >= -1e-7)


def test_kinked_composite_jacobian_rules_and_certificate():
    p, x0, u = kinked_composite_instance(n=5, m=12, seed=0)
    kink_row = p.B[0]
    J_first = p.jacobian(x0, "first")
    J_avg = p.jacobian(x0, "average")
    np.testing.assert_allclose(J_first[-1], kink_row[0])
    np.testing.assert_allclose(J_avg[-1], 0.0, atol=1e-12)  # the tie's barycentre
    # at the ground truth (on the kink's tie set) F'(x; d) < 0 along w, and the LP bounds
    # every finite difference from below
    cert = p.min_directional_derivative(u)
    fd = _fd_min(p.value, u, p.constraints, np.random.default_rng(1))
    assert cert < -1.0
    assert fd >= cert - 1e-3
    # off the tie set, at a zero of the kinked row and of the smooth rows: d-stationary
    w = kink_row[1] / np.linalg.norm(kink_row[1])
    x_good = u + 0.5 * w
    assert p.value(x_good) == pytest.approx(0.0, abs=1e-9)
    assert p.min_directional_derivative(x_good) >= -TOL


def test_prox_linear_converges_from_a_generic_start():
    p, x0, u = kinked_composite_instance(n=6, m=15, seed=3)
    w = p.B[0][1] / np.linalg.norm(p.B[0][1])
    run = ProxLinear(p).run(x0 + 0.3 * w)
    assert run.values[-1] < 1e-8
    assert np.all(np.diff(run.values) <= 1e-8)
    assert run.iterations <= 10
    assert p.min_directional_derivative(run.x) >= -TOL


def test_exploration_options_are_checked_and_directions_are_feasible():
    p, xs = stalled_dc_instance(seed=0)
    with pytest.raises(SolverError):
        RandomExploration(DCA(p), step_range=(0.0, 1.0))
    for direction in ("cone", "sparse-cone"):
        ex = RandomExploration(DCA(p), direction=direction, seed=0)
        for _ in range(50):
            d = ex.sample_direction(xs)
            if d is None:  # a sparse draw on the active coordinate alone projects to 0
                continue
            assert np.linalg.norm(d) == pytest.approx(1.0)
            assert d[0] <= 1e-12  # x*_0 sits at its upper bound
    # the same seed gives the same run
    a = RandomExploration(DCA(p, rule="average"), seed=4).run(xs)
    b = RandomExploration(DCA(p, rule="average"), seed=4).run(xs)
    np.testing.assert_array_equal(a.x, b.x)


def test_exploration_at_a_d_stationary_point_leaves_the_base_run_alone():
    p = random_dc_instance(n=6, seed=5)
    x0 = np.random.default_rng(5).uniform(-1, 1, 6)
    base = DCA(p).run(x0)
    wrapped = RandomExploration(DCA(p), trials=32, step_range=(1e-4, 1e-2), seed=0).run(x0)
    assert wrapped.accepted == 0
    assert wrapped.rounds == 1
    assert wrapped.exploration_evals == 32
    assert wrapped.exploration_trials == 32
    assert wrapped.base_iterations == base.iterations
    np.testing.assert_array_equal(wrapped.x, base.x)


# ------------------------------------------------------------------------------ claim tests


@pytest.mark.parametrize("direction", ["cone", "sphere"])
def test_claim_dca_with_the_barycentre_rule_stalls_and_the_wrapped_method_leaves(direction):
    """DCA (barycentre subgradient at ties) stops at a critical, not d-stationary point on
    every seed; the wrapped method ends d-stationary and lower; DCA's own other rule is
    not the point (the wrapper works whatever the base's rule); a wrapper with no trials
    (the base alone) fails the check."""
    for seed in range(5):
        p, xs = stalled_dc_instance(n=6, pieces=4, seed=seed)
        base = DCA(p, rule="average").run(xs)
        assert base.iterations == 1
        np.testing.assert_allclose(base.x, xs, atol=1e-6)
        assert p.min_directional_derivative(base.x) < -0.1  # base fails the check
        wrapped = RandomExploration(DCA(p, rule="average"), direction=direction, seed=seed).run(xs)
        assert wrapped.accepted >= 1
        assert wrapped.exploration_evals <= wrapped.exploration_trials
        assert p.min_directional_derivative(wrapped.x) >= -TOL  # wrapped passes
        assert p.value(wrapped.x) < p.value(base.x) - 0.1
        assert np.all(p.constraints.slack(wrapped.x) >= -1e-7)
        broken = RandomExploration(DCA(p, rule="average"), trials=0, seed=seed).run(xs)
        assert p.min_directional_derivative(broken.x) < -0.1


def test_claim_dca_falls_into_a_non_d_stationary_vertex_from_random_starts():
    """On the trapped instance DCA with either tie rule, from uniform random starts, ends at
    the vertex v* (critical, not d-stationary); the wrapped method with cone directions and
    enough trials (1024: v*'s descent cone is narrow) passes the check from every start;
    uniform-sphere directions (the feasible cone is 2^-n of the sphere) never leave."""
    for seed in range(3):
        p, v = trapped_dc_instance(n=8, seed=seed)
        rng = np.random.default_rng(100 + seed)
        for k in range(3):
            x0 = rng.uniform(-1.0, 1.0, 8)
            for rule in ("first", "average"):
                base = DCA(p, rule=rule).run(x0)
                np.testing.assert_allclose(base.x, v, atol=1e-7)
                assert p.min_directional_derivative(base.x) < -0.2  # base fails the check
            wrapped = RandomExploration(DCA(p), trials=1024, seed=k).run(x0)
            assert p.min_directional_derivative(wrapped.x) >= -TOL  # wrapped passes
            assert p.value(wrapped.x) < p.value(v) - 0.3
            sphere = RandomExploration(DCA(p), trials=256, direction="sphere", seed=k).run(x0)
            assert sphere.accepted == 0
            assert p.min_directional_derivative(sphere.x) < -0.2


def test_claim_sparse_cone_directions_escape_the_narrow_vertex_cone_in_higher_dimension():
    """At n = 16 the dense cone sampler with 256 trials a round almost never hits the trap's
    narrow descent cone; sparse cone directions escape from every start."""
    dense_ok = sparse_ok = 0
    for seed in range(3):
        p, _ = trapped_dc_instance(n=16, seed=seed)
        x0 = np.random.default_rng(200 + seed).uniform(-1.0, 1.0, 16)
        assert p.min_directional_derivative(DCA(p).run(x0).x) < -0.2
        dense = RandomExploration(DCA(p), trials=256, seed=seed).run(x0)
        sparse = RandomExploration(DCA(p), trials=256, direction="sparse-cone", seed=seed).run(x0)
        dense_ok += p.min_directional_derivative(dense.x) >= -TOL
        sparse_ok += p.min_directional_derivative(sparse.x) >= -TOL
    assert dense_ok == 0
    assert sparse_ok == 3


def test_claim_prox_linear_at_a_kink_stalls_and_the_wrapped_method_leaves():
    """The prox-linear method (barycentre Jacobian row at the kink) started on the kink's
    tie set solves the smooth part and stays on the kink: critical, not d-stationary. The
    wrapped method leaves and reaches the global minimum 0."""
    for seed in range(4):
        p, x0, _ = kinked_composite_instance(n=6, m=15, seed=seed)
        base = ProxLinear(p, rule="average").run(x0)
        assert p.min_directional_derivative(base.x) < -1.0  # base fails the check
        assert p.value(base.x) > 1.0
        wrapped = RandomExploration(ProxLinear(p, rule="average"), seed=seed).run(x0)
        assert wrapped.accepted >= 1
        assert p.min_directional_derivative(wrapped.x) >= -TOL  # wrapped passes
        assert p.value(wrapped.x) < 1e-8
        broken = RandomExploration(ProxLinear(p, rule="average"), trials=0, seed=seed).run(x0)
        assert p.min_directional_derivative(broken.x) < -1.0


def test_claim_the_base_rate_is_kept_where_the_base_works():
    """Where the base method already ends d-stationary, the wrapped run's base trajectory
    is the base run's (same iterates, same iteration count), it ends no higher, and the
    exploration costs one round of function evaluations per restart."""
    for seed in range(4):
        p = random_dc_instance(n=8, pieces=8, seed=seed)
        x0 = np.random.default_rng(seed).uniform(-1, 1, 8)
        base = DCA(p).run(x0)
        wrapped = RandomExploration(DCA(p), trials=32, seed=seed).run(x0)
        np.testing.assert_array_equal(wrapped.values[: len(base.values)], base.values)
        assert p.value(wrapped.x) <= p.value(base.x) + 1e-9
        assert wrapped.exploration_evals <= 32 * wrapped.rounds
        if wrapped.accepted == 0:
            assert wrapped.base_iterations == base.iterations
        q, x1, _ = kinked_composite_instance(n=6, m=15, seed=seed)
        w = q.B[0][1] / np.linalg.norm(q.B[0][1])
        base_pl = ProxLinear(q).run(x1 + 0.3 * w)
        wrapped_pl = RandomExploration(ProxLinear(q), trials=32, seed=seed).run(x1 + 0.3 * w)
        assert wrapped_pl.accepted == 0
        assert wrapped_pl.base_iterations == base_pl.iterations
        assert q.value(wrapped_pl.x) == q.value(base_pl.x)
