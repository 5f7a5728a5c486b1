"""The rl foundation: cost conventions of the environments, rollouts, GAE, the Fisher
product and conjugate gradient."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from optiforge.errors import ConfigError
from optiforge.solvers.rl import core
from optiforge.solvers.rl.api import ControlProblem, evaluate
from optiforge.solvers.rl.envs import VELOCITY_LIMITS, PointHazards, make_env


def test_velocity_cost_is_safety_gymnasium_indicator() -> None:
    env = make_env("HalfCheetah-v5+velocity")
    assert env.cost_names == ("velocity",)
    env.reset(seed=0)
    seen = []
    for _ in range(50):
        _, _, _, _, info = env.step(env.action_space.sample())
        want = float(abs(info["x_velocity"]) > VELOCITY_LIMITS["HalfCheetah"])
        assert info["costs"].tolist() == [want] and info["cost"] == want
        seen.append(want)
    env.close()


def test_position_cost_stacks_after_velocity() -> None:
    env = make_env("Hopper-v5+velocity:0.1+position:0.05")
    assert env.cost_names == ("velocity", "position")
    env.reset(seed=1)
    for _ in range(30):
        _, _, term, _, info = env.step(env.action_space.sample())
        assert info["costs"][1] == float(abs(info["x_position"]) > 0.05)
        assert info["cost"] == pytest.approx(info["costs"].sum())
        if term:
            break


def test_point_hazards_costs_are_contacts_and_noise_is_separate() -> None:
    env = PointHazards(groups=2, corridor=0.3, cost_noise=0.5)
    assert env.cost_names == ("hazard0", "hazard1", "corridor")
    o, _ = env.reset(seed=3)
    assert o.shape == env.observation_space.shape
    for _ in range(40):
        _, _, _, _, info = env.step(np.array([1.0, 0.0]))
        true = info["costs_true"]
        assert set(np.unique(true)) <= {0.0, 1.0}
        assert (info["costs"] >= 0).all()
    # a point placed on a hazard centre costs 1 in that group
    env.reset(seed=0)
    env.state[:2] = env.hazards[1][0]
    env.state[2:] = 0
    env.cost_noise = 0.0
    _, _, _, _, info = env.step(np.zeros(2))
    assert info["costs"][1] == 1.0


@pytest.mark.parametrize(
    ("spec", "msg"),
    [("CartPole-v1", "names no constraint"), ("HalfCheetah-v5+speed", "unknown cost"),
     ("point-hazards:groups", "key=value"), ("point-hazards:colour=2", "point-hazards"),
     ("NoSuchEnv-v0+velocity", "unknown environment")],
)  # fmt: skip
def test_make_env_errors_name_the_problem(spec: str, msg: str) -> None:
    with pytest.raises(ConfigError, match=msg):
        make_env(spec)


def test_collect_and_gae() -> None:
    env = make_env("point-hazards:groups=2,horizon=20")
    torch.manual_seed(0)
    pol = core.make_policy(env)
    ro = core.collect(env, pol, 50, np.random.default_rng(0))
    assert ro.obs.shape == (50, env.observation_space.shape[0]) and ro.costs.shape == (50, 2)
    assert len(ro.episodes) == 2 and all(e.length == 20 for e in ro.episodes)
    assert ro.last[19] == 1 and ro.last[49] == 1 and ro.last[18] == 0
    first = ro.episodes[0]
    assert first.cost == pytest.approx(ro.costs[:20].sum(0).double().numpy(), abs=1e-5)
    # GAE with lambda = 1 and zero values is the discounted reward-to-go within an episode
    z = torch.zeros(50)
    adv, _ = core.gae(ro.rew, z, z, ro.last, ro.terminal, gamma=0.9, lam=1.0)
    want = sum(0.9**k * float(ro.rew[k]) for k in range(20))
    assert float(adv[0]) == pytest.approx(want, rel=1e-5)
    assert float(adv[19]) == pytest.approx(float(ro.rew[19]), rel=1e-5)


def test_fisher_product_and_conjugate_gradient() -> None:
    torch.manual_seed(0)
    pol = core.GaussianPolicy(4, 2, (8,))
    obs = torch.randn(64, 4)
    fvp = core.fisher_vector_product(pol, obs, damping=1e-3)
    n = core.flat_params(pol).numel()
    u, v = torch.randn(n), torch.randn(n)
    assert float(u @ fvp(v)) == pytest.approx(float(v @ fvp(u)), rel=1e-4)  # symmetric
    assert float(v @ fvp(v)) > 0
    x = core.conjugate_gradient(fvp, v, iters=200, tol=1e-14)
    assert torch.allclose(fvp(x), v, atol=1e-3 * float(v.norm()))


def test_critic_kinds_and_evaluate() -> None:
    for kind in core.CRITIC_KINDS:
        c = core.make_critic(kind, 5, 3)
        assert core.critic_values(c, torch.randn(7, 5)).shape == (7, 3)
    with pytest.raises(ConfigError, match="critic kind"):
        core.make_critic("transformer", 5, 3)
    p = ControlProblem("t", "cmdp", "d", "point-hazards:horizon=30", limits=(5.0, 5.0))
    env = make_env(p.env)
    out = evaluate(p, core.make_policy(env), episodes=3)
    assert set(out) >= {"return", "cost", "max_cost", "violation"} and len(out["cost"]) == 2
