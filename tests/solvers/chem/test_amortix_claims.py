"""AMORTIX claim tests (CI-sized; the full comparison is ``benchmarks/amortix_claims.py``).

1. Group-normalized (GRPO-style) training is stable where plain policy gradient is not: on
   the QED objective, the same model, samples, optimizer and learning rate, 3 seeds; GRPO
   reaches a high held-out greedy reward on every seed with a small spread across seeds;
   plain REINFORCE (raw reward) fails the same check (lower, widely spread).
2. At zero inference-time oracle calls, the trained model's held-out decorations are at
   least as good as the graph GA's best after ``GA_BUDGET`` oracle calls per scaffold; an
   untrained model (same architecture, same zero calls) is not.
"""

import numpy as np
import pytest
import torch

pytest.importorskip("rdkit")

from optiforge.solvers.chem import GraphTransformerPolicy, Oracle, decode, graph_ga, train  # noqa: E402
from optiforge.solvers.chem.molecules import load_scaffolds  # noqa: E402

SEEDS = (0, 1, 2)
OBJECTIVE = "qed"
CONFIG = dict(steps=60, batch_scaffolds=6, group=8, lr=3e-3)
GA_BUDGET = 5  # measured: GA 0.770 at 5 calls, 0.823 at 10 (mean of 3 seeds, held-out QED)
FLOOR = 0.78  # every seed's held-out greedy QED must reach this
MAX_SPREAD = 0.03  # and the seeds' standard deviation stay below this


def heldout_reward(policy: GraphTransformerPolicy) -> float:
    held = load_scaffolds("heldout")
    oracle = Oracle(OBJECTIVE)
    return float(np.mean([oracle(s, c) for s, c in zip(held, decode(policy, held), strict=True)]))


def trained(method: str, seed: int) -> GraphTransformerPolicy:
    torch.manual_seed(seed)
    pol = GraphTransformerPolicy(d_model=32, n_layers=2)
    train(pol, load_scaffolds("train"), Oracle(OBJECTIVE), method=method, seed=seed, **CONFIG)  # type: ignore[arg-type]
    return pol


def stable(rewards: list[float]) -> bool:
    return min(rewards) >= FLOOR and float(np.std(rewards, ddof=1)) <= MAX_SPREAD


@pytest.fixture(scope="module")
def results() -> dict[str, list[float]]:
    torch.set_num_threads(1)
    return {m: [heldout_reward(trained(m, s)) for s in SEEDS] for m in ("grpo", "reinforce")}


@pytest.mark.slow
def test_group_normalized_training_is_stable_where_plain_pg_is_not(
    results: dict[str, list[float]],
) -> None:
    grpo, pg = results["grpo"], results["reinforce"]
    assert stable(grpo), grpo
    assert not stable(pg), pg  # the weaker method fails the same check
    assert all(g >= p for g, p in zip(grpo, pg, strict=True)), (grpo, pg)


@pytest.mark.slow
def test_zero_call_amortized_model_matches_the_ga_budget_on_heldout(
    results: dict[str, list[float]],
) -> None:
    held = load_scaffolds("heldout")
    ga = np.mean(
        [
            np.mean(
                [graph_ga(s, Oracle(OBJECTIVE), budget=GA_BUDGET, seed=k).best_value for s in held]
            )
            for k in SEEDS
        ]
    )
    assert min(results["grpo"]) >= ga, (results["grpo"], ga)
    torch.manual_seed(0)
    untrained = heldout_reward(GraphTransformerPolicy(d_model=32, n_layers=2))
    assert untrained < ga, (untrained, ga)  # no training, same zero calls: fails
