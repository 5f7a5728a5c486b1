"""The contract between control problems and RL methods (what the ``rl`` suite, the
formulator and ``optiforge list`` call): a *problem* says which environment, which
constraints or objectives and what budget; a *method* trains a policy for it.

Problem kinds (``ControlProblem.kind``):

- ``cmdp``: maximize expected return subject to ``E[sum_t c_i(s_t, a_t)] <= limits[i]``
  for each constraint ``i`` (costs from ``envs``; LOCU, CPO, PCPO, Lagrangian PPO).
- ``statewise``: maximize expected return while every instantaneous cost stays below
  ``limits[i]`` along the whole trajectory with high probability (ASCPO; the expected-cost
  methods are its baselines).
- ``mo-offline``: from a fixed dataset of a behaviour policy on a multi-objective
  environment, maximize a (possibly nonlinear) ``objective`` of the return vector
  (AETDICE; linear scalarization and a Markov-policy baseline).

Methods see the problem and a seed; scoring (``evaluate``) runs the trained policy on
fresh episodes with seeds the method never drew.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from optiforge.solvers.train.api import HParam

Kind = Literal["cmdp", "statewise", "mo-offline"]
KINDS: tuple[Kind, ...] = ("cmdp", "statewise", "mo-offline")

__all__ = ["KINDS", "ControlProblem", "HParam", "Kind", "RLMethod", "RLResult", "evaluate"]


@dataclass(frozen=True)
class ControlProblem:
    name: str
    kind: Kind
    description: str
    """What is controlled and constrained, in words (what the formulator reads)."""
    env: str
    """``envs.make_env`` spec (online kinds) or the multi-objective environment's name."""
    limits: tuple[float, ...] = ()
    """Per constraint: the episode-cost budget (cmdp) or the instantaneous-cost bound
    (statewise)."""
    objective: str = ""
    """mo-offline: the scalarization of the return vector (e.g. ``linear:0.5,0.5``,
    ``min``, ``cvar:0.2``, ``fair``)."""
    budget: int = 20_000
    """Environment steps (online kinds) or gradient steps (offline)."""
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class RLResult:
    """A trained policy (anything with ``act(obs_tensor, deterministic)``, usually a
    ``core`` policy), the learning curve (one dict per iteration: ``step``, ``return``,
    ``cost_<i>``, ...) and anything the method measures (``extra``)."""

    policy: Any
    curve: list[dict[str, float]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RLMethod:
    name: str
    kinds: frozenset[Kind]
    description: str
    hparams: Mapping[str, HParam]
    run: Callable[..., RLResult]
    """``run(problem, seed, **hparams) -> RLResult``."""


def evaluate(problem: ControlProblem, policy: Any, episodes: int = 10, seed: int = 10_000,
             deterministic: bool = False) -> dict[str, Any]:  # fmt: skip
    """Run ``policy`` on ``episodes`` fresh episodes (seeds from ``seed``, which methods
    do not use) of an online problem: mean return, per constraint the mean episode cost,
    the mean maximum instantaneous cost and the share of episodes over the limit
    (``violation``: episode cost above the budget for cmdp, any instantaneous cost above
    the bound for statewise)."""
    import torch

    from optiforge.solvers.rl.envs import make_env

    if problem.kind == "mo-offline":
        raise ValueError("evaluate() scores online problems; mo-offline suites score objectives")
    env = make_env(problem.env)
    m = len(getattr(env, "cost_names", ()))
    rets, costs, maxes = [], [], []
    for k in range(episodes):
        o, _ = env.reset(seed=seed + k)
        ret, c, mx, done = 0.0, np.zeros(m), np.zeros(m), False
        while not done:
            with torch.no_grad():
                a = policy.act(torch.as_tensor(np.asarray(o, dtype=np.float32)), deterministic)
            a_np = a.numpy()
            o, r, term, trunc, info = env.step(a_np if a_np.ndim else int(a_np))
            step_c = np.asarray(info.get("costs_true", info["costs"]), dtype=np.float64)
            ret += float(r)
            c += step_c
            mx = np.maximum(mx, step_c)
            done = term or trunc
        rets.append(ret)
        costs.append(c)
        maxes.append(mx)
    env.close()
    lim = np.asarray(problem.limits, dtype=np.float64) if problem.limits else np.full(m, np.inf)
    over = np.asarray(costs) > lim if problem.kind == "cmdp" else np.asarray(maxes) > lim
    return {"return": float(np.mean(rets)), "cost": np.mean(costs, axis=0).tolist(),
            "max_cost": np.mean(maxes, axis=0).tolist(),
            "violation": over.any(axis=1).mean().item(), "episodes": episodes}  # fmt: skip
