"""CPO, PCPO and Lagrangian PPO: their small subproblems against cvxpy, the shared loop's
contract, the multipliers and the statewise mapping."""

from __future__ import annotations

import math

import cvxpy as cp
import numpy as np
import pytest
import torch

from optiforge.errors import ConfigError
from optiforge.solvers.rl import baselines as bl
from optiforge.solvers.rl import catalogue
from optiforge.solvers.rl.api import ControlProblem


def _spd(n: int, rng: np.random.Generator) -> np.ndarray:
    a = rng.normal(size=(n, n))
    return a @ a.T + 0.5 * np.eye(n)


def _cvx_cpo(H: np.ndarray, g: np.ndarray, B: np.ndarray, c: np.ndarray, delta: float
             ) -> np.ndarray | None:  # fmt: skip
    x = cp.Variable(g.shape[0])
    prob = cp.Problem(cp.Maximize(g @ x),
                      [B @ x + c <= 0, 0.5 * cp.quad_form(x, cp.psd_wrap(H)) <= delta])  # fmt: skip
    prob.solve()
    return None if prob.status not in ("optimal", "optimal_inaccurate") else np.asarray(x.value)


def _analytic(H: np.ndarray, g: np.ndarray, b: np.ndarray, c: float, delta: float
              ) -> tuple[np.ndarray, str]:  # fmt: skip
    Hi = np.linalg.inv(H)
    v, w = Hi @ g, Hi @ b
    lam, nu, case = bl.cpo_step(g @ v, g @ w, b @ w, c, delta)
    x = -nu * w if case == "recovery" else (v - nu * w) / lam
    return x, case


@pytest.mark.parametrize("c", [-3.0, -0.4, 0.0, 0.3, 1.0])
def test_cpo_single_constraint_closed_form_equals_cvxpy(c: float) -> None:
    rng = np.random.default_rng(int(10 * c) + 50)
    for _ in range(5):
        n, delta = 6, 0.05
        H, g, b = _spd(n, rng), rng.normal(size=n), rng.normal(size=n)
        x, case = _analytic(H, g, b, c, delta)
        want = _cvx_cpo(H, g, b[None], np.array([c]), delta)
        if case == "recovery":  # the linearized set misses the trust region
            assert want is None
            # the step of the trust region that lowers b^T x most
            xr = cp.Variable(n)
            cp.Problem(
                cp.Minimize(b @ xr), [0.5 * cp.quad_form(xr, cp.psd_wrap(H)) <= delta]
            ).solve()
            np.testing.assert_allclose(x, xr.value, atol=1e-4)
            continue
        assert want is not None
        np.testing.assert_allclose(x, want, atol=2e-4 * max(1.0, float(np.abs(want).max())))
        assert b @ x + c <= 1e-6 and 0.5 * x @ H @ x <= delta * (1 + 1e-6)


def test_cpo_cases_are_the_ones_the_paper_names() -> None:
    q, s, delta = 2.0, 1.0, 0.05
    assert bl.cpo_step(q, 0.3, s, -5.0, delta)[2] == "trpo"  # constraint far away
    assert bl.cpo_step(q, 0.3, s, 5.0, delta)[2] == "recovery"  # infeasible
    assert bl.cpo_step(q, 0.3, s, 0.1, delta)[2] == "dual"
    assert bl.cpo_step(q, 0.3, 0.0, 1.0, delta)[2] == "trpo"  # b = 0


def test_cpo_several_constraints_dual_equals_cvxpy() -> None:
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(12):
        n, m, delta = 7, 3, 0.05
        H, g, B = _spd(n, rng), rng.normal(size=n), rng.normal(size=(m, n))
        c = rng.normal(scale=0.4, size=m)
        Hi = np.linalg.inv(H)
        v, W = Hi @ g, Hi @ B.T
        lam, nu, case = bl.cpo_step_multi(g @ v, B @ v, B @ W, c, delta)
        want = _cvx_cpo(H, g, B, c, delta)
        if case == "recovery":
            assert want is None
            continue
        assert want is not None
        x = (v - W @ nu) / lam
        np.testing.assert_allclose(x, want, atol=5e-4 * max(1.0, float(np.abs(want).max())))
        checked += 1
    assert checked >= 4


