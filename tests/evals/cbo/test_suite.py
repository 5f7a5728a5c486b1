"""The CBO suite: benchmark definitions, stored ground truth, scoring and metrics."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import expit

from optiforge.errors import ConfigError
from optiforge.evals.protocol import Benchmark, Task
from optiforge.evals.suites.cbo import (
    LITERATURE,
    CBOBenchmark,
    build,
    curve,
    gap_metric,
    mean_ci,
    summarize,
)
from optiforge.evals.suites.cbo.ground_truth import ALL_NAMES, compute, load
from optiforge.solvers.cbo import CBOTrace, TrialRecord


@pytest.fixture(scope="module")
def bench() -> CBOBenchmark:
    return CBOBenchmark()


def test_ten_literature_benchmarks_and_splits(bench: CBOBenchmark) -> None:
    assert len(LITERATURE) == 10
    assert isinstance(bench, Benchmark)
    names = {s: [t.name for t in bench.tasks(s)] for s in ("dev", "test", "heldout")}
    assert set(LITERATURE) <= set(sum(names.values(), []))
    assert not set(names["dev"]) & set(names["heldout"])
    with pytest.raises(ConfigError):
        bench.tasks("train")
    for task in bench.tasks("dev"):
        assert isinstance(task, Task)
        assert task.variables and all(task.variables.values())  # what an LLM is given
        assert task.target in task.variables and task.target in task.description
        assert set(task.domains) <= set(task.variables)


def test_stored_ground_truth_is_complete_and_consistent() -> None:
    truth = load()
    assert set(ALL_NAMES) <= set(truth)
    for name in ALL_NAMES:
        gt, spec = truth[name], build(name)
        assert gt.se_target is not None and gt.eval_seed is not None, name
        # The optimum IS its best per-set entry (value, set, point, error, method).
        best = min(gt.per_set, key=lambda p: p.value)
        assert (gt.value, gt.exploration_set, gt.x, gt.se, gt.method) == (
            best.value, best.exploration_set, best.x, best.se, best.method), name  # fmt: skip
        assert [sorted(p.exploration_set) for p in gt.per_set] == [
            sorted(s) for s in (spec.truth_sets or spec.exploration_sets)
        ], name
        scale = max(abs(gt.value), gt.value_range)
        for p in gt.per_set:
            if frozenset(p.exploration_set) in spec.closed_forms:
                assert p.method == "closed_form" and p.se == 0.0, (name, p.exploration_set)
            else:  # a stated Monte Carlo error, small relative to the task's scale
                assert p.method == "monte_carlo" and 0 <= p.se <= gt.se_target, (name, p)
                assert p.se / scale < 1e-3, (name, p.exploration_set, p.se, scale)
        # The suite's evaluator reproduces the stored optimum at its point (same estimator).
        task = _task_named(name)
        if task is not None:
            assert task.true_value(gt.x) == pytest.approx(gt.value, rel=1e-12, abs=1e-12), name


def _task_named(name: str):  # noqa: ANN202
    for split in ("dev", "test", "heldout"):
        for t in CBOBenchmark().tasks(split):
            if t.name == name:
                return t
    return None


def test_toy_graph_optimum_is_the_closed_form() -> None:
    """do(Z = z): E[Y] = cos z - exp(-z / 20) (the noise of Y has mean 0); the optimum over
    do(X) is higher, so y* is the minimum of that curve, found here independently."""
    from scipy.optimize import minimize_scalar

    res = minimize_scalar(lambda z: np.cos(z) - np.exp(-z / 20), bounds=(-5, 0), method="bounded",
                          options={"xatol": 1e-10})  # fmt: skip
    gt = load()["toy_graph"]
    assert gt.method == "closed_form" and gt.exploration_set == ["Z"]
    assert gt.value == pytest.approx(res.fun, abs=1e-9) and gt.x["Z"] == pytest.approx(
        res.x, abs=1e-5
    )
    x_only = next(p for p in gt.per_set if p.exploration_set == ["X"])
    # do(X = x): Z = exp(-x) + eps, so E[Y] = e^{-1/2} cos(e^{-x}) - exp(-e^{-x}/20 + 1/800).
    xs = np.linspace(-5, 5, 200001)
    c = np.exp(-xs)
    assert x_only.value == pytest.approx(
        float(np.min(np.exp(-0.5) * np.cos(c) - np.exp(-c / 20 + 1 / 800))), abs=1e-6
    )


def test_monte_carlo_optimum_matches_an_independent_estimate() -> None:
    """CompleteGraph has no closed form: a plain (no control variates) estimate with other
    random numbers agrees with the stored value within the errors of both."""
    gt, spec = load()["complete_graph"], build("complete_graph")
    n = 1 << 21
    rng = np.random.default_rng(2024)
    vals = spec.scm.do_batch(
        gt.exploration_set, np.array([[gt.x[v] for v in gt.exploration_set]]), n, rng
    )
    y = vals[spec.scm.target][0]
    se_plain = float(y.std() / np.sqrt(n))
    assert abs(float(y.mean()) - gt.value) < 4 * np.hypot(se_plain, gt.se)


@pytest.mark.parametrize("name", ["toy_graph", "psa", "independent"])
def test_ground_truth_recomputes(name: str) -> None:
    stored = load()[name]
    spec = build(name)
    from optiforge.solvers.cbo import true_optimum

    gt = true_optimum(spec.scm, spec.exploration_sets, n_mc=2000, seed=3, grid_1d=201, grid_2d=31)
    assert gt.exploration_set == stored.exploration_set
    assert abs(gt.value - stored.value) < 0.05  # a CRN search with other random numbers


def test_psa_optimum_by_quadrature() -> None:
    """E[psa | do(aspirin=0, statin=1)] by integrating over age and bmi (second method)."""
    stored = load()["psa"]
    assert stored.x == pytest.approx({"aspirin": 0.0, "statin": 1.0}, abs=1e-6)

    def integrand(b: float, age: float) -> float:
        cancer = expit(2.2 - 0.05 * age + 0.01 * b - 0.04)
        y = 6.8 + 0.04 * age - 0.15 * b - 0.60 + 1.00 * cancer
        return y * stats.norm.pdf(b, 27 - 0.01 * age, 0.7) / 20.0

    val, _ = integrate.dblquad(
        integrand, 55, 75, lambda a: 27 - 0.01 * a - 6, lambda a: 27 - 0.01 * a + 6
    )
    assert abs(stored.value - val) < 0.01  # MC sd of the stored value is 0.4/sqrt(20000)


def test_evaluate_intervention(bench: CBOBenchmark) -> None:
    task = next(t for t in bench.tasks("dev") if t.name == "toy_graph")
    best = task.evaluate({"values": task.true_optimum.x})
    assert best.passed and abs(best.metrics["simple_regret"]) < 1e-9
    worse = task.evaluate({"values": {"Z": 0.0}})
    assert (
        worse.passed
        and worse.metrics["simple_regret"] > 1.5
        and worse.metrics["within_tolerance"] == 0.0
    )
    bad = task.evaluate({"values": {"Z": 99.0}})
    assert not bad.passed and "outside" in bad.details["reason"]
    assert not task.evaluate({"values": {"Y": 0.0}}).passed
    assert not task.evaluate({"vals": {}}).passed


def _trace(points: list[dict[str, float]], costs: list[float]) -> CBOTrace:
    trials, cum = [], 0.0
    for i, (x, c) in enumerate(zip(points, costs, strict=True)):
        cum += c
        trials.append(
            TrialRecord(
                index=i,
                kind="acquire",
                exploration_set=list(x),
                x=x,
                y=0.0,
                cost=c,
                cumulative_cost=cum,
                best_set=list(x),
                best_x=x,
                best_true=-99.0,
            )
        )
    return CBOTrace(method="test", exploration_sets=[["Z"]], trials=trials)


def test_evaluate_trace_remeasures_and_checks_costs(bench: CBOBenchmark) -> None:
    task = next(t for t in bench.tasks("dev") if t.name == "toy_graph")
    tr = _trace([{"Z": 0.0}, {"Z": -3.2}], [1.0, 1.0])
    s = task.evaluate(tr)
    assert s.passed
    assert s.value == pytest.approx(task.evaluate({"values": {"Z": -3.2}}).value)  # not -99
    assert 0.95 < s.metrics["gap"] <= 1.0
    lying = _trace([{"Z": 0.0}], [0.1])  # claims a cheaper intervention than the task charges
    assert not task.evaluate(lying).passed
    over = _trace([{"Z": 0.0}] * 31, [1.0] * 31)
    assert (
        not task.evaluate(over).passed and "exceeds budget" in task.evaluate(over).details["reason"]
    )


def test_metrics() -> None:
    assert gap_metric(0.0, -1.0, -2.0) == pytest.approx(0.5)
    assert gap_metric(0.0, 1.0, -2.0) == 0.0 and gap_metric(0.0, -3.0, -2.0) == 1.0
    vals = [1.0, 2.0, 4.0, 3.5]
    m, h = mean_ci(vals)
    lo, hi = stats.t.interval(0.95, len(vals) - 1, loc=np.mean(vals), scale=stats.sem(vals))
    assert m == pytest.approx(np.mean(vals)) and h == pytest.approx((hi - lo) / 2)
    a = _trace([{"Z": 0.0}, {"Z": 1.0}], [1.0, 2.0])
    b = _trace([{"Z": 0.0}], [1.0])
    for t, vals_ in ((a, [-1.0, -2.0]), (b, [-1.5])):
        for tr_, v in zip(t.trials, vals_, strict=True):
            tr_.best_true = v
    mean, half = curve([a, b], np.array([0.5, 1.0, 3.0]))
    assert np.isnan(mean[0]) and mean[1] == pytest.approx(-1.25) and mean[2] == pytest.approx(-1.75)
    summ = summarize([a, b], y_star=-2.0, reference=[b, b], tolerance=0.1)
    assert summ["simple_regret_mean"] == pytest.approx(0.25)
    assert summ["fraction_within_tolerance"] == 0.5
    assert summ["regret_gap_to_reference_mean"] == pytest.approx(-0.25)


def test_recompute_one_random_dag_is_deterministic() -> None:
    a, b = build("random_dag_6_s0"), build("random_dag_6_s0")
    assert list(a.scm.graph.edges) == list(b.scm.graph.edges)
    x = np.array([[0.3, -0.2]])
    es = list(a.exploration_sets[3])
    assert a.scm.expected_outcome_batch(es, x, 500, 1) == pytest.approx(
        b.scm.expected_outcome_batch(es, x, 500, 1)
    )
    assert compute("toy_graph", n_mc=500).exploration_set == ["Z"]


@pytest.mark.parametrize("name", ALL_NAMES)
def test_truth_covers_every_minimal_intervention_set(name: str) -> None:
    """y* must be the best of ALL interventions, not just of the (capped) exploration sets."""
    from optiforge.solvers.cbo import minimal_intervention_sets

    spec = build(name)
    scm = spec.scm
    mis = set(minimal_intervention_sets(scm.graph, scm.manipulable, scm.target))
    truth = set(spec.truth_sets or [])
    if name in ("dropwave", "alpine2"):
        # Function networks: the full input set fixes every input; a set leaving inputs free
        # averages f over them and cannot beat min f, so the full set dominates.
        assert truth == {tuple(scm.manipulable)}
    else:
        assert mis <= truth
    stored = load()[name]
    assert {tuple(p.exploration_set) for p in stored.per_set} == truth


def _row(task: str, method: str, seed: int, regret: float, within: bool) -> dict:
    return {
        "task": task, "method": method, "seed": seed, "verified": True,
        "trace": [regret + 1.0, regret], "extra": {"cumulative_cost": [1.0, 3.0]},
        "verification": {"metrics": {"simple_regret": regret, "gap": 0.5,
                                     "within_tolerance": float(within), "cost": 3.0,
                                     "y_star": 0.0}},
    }  # fmt: skip


def test_suite_metrics_pair_the_gap_to_known_graph_by_seed(tmp_path) -> None:  # noqa: ANN001
    from optiforge.evals.suites.cbo import CBOBenchmark

    rows = [
        _row("t", "known-graph-cbo", 0, 0.0, True), _row("t", "known-graph-cbo", 1, 1.0, False),
        _row("t", "agent-cbo", 0, 0.5, True), _row("t", "agent-cbo", 1, 1.5, False),
        _row("t", "agent-cbo", 2, 9.0, False),  # no known-graph run with seed 2: not paired
        {"task": "t", "method": "agent-cbo", "seed": 3, "verified": False},  # not counted
    ]  # fmt: skip
    bench = CBOBenchmark()
    sm = bench.suite_metrics(rows)
    agent = sm["per_task"]["t"]["agent-cbo"]
    assert agent["n_seeds"] == 3 and agent["within_tolerance"] == 1
    assert agent["simple_regret"]["mean"] == pytest.approx(11.0 / 3)
    gap = agent["regret_gap_to_known_graph"]
    assert gap["n_pairs"] == 2 and gap["mean"] == pytest.approx(0.5) and gap["ci95"] == 0.0
    assert "regret_gap_to_known_graph" not in sm["per_task"]["t"]["known-graph-cbo"]
    assert sm["totals"]["agent-cbo"] == {"runs": 3, "within_tolerance": 1,
                                         "gap": {"mean": 0.5, "ci95": 0.0}}  # fmt: skip
    summary = {
        "agent": "agent-cbo",
        "methods": ["agent-cbo", "known-graph-cbo"],
        "suite_metrics": sm,
    }
    text = "\n".join(bench.report_sections(summary))
    assert (
        "| t | 3.67 ± " in text
        and "(1/3)" in text
        and "| **runs within tolerance** | 1/3 | 1/2 |" in text
    )
    assert "| t | 0.5 |" in text  # the paired gap table
    (path,) = bench.report_plots(summary, rows, tmp_path)
    assert path.name == "cost_convergence.png" and path.stat().st_size > 1000
