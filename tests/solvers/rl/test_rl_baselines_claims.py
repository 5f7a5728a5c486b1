"""The baselines' own claim at CI size: with a tight episode-cost budget on a point robot
whose straight path to the goal crosses a hazard, CPO, PCPO and Lagrangian PPO each end
nearer the budget than their unconstrained twins (TRPO, PPO: the same code with the
constraint dropped), on every one of 3 paired seeds, with a mean final cost at most
three times the budget; the twins fail that claim."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from optiforge.solvers.rl import baselines as bl
from optiforge.solvers.rl.api import ControlProblem

# layout_seed=5 puts both hazards on the line from start to goal
ENV = "point-hazards:groups=1,horizon=50,layout_seed=5"
LIMIT = 0.5
PROBLEM = ControlProblem("hazard", "cmdp", "reach the goal, rarely touch a hazard", ENV,
                         limits=(LIMIT,), budget=6000)  # fmt: skip
SEEDS = (0, 1, 2)


def _final_costs(method: bl.RLMethod) -> np.ndarray:
    """Per seed: the mean episode cost over the last 3 iterations (1500 steps)."""
    torch.set_num_threads(1)
    out = []
    for s in SEEDS:
        res = method.run(PROBLEM, seed=s, steps_per_iter=500, critic_iters=40)
        out.append(np.mean([row["cost_0"] for row in res.curve[-3:]]))
    return np.asarray(out)


def _claim(costs: np.ndarray, twin: np.ndarray) -> bool:
    """Nearer the budget than the twin on every paired seed, mean cost <= 3 x budget."""
    nearer = np.abs(costs - LIMIT) < np.abs(twin - LIMIT)
    return bool(nearer.all() and costs.mean() <= 3 * LIMIT)


@pytest.mark.slow
def test_cpo_and_pcpo_end_nearer_the_budget_than_trpo() -> None:
    trpo = _final_costs(bl.TRPO)
    cpo, pcpo = _final_costs(bl.CPO), _final_costs(bl.PCPO)
    msg = f"trpo {trpo} cpo {cpo} pcpo {pcpo}"
    assert _claim(cpo, trpo), msg
    assert _claim(pcpo, trpo), msg
    # the weaker method: TRPO (the constraint dropped) fails the same claim
    assert not _claim(trpo, trpo) and trpo.mean() > 3 * LIMIT, msg


@pytest.mark.slow
def test_lagrangian_ppo_ends_nearer_the_budget_than_ppo() -> None:
    ppo, lag = _final_costs(bl.PPO), _final_costs(bl.PPO_LAG)
    msg = f"ppo {ppo} ppo-lag {lag}"
    assert _claim(lag, ppo), msg
    assert not _claim(ppo, ppo) and ppo.mean() > 3 * LIMIT, msg
