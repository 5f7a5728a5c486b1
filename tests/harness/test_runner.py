"""Eval runner: statistics against hand-computed values, run/eval files, resume, re-measurement."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from optiforge.agents.kit import SearchConfig, search_run
from optiforge.agents.spec import AgentOutcome, AgentSpec
from optiforge.config import RunSettings
from optiforge.harness.runner import average_ranks, mean_ci95, run_eval, run_task, summarize
from optiforge.testing.toy_search import GaussianProposer, ToyProblem, ToyTask


def test_mean_ci95_matches_hand_computation() -> None:
    # values 1..4: mean 2.5, sample sd sqrt(5/3) = 1.290994, t_{0.975,3} = 3.182446
    m, half = mean_ci95([1.0, 2.0, 3.0, 4.0])
    assert m == pytest.approx(2.5)
    assert half == pytest.approx(3.182446 * 1.290994 / 2.0, rel=1e-5)
    m1, h1 = mean_ci95([7.0])
    assert m1 == 7.0 and h1 is None


def test_average_ranks_with_ties_and_directions() -> None:
    means = {
        "t1": {"A": 1.0, "B": 2.0, "C": 3.0},  # lower better: A1 B2 C3
        "t2": {"A": 5.0, "B": 5.0, "C": 1.0},  # higher better: A,B tie 1.5, C3
    }
    ranks = average_ranks(means, {"t1": False, "t2": True})
    assert ranks == {"A": pytest.approx(1.25), "B": pytest.approx(1.75), "C": pytest.approx(3.0)}


def test_summarize_per_task_statistics() -> None:
    rows = [
        {
            "task": "t",
            "method": "agent",
            "seed": s,
            "metric": "loss",
            "higher_is_better": False,
            "best_score": v,
        }
        for s, v in enumerate([1.0, 3.0])
    ] + [
        {
            "task": "t",
            "method": "base",
            "seed": s,
            "metric": "loss",
            "higher_is_better": False,
            "best_score": v,
        }
        for s, v in enumerate([4.0, None])
    ]
    s = summarize(rows, agent="agent", benchmark="b", split="dev", methods=["agent", "base"])
    a = s["tasks"]["t"]["methods"]["agent"]
    assert a["mean"] == 2.0 and a["ci95"] == pytest.approx(
        12.706205 * math.sqrt(2.0) / math.sqrt(2), rel=1e-5
    )
    b = s["tasks"]["t"]["methods"]["base"]
    assert b["mean"] == 4.0 and b["n_failed"] == 1
    assert s["agent_vs_baselines"]["base"] == {"agent_better_on": 1, "of_tasks": 1}


def _toy_build(task, config, budget):  # type: ignore[no-untyped-def]
    def outcome(res, ctx):  # type: ignore[no-untyped-def]
        return AgentOutcome(
            best_candidate=res.best.payload,
            claimed_value=-123.0,
            trace=res.trace(False),
            n_evaluations=res.n_evaluations,
            stop_reason=res.stop_reason,
        )

    cfg = SearchConfig(max_evaluations=budget or 8)
    return search_run(ToyProblem(), GaussianProposer(), cfg, outcome=outcome)


def _toy_seed_baseline(task, ctx, budget, config=None):  # type: ignore[no-untyped-def]
    return AgentOutcome(
        best_candidate={"a": 0.0, "b": 0.0}, claimed_value=10.0, trace=[10.0], n_evaluations=1
    )


TOY = AgentSpec(
    name="toy",
    description="toy",
    config_model=SearchConfig,
    build=_toy_build,
    baselines={"seed": _toy_seed_baseline},
)


def test_run_task_writes_summary_and_remeasures(tmp_path: Path) -> None:
    out = tmp_path / "run"
    summary = run_task(TOY, ToyTask(), RunSettings(budget=10, memory="none"), out)
    on_disk = json.loads((out / "summary.json").read_text())
    for key in (
        "agent",
        "benchmark",
        "task",
        "metric",
        "higher_is_better",
        "best_score",
        "baseline_name",
        "baseline_score",
        "n_evaluations",
        "llm_calls",
        "cost_usd",
        "wall_s",
    ):
        assert key in on_disk
    # The agent claimed -123; the harness re-scored its candidate itself.
    assert summary.claimed_score == -123.0
    a, b = summary.best_score, None
    assert a is not None and a >= 0 and a < 10.0
    assert summary.baseline_name == "seed" and summary.baseline_score == pytest.approx(10.0)
    assert summary.n_evaluations == 10 and b is None
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "finished" and manifest["seed"] == 0 and "versions" in manifest
    kinds = [json.loads(line)["kind"] for line in (out / "events.jsonl").read_text().splitlines()]
    assert (
        kinds.count("evaluation") == 10
        and kinds[0] == "run_started"
        and kinds[-1] == "run_finished"
    )


def test_eval_on_funcfit_is_resumable(tmp_path: Path) -> None:
    out = tmp_path / "eval"
    settings = RunSettings(budget=4, memory="none")
    s1 = run_eval("evolve", "funcfit", settings, out, split="dev", seeds=2, baselines=["seed"])
    rows = (out / "results.jsonl").read_text().splitlines()
    assert len(rows) == 2 * 2 * 2  # tasks x seeds x methods
    assert set(s1["tasks"]) == {"quadratic", "sine"}
    for t in s1["tasks"].values():
        agent, seed = t["methods"]["evolve"], t["methods"]["seed"]
        assert (
            agent["n_seeds"] == 2 and agent["mean"] <= seed["mean"] + 1e-12
        )  # the seed is evaluated first
    assert (out / "summary.md").read_text().count("|") > 10
    assert (out / "convergence.png").stat().st_size > 1000
    assert (out / "agent_vs_baselines.png").stat().st_size > 1000
    # Rerunning resumes: nothing is run again, the summary is the same.
    s2 = run_eval("evolve", "funcfit", settings, out, split="dev", seeds=2, baselines=["seed"])
    assert len((out / "results.jsonl").read_text().splitlines()) == 8
    assert s2["tasks"] == s1["tasks"]


def test_the_task_budget_is_the_one_budget_name() -> None:
    """--budget, else the task's own budget (an hdbo protocol's total), else the agent's."""
    from optiforge.agents import get_agent
    from optiforge.evals.suites.cbo import CBOBenchmark
    from optiforge.evals.suites.hdbo import HDBOBenchmark
    from optiforge.harness.runner import run_budget

    kd = get_agent("kernel-discovery")
    lit = HDBOBenchmark("literature").tasks("dev")[0]
    assert run_budget(lit, kd, RunSettings()) == 270  # was the agent's default before
    assert run_budget(lit, kd, RunSettings(budget=12)) == 12
    cbo = CBOBenchmark().tasks("dev")[0]
    assert run_budget(cbo, get_agent("agent-cbo"), RunSettings()) == cbo.n_trials
    assert run_budget(ToyTask(), TOY, RunSettings()) == TOY.default_budget
