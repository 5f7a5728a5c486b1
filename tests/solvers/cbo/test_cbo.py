"""Known-graph CBO, plain BO and the ground-truth optimiser."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from optiforge.errors import BudgetExceeded, ConfigError
from optiforge.solvers.cbo import SCM, CBOConfig, run_bo, run_cbo, true_optimum

FAST = CBOConfig(n_trials=20, n_obs=150, grid_1d=101, eval_n_mc=2000)


def test_true_optimum_matches_direct_minimisation() -> None:
    from optiforge.evals.suites.cbo.scms import independent

    scm = independent().scm
    gt = true_optimum(scm, [("X",), ("Z",), ("X", "Z")], n_mc=2000, grid_2d=31)

    # Noise is additive with mean zero, so E[Y|do(X, Z)] is the noise-free function.
    def f(v: np.ndarray) -> float:
        x, z = v
        return -2 * np.exp(-((x - 1) ** 2) - (z - 1) ** 2) - np.exp(-((x + 1) ** 2) - z**2)

    ref = minimize(f, [0.9, 0.9], bounds=[(-2, 2), (-2, 2)])
    assert gt.exploration_set == ["X", "Z"]
    assert abs(gt.x["X"] - ref.x[0]) < 0.05 and abs(gt.x["Z"] - ref.x[1]) < 0.05
    assert abs(gt.value - ref.fun) < 4 / np.sqrt(2000)  # MC error of the noise mean


def test_known_graph_cbo_reaches_toy_graph_optimum(toy: SCM) -> None:
    trace = run_cbo(toy, config=FAST, seed=0)
    y_star = -2.17  # toy_graph optimum, see suite ground_truth.json (about -2.16..-2.18)
    tol = 0.14  # 5% of the range of E[Y|do] over the exploration sets
    assert trace.exploration_sets == [["X"], ["Z"]]
    assert len(trace.trials) == 20
    assert trace.best_true - y_star <= tol
    costs = [t.cumulative_cost for t in trace.trials]
    assert np.all(np.diff(costs) > 0) and costs[-1] == pytest.approx(20.0)
    # The trace's true values are the MC value of its incumbent, not a noisy sample.
    last = trace.trials[-1]
    xs = np.array([[last.best_x[v] for v in last.best_set]])
    assert toy.expected_outcome_batch(last.best_set, xs, 2000, 12345)[0] == pytest.approx(
        last.best_true
    )


def test_cost_budget_and_plain_bo(toy: SCM) -> None:
    cfg = FAST.model_copy(update={"n_trials": None, "budget_cost": 7.5})
    trace = run_bo(toy, config=cfg, seed=1)
    assert len(trace.trials) == 3  # each joint intervention on {X, Z} costs 2
    assert trace.trials[-1].cumulative_cost <= 7.5
    bo = run_bo(toy, config=FAST.model_copy(update={"n_trials": 8}), seed=0)
    assert [t.exploration_set for t in bo.trials] == [["X", "Z"]] * 8
    assert all(np.isfinite(t.best_true) for t in bo.trials)
    with pytest.raises(ConfigError):
        run_cbo(toy, config=FAST.model_copy(update={"n_trials": None}))
    with pytest.raises(BudgetExceeded):
        run_cbo(toy, config=FAST.model_copy(update={"budget_cost": 0.5}))


def test_run_cbo_on_a_candidate_graph(toy: SCM) -> None:
    """Agents pass their own DAG: sets and priors follow it, data still come from the SCM."""
    import networkx as nx

    guess = nx.DiGraph([("X", "Z"), ("Z", "Y"), ("X", "Y")])
    trace = run_cbo(toy, graph=guess, config=FAST.model_copy(update={"n_trials": 5}), seed=0)
    assert trace.exploration_sets == [["X"], ["Z"], ["X", "Z"]]
    assert len(trace.trials) == 5 and trace.trials[2].exploration_set == ["X", "Z"]