def test_nonneg_qp_and_pcpo_projection_land_on_the_constraints() -> None:
    rng = np.random.default_rng(5)
    n = 6
    for m in (1, 2, 3):
        H = _spd(n, rng)
        Hi = np.linalg.inv(H)
        B = rng.normal(size=(m, n))
        x_half = rng.normal(size=n)
        c = -(B @ x_half) + rng.uniform(0.2, 1.0, size=m)  # every constraint violated
        mu = bl.pcpo_project(x_half, B @ Hi @ B.T, B @ x_half, c)
        x = x_half - Hi @ B.T @ mu
        xv = cp.Variable(n)
        d = xv - x_half
        cp.Problem(cp.Minimize(cp.quad_form(d, cp.psd_wrap(H))), [B @ xv + c <= 0]).solve()
        np.testing.assert_allclose(x, xv.value, atol=1e-4)
        assert np.all(B @ x + c <= 1e-8)
        if m == 1:  # the paper's formula, and the projection is onto the boundary
            s = float(B[0] @ Hi @ B[0])
            assert mu[0] == pytest.approx((B[0] @ x_half + c[0]) / s)
            assert float(B[0] @ x + c[0]) == pytest.approx(0.0, abs=1e-9)
    # already feasible: no projection
    assert bl.nonneg_qp(np.eye(2), np.array([-1.0, -2.0])).tolist() == [0.0, 0.0]


def test_catalogue_names_the_three_methods() -> None:
    for name, want in (("cpo", bl.CPO), ("pcpo", bl.PCPO), ("ppo-lag", bl.PPO_LAG)):
        m = catalogue.get(name)
        assert m is want and m.name == name and m.kinds == {"cmdp", "statewise"}
        assert {"delta", "gamma", "lam", "steps_per_iter", "critic"} <= set(m.hparams)
    assert {"lr", "lambda_lr"} <= set(bl.PPO_LAG.hparams)


@pytest.mark.parametrize("method", [bl.CPO, bl.PCPO, bl.PPO_LAG, bl.TRPO, bl.PPO])
def test_tiny_run_finishes_and_logs_the_curve(method: bl.RLMethod) -> None:
    p = ControlProblem("t", "cmdp", "d", "point-hazards:horizon=50", limits=(0.5, 0.5), budget=300)
    res = method.run(p, seed=1, steps_per_iter=100, critic_iters=5, eval_episodes=2)
    assert len(res.curve) == 3
    row = res.curve[-1]
    assert {"step", "return", "cost_0", "cost_1", "max_cost_0", "max_cost_1", "kl"} <= set(row)
    assert row["step"] == 300 and all(math.isfinite(v) for v in row.values())
    assert set(res.extra["eval"]) >= {"return", "cost", "violation"}
    a = res.policy.act(torch.zeros(14), True)
    assert a.shape == (2,)


def test_critic_kinds_by_name_or_index_and_bad_hparams() -> None:
    assert bl.LoopConfig.from_hparams(critic=3.0).critic == "shared"
    assert bl.LoopConfig.from_hparams(critic="linear", steps_per_iter=100.0).steps_per_iter == 100
    with pytest.raises(ConfigError, match="critic kind"):
        bl.LoopConfig.from_hparams(critic="rnn")
    with pytest.raises(ConfigError, match="unknown hyperparameters"):
        bl.LoopConfig.from_hparams(deltaa=0.1)
    p = ControlProblem("t", "cmdp", "d", "point-hazards:horizon=20", limits=(1.0,), budget=40)
    with pytest.raises(ConfigError, match="1 limits for 2 costs"):
        bl.CPO.run(p, 0, steps_per_iter=40)


