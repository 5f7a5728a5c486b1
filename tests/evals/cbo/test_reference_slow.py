"""Known-graph CBO reaches each dev task's true optimum within its budget (seed 0).

Budget: the task's ``n_trials`` (30) interventions and ``budget_cost``. Measured over seeds
0-2 (see the report of the CBO back end): toy_graph, psa, epidemiology, independent,
graph4nodes 3/3; synthetic2 2/3 (3/3 with 50 trials); complete_graph 1/3 (2/3 with 50
trials; seed 0 settles in the local optimum D ~ -2.9 of cos D - D/5 at B = -5, value
-2.15 against -3.44), hence the xfail below.
"""

from __future__ import annotations

import pytest

from optiforge.evals.suites.cbo import SPLIT_NAMES, CBOBenchmark
from optiforge.evals.suites.cbo.reference import trials_to_tolerance
from optiforge.solvers.cbo import CBOConfig, run_cbo

KNOWN_MISSES = {
    "complete_graph": "seed 0 stops in a local optimum (-2.15 vs -3.44) within 30 and 50 trials",
}

CASES = [
    pytest.param(n, marks=pytest.mark.xfail(reason=KNOWN_MISSES[n], strict=False))
    if n in KNOWN_MISSES
    else n
    for n in SPLIT_NAMES["dev"]
]


@pytest.mark.slow
@pytest.mark.parametrize("name", CASES)
def test_known_graph_cbo_reaches_dev_optimum(name: str) -> None:
    task = next(t for t in CBOBenchmark().tasks("dev") if t.name == name)
    cfg = CBOConfig(n_trials=task.n_trials, budget_cost=task.budget_cost)
    trace = run_cbo(task.scm, exploration_sets=task.exploration_sets, config=cfg, seed=0)
    score = task.evaluate(trace)
    assert score.passed, score.details
    assert score.metrics["within_tolerance"] == 1.0, (score.value, task.true_optimum.value)
    assert trials_to_tolerance(trace, task.true_optimum.value, task.tolerance) is not None
