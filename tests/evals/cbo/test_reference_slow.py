"""Known-graph CBO reaches each dev task's true optimum within its budget (seed 0).

Budget and settings: ``reference_config(task)``, the task's own ``n_trials`` (30; 50 for
complete_graph) and ``budget_cost``, with the exploratory stuck rule (EI over
``best - 1 sd`` after 3 stale acquisitions). Measured over seeds 0-2 with
``python -m optiforge.evals.suites.cbo.reference dev 3``: 21/21 within tolerance (plain
EI with 30 trials: 18/21, complete_graph 1/3 and synthetic2 2/3).
"""

from __future__ import annotations

import pytest

from optiforge.evals.suites.cbo import SPLIT_NAMES, CBOBenchmark
from optiforge.evals.suites.cbo.reference import reference_config, trials_to_tolerance
from optiforge.solvers.cbo import run_cbo


@pytest.mark.slow
@pytest.mark.parametrize("name", SPLIT_NAMES["dev"])
def test_known_graph_cbo_reaches_dev_optimum(name: str) -> None:
    task = next(t for t in CBOBenchmark().tasks("dev") if t.name == name)
    trace = run_cbo(
        task.scm, exploration_sets=task.exploration_sets, config=reference_config(task), seed=0
    )
    score = task.evaluate(trace)
    assert score.passed, score.details
    assert score.metrics["within_tolerance"] == 1.0, (score.value, task.true_optimum.value)
    assert trials_to_tolerance(trace, task.true_optimum.value, task.tolerance) is not None


def test_complete_graph_has_its_own_budget() -> None:
    tasks = {t.name: t for t in CBOBenchmark().tasks("dev")}
    assert tasks["complete_graph"].n_trials == 50 and tasks["toy_graph"].n_trials == 30
    # The cost budget scales with it: 50 x the mean set cost (1, 1, 1, 2, 2, 2).
    assert tasks["complete_graph"].budget_cost == pytest.approx(50 * 1.5)
    assert all(t.n_trials == 12 for t in CBOBenchmark(n_trials=12).tasks("dev"))