def test_statewise_limits_map_to_episode_budgets() -> None:
    p = ControlProblem("s", "statewise", "d", "point-hazards", limits=(0.5, 0.5))
    assert bl.constraint_budgets(p, 2).tolist() == [0.5, 0.5]
    p2 = ControlProblem("s", "statewise", "d", "point-hazards", limits=(0.5, 0.5),
                        options={"episode_limits": (3.0, 4.0)})  # fmt: skip
    assert bl.constraint_budgets(p2, 2).tolist() == [3.0, 4.0]
    small = ControlProblem("s", "statewise", "d", "point-hazards:horizon=20", limits=(0.5, 0.5),
                           options={"episode_limits": (3.0, 4.0)}, budget=40)  # fmt: skip
    res = bl.CPO.run(small, 0, steps_per_iter=40, critic_iters=2)
    assert res.extra["limits"] == [3.0, 4.0] and "max_cost_1" in res.curve[0]
    mo = ControlProblem("o", "mo-offline", "d", "dst")
    with pytest.raises(ConfigError):
        bl.constraint_budgets(mo, 2)


def test_lagrange_multiplier_rises_while_violated_and_stays_zero_when_slack() -> None:
    # Student-t cost noise makes every episode's cost positive: a zero budget is violated
    env = "point-hazards:horizon=50,groups=1,cost_noise=0.5"
    tight = ControlProblem("t", "cmdp", "d", env, limits=(0.0,), budget=400)
    res = bl.PPO_LAG.run(tight, seed=0, steps_per_iter=100, critic_iters=5, lambda_lr=0.1)
    lam = [r["lambda_0"] for r in res.curve]
    assert lam[0] > 0 and all(b > a for a, b in zip(lam, lam[1:], strict=False))
    # each rise is lambda_lr times the violation J_C - d
    assert lam[1] - lam[0] == pytest.approx(0.1 * res.curve[1]["cost_0"], rel=1e-4)
    slack = ControlProblem("s", "cmdp", "d", env, limits=(1e6,), budget=200)
    res = bl.PPO_LAG.run(slack, seed=0, steps_per_iter=100, critic_iters=5)
    assert all(r["lambda_0"] == 0.0 for r in res.curve)


def test_line_search_rejects_a_step_that_leaves_the_trust_region() -> None:
    p = ControlProblem("t", "cmdp", "d", "point-hazards:horizon=50", limits=(0.5, 0.5), budget=100)
    loop = bl.OnPolicyLoop(p, 0, bl.LoopConfig(steps_per_iter=100, critic_iters=5))
    ro = bl.core.collect(loop.env, loop.policy, 100, loop.gen, 2)
    ctx = loop.context(0, ro)
    huge = 1e3 * torch.ones_like(ctx.x0)
    info = bl.backtracking_line_search(ctx, huge, {"check_reward": False, "cost_slack": None})
    assert info["accepted"] == 0.0 and torch.equal(bl.core.flat_params(loop.policy), ctx.x0)
    # the TRPO direction is accepted and its KL is near delta
    x, inf = bl.trpo_direction(ctx)
    out = bl.backtracking_line_search(ctx, x, {**inf, "check_reward": False})
    assert out["accepted"] == 1.0 and 0 < ctx.kl() <= 1.5 * ctx.delta
    assert ctx.B.shape == (2, ctx.x0.numel()) and ctx.g.shape == ctx.x0.shape


def test_context_products_stay_at_the_pre_update_parameters() -> None:
    p = ControlProblem("t", "cmdp", "d", "point-hazards:horizon=50", limits=(0.5, 0.5), budget=100)
    loop = bl.OnPolicyLoop(p, 0, bl.LoopConfig(steps_per_iter=100, critic_iters=5))
    ctx = loop.context(0, bl.core.collect(loop.env, loop.policy, 100, loop.gen, 2))
    v = torch.randn_like(ctx.x0)
    f0 = ctx.fvp(v)
    moved = ctx.x0 + 0.05 * torch.randn_like(ctx.x0)
    ctx.set_params(moved)
    torch.testing.assert_close(ctx.fvp(v), f0)
    g = ctx.g  # computed lazily after the move: still the gradient at x0
    assert torch.equal(bl.core.flat_params(loop.policy), moved)
    ctx.set_params(ctx.x0)
    want = bl.core.flat_grad(ctx.surrogates()[0], loop.policy)
    torch.testing.assert_close(g, want)
