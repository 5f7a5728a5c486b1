"""LOCU's direction computation on explicit Fisher matrices: Löwdin basis, screening,
compression, the active-set and Pareto solves (checked against cvxpy), and the full step
against the full-space trust-region problem."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
import torch

from optiforge.solvers.rl.locu import (
    LocuConfig,
    fisher_gram,
    gram_schmidt,
    locu_direction,
    lowdin,
    min_norm_polyhedron,
    natural_directions,
    pareto_direction,
    screen,
    solve_active_set,
)


def _spd(n: int, rng: np.random.Generator, cond: float = 20.0) -> torch.Tensor:
    u, _ = np.linalg.qr(rng.normal(size=(n, n)))
    ev = np.geomspace(1.0, cond, n)
    return torch.as_tensor(u @ np.diag(ev) @ u.T)


def _fvp(f: torch.Tensor):  # type: ignore[no-untyped-def]
    return lambda v: f @ v.double()


def test_lowdin_basis_is_fisher_orthonormal_and_closest() -> None:
    rng = np.random.default_rng(0)
    f = _spd(12, rng)
    d = torch.as_tensor(rng.normal(size=(4, 12)))
    gram = fisher_gram(_fvp(f), d)
    b = lowdin(d, gram, collinear_tol=1e-6)
    assert b.q.shape == (12, 4) and b.kept_eig.all()
    assert torch.allclose(b.q.T @ f @ b.q, torch.eye(4, dtype=torch.float64), atol=1e-9)
    assert torch.allclose(b.w.T @ f @ b.w, torch.eye(4, dtype=torch.float64), atol=1e-9)
    dhat = d / torch.sqrt(torch.diag(d @ f @ d.T))[:, None]

    def dist(w: torch.Tensor) -> float:
        e = w - dhat.T
        return float(torch.einsum("ni,nm,mi->", e, f, e))

    # Löwdin's theorem: the F-orthonormal set closest to dhat; Gram-Schmidt's is farther
    gs = gram_schmidt(d, gram, 1e-6)
    assert dist(b.w) < dist(gs) - 1e-6
    for _ in range(20):
        rot, _ = np.linalg.qr(rng.normal(size=(4, 4)))
        assert dist(b.w) <= dist(b.w @ torch.as_tensor(rot)) + 1e-9


def test_lowdin_is_symmetric_in_the_order_gram_schmidt_is_not() -> None:
    rng = np.random.default_rng(1)
    f = _spd(10, rng)
    base = rng.normal(size=(3, 10))
    # directions 1 and 2 nearly collinear (Fisher cosine ~0.999): compression merges them
    d = torch.as_tensor(np.stack([base[0], base[1], base[1] + 0.03 * base[2]]))
    perm = [0, 2, 1]
    gram, gram_p = fisher_gram(_fvp(f), d), fisher_gram(_fvp(f), d[perm])
    b, bp = lowdin(d, gram), lowdin(d[perm], gram_p)
    assert b.q.shape[1] == 2 and int((~b.kept_eig).sum()) == 1
    proj = b.q @ b.q.T @ f
    assert torch.allclose(proj, bp.q @ bp.q.T @ f, atol=1e-9)
    assert torch.allclose(b.w[:, perm], bp.w, atol=1e-9)
    # the merged direction (sum of the normalized pair) lies in the kept span
    dh = d / torch.sqrt(torch.diag(d @ f @ d.T))[:, None]
    merged, diff = dh[1] + dh[2], dh[1] - dh[2]

    def fnorm(v: torch.Tensor) -> float:
        return float(torch.sqrt(v @ f @ v))

    assert fnorm(proj @ merged - merged) < 0.01 * fnorm(merged)
    assert fnorm(proj @ diff - diff) > 0.3 * fnorm(diff)  # their difference is not kept
    # Gram-Schmidt keeps whichever of the pair comes first: order-dependent span
    g1, g2 = gram_schmidt(d, gram), gram_schmidt(d[perm], gram_p)
    assert g1.shape[1] == g2.shape[1] == 2
    assert not torch.allclose(g1 @ g1.T @ f, g2 @ g2.T @ f, atol=1e-3)


def test_screening_drops_only_constraints_no_trust_region_step_can_reach() -> None:
    rng = np.random.default_rng(2)
    n, delta = 8, 0.01
    f = _spd(n, rng)
    b = torch.as_tensor(rng.normal(size=(3, n)))
    d = natural_directions(_fvp(f), b, cg_iters=40)
    fn = np.sqrt(np.diag(fisher_gram(_fvp(f), d)))
    reach = np.sqrt(2 * delta) * fn
    margins = np.array([2.5 * reach[0], 1.5 * reach[1], -0.1])
    keep = screen(margins, fn, delta, screen_factor=2.0)
    assert keep.tolist() == [False, True, True]
    # the bound is attained: the largest linear change in the trust region is reach
    chol = torch.linalg.cholesky(f)
    for _ in range(200):
        u = torch.as_tensor(rng.normal(size=n))
        x = torch.linalg.solve(chol.T, u / u.norm()) * np.sqrt(2 * delta)
        assert float(x @ f @ x) <= 2 * delta + 1e-9
        assert float(b[0] @ x) <= reach[0] + 1e-9
    xstar = d[0] * np.sqrt(2 * delta) / fn[0]
    assert float(b[0] @ xstar) == pytest.approx(reach[0], rel=1e-6)


def _cvx_reduced(g: np.ndarray, a: np.ndarray, h: np.ndarray, r2: float) -> np.ndarray | None:
    z = cp.Variable(g.shape[0])
    prob = cp.Problem(cp.Maximize(g @ z), [cp.sum_squares(z) <= r2, a @ z <= h])
    prob.solve(solver=cp.CLARABEL)
    return None if prob.status in ("infeasible", "infeasible_inaccurate") else z.value


def test_active_set_solve_matches_cvxpy() -> None:
    rng = np.random.default_rng(3)
    n_inf = 0
    for trial in range(60):
        r, p = int(rng.integers(1, 5)), int(rng.integers(1, 6))
        g, a = rng.normal(size=r), rng.normal(size=(p, r))
        h = rng.normal(size=p) * 0.3 + (0.1 if trial % 2 else -0.05)
        r2 = 0.2
        ours, ref = solve_active_set(g, a, h, r2), _cvx_reduced(g, a, h, r2)
        if ref is None:
            n_inf += 1
            assert ours is None
            continue
        assert ours is not None, trial
        assert float(g @ ours) == pytest.approx(float(g @ ref), abs=1e-5)
        assert np.all(a @ ours <= h + 1e-7) and float(ours @ ours) <= r2 + 1e-9
        # the maximizer is unique (linear objective on a strictly convex set)
        assert np.allclose(ours, ref, atol=2e-3)
    assert 0 < n_inf < 60  # both cases exercised


def test_min_norm_polyhedron_matches_cvxpy() -> None:
    rng = np.random.default_rng(4)
    for _ in range(40):
        r, p = int(rng.integers(1, 5)), int(rng.integers(1, 6))
        a, e = rng.normal(size=(p, r)), rng.normal(size=p)
        z = cp.Variable(r)
        prob = cp.Problem(cp.Minimize(cp.sum_squares(z)), [a @ z <= e])
        prob.solve(solver=cp.CLARABEL)
        ours = min_norm_polyhedron(a, e)
        if prob.status.startswith("infeasible"):
            assert ours is None
        else:
            assert ours is not None and np.allclose(ours, z.value, atol=1e-5)


def test_pareto_direction_reduces_violated_and_keeps_satisfied() -> None:
    rng = np.random.default_rng(5)
    seen_kept = seen_released = 0
    for _ in range(100):
        r, p = int(rng.integers(2, 5)), int(rng.integers(2, 6))
        a = rng.normal(size=(p, r))
        h = rng.normal(size=p)
        if not (h < 0).any():
            h[0] = -0.5
        z, kept = pareto_direction(a, h, 0.02)
        viol = h < 0
        if z is None:
            continue
        assert float(z @ z) <= 0.02 + 1e-9
        assert np.all(a[viol] @ z < 0)  # every violated constraint decreases
        if kept:
            seen_kept += 1
            assert np.all(a[~viol] @ z <= 1e-9)  # no satisfied one increases
        else:
            seen_released += 1
        # never past the point that makes every violated one feasible (first order)
        assert (a[viol] @ z - h[viol]).max() >= -1e-9
    assert seen_kept > 20 and seen_released > 0


def _full_space(g, b, h, f, delta):  # type: ignore[no-untyped-def]
    x = cp.Variable(g.shape[0])
    prob = cp.Problem(cp.Maximize(g @ x), [0.5 * cp.quad_form(x, f) <= delta, b @ x <= h])
    prob.solve(solver=cp.CLARABEL)
    return x.value


@pytest.mark.parametrize("seed", [6, 7])
def test_locu_step_equals_the_full_trust_region_solution(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, m, delta = 15, 3, 0.02
    f = _spd(n, rng, cond=5.0)
    g, b = torch.as_tensor(rng.normal(size=n)), torch.as_tensor(rng.normal(size=(m, n)))
    h = np.array([0.02, 0.05, 0.01])  # all satisfied, all close enough to bind
    cfg = LocuConfig(delta=delta, cg_iters=60, collinear_tol=1e-8, screen_factor=1e9)
    d = locu_direction(g, b, h, _fvp(f), cfg)
    ref = _full_space(g.numpy(), b.numpy(), h, f.numpy(), delta)
    assert d.mode == "optimize" and d.r == m + 1
    assert np.allclose(d.x.numpy(), ref, atol=1e-4)
    # the same step whatever the order of the constraints
    perm = [2, 0, 1]
    dp = locu_direction(g, b[perm], h[perm], _fvp(f), cfg)
    assert torch.allclose(d.x, dp.x, atol=1e-8)
    assert np.allclose(d.pred_costs[perm], dp.pred_costs, atol=1e-8)


def test_locu_recovers_from_an_infeasible_start() -> None:
    rng = np.random.default_rng(8)
    n, delta = 12, 0.01
    f = _spd(n, rng, cond=5.0)
    g = torch.as_tensor(rng.normal(size=n))
    b = torch.as_tensor(rng.normal(size=(3, n)))
    h = np.array([-5.0, -3.0, 0.05])  # two far over their limits: no step reaches them
    d = locu_direction(g, b, h, _fvp(f), LocuConfig(delta=delta, cg_iters=40))
    assert d.mode == "recover"
    assert d.pred_costs[0] < 0 and d.pred_costs[1] < 0
    assert d.released or d.pred_costs[2] <= 1e-9
    assert 0.5 * float(d.x @ f @ d.x) <= delta * (1 + 1e-6)
    # the ablation moves along the summed descent, which may raise a satisfied cost
    ab = locu_direction(g, b, h, _fvp(f), LocuConfig(delta=delta, cg_iters=40, pareto=False))
    assert ab.mode == "recover"


def test_screened_constraint_leaves_the_step_unchanged() -> None:
    rng = np.random.default_rng(9)
    n, delta = 10, 0.01
    f = _spd(n, rng, cond=5.0)
    g, b = torch.as_tensor(rng.normal(size=n)), torch.as_tensor(rng.normal(size=(2, n)))
    cfg = LocuConfig(delta=delta, cg_iters=40)
    with_far = locu_direction(g, b, np.array([0.01, 50.0]), _fvp(f), cfg)
    alone = locu_direction(g, b[:1], np.array([0.01]), _fvp(f), cfg)
    assert with_far.kept == [0]
    assert torch.allclose(with_far.x, alone.x, atol=1e-10)


def test_locu_runs_through_the_catalogue_with_every_critic_kind() -> None:
    from optiforge.solvers.rl import catalogue, core
    from optiforge.solvers.rl.api import ControlProblem

    method = catalogue.get("locu")
    assert method.name == "locu" and method.kinds == frozenset({"cmdp"})
    prob = ControlProblem("t", "cmdp", "", "point-hazards:groups=2,horizon=50", (0.5, 0.5),
                          budget=400)  # fmt: skip
    for kind in core.CRITIC_KINDS:
        res = method.run(prob, seed=0, steps_per_iter=200, critic=kind, critic_iters=5)
        assert len(res.curve) == 2
        row = res.curve[-1]
        assert {"mode", "r", "kept", "accepted", "cost_0", "cost_1"} <= set(row)
        assert row["kl"] <= 1.5 * 0.01 + 1e-9
        assert all(np.isfinite(p.detach()).all() for p in res.policy.parameters())


def test_zero_gradient_constraints_are_set_aside() -> None:
    rng = np.random.default_rng(10)
    n = 8
    f = _spd(n, rng, cond=5.0)
    g = torch.as_tensor(rng.normal(size=n))
    b = torch.as_tensor(rng.normal(size=(3, n)))
    b[1] = 0.0  # never incurred cost in the batch: no step changes it to first order
    b[2] = 0.0
    d = locu_direction(g, b, np.array([0.01, 0.5, -0.3]), _fvp(f), LocuConfig(cg_iters=40))
    assert d.kept == [0]  # satisfied one screened, violated one set aside
    assert d.mode == "optimize" and d.pred_costs[1] == d.pred_costs[2] == 0.0
    # nothing left to move along: a zero step, flagged
    none = locu_direction(torch.zeros(n, dtype=torch.float64), b[1:], np.array([0.5, -0.3]),
                          _fvp(f), LocuConfig(cg_iters=40))  # fmt: skip
    assert none.mode == "stuck" and float(none.x.abs().max()) == 0.0
