"""Waits after the agent's search say what they wait for (issue 42: the baseline ran
70-80 s after a full progress bar, silently): the runner reports each phase, the CLI
gives each a bar of its own and closes it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.progress import Progress

from optiforge.cli.run_progress import RunBars
from optiforge.config import RunSettings
from optiforge.evals.registry import resolve_task
from optiforge.harness.runner import run_task


def test_runner_reports_the_remeasurement_and_baseline_phases(tmp_path: Path) -> None:
    reports: list[dict[str, Any]] = []
    run_task("evolve", resolve_task("funcfit/quadratic@dev"), RunSettings(budget=3, memory="none"),
             tmp_path / "run", progress=reports.append)  # fmt: skip
    phases = [r["phase"] for r in reports if "phase" in r]
    assert phases == [
        "re-measuring the best candidate",
        "baseline seed",
        "re-measuring baseline seed",
    ]
    first = next(i for i, r in enumerate(reports) if "phase" in r)
    assert all("phase" not in r for r in reports[:first]) and first > 0  # after the search


def test_run_bars_open_one_bar_per_phase_and_close_it() -> None:
    prog = Progress(disable=True)
    bars = RunBars(prog, "agent", 10, lambda info: "$0")
    bars({"evaluations": 10, "max_evaluations": 10, "best": 1.0})
    bars({"phase": "baseline seed", "status": "a budget of 10 evaluations"})
    bars({"evaluations": 4, "max_evaluations": 10})  # the baseline's own count
    bars({"phase": "re-measuring baseline seed", "status": "in a fresh sandbox"})
    bars.finish()
    agent, baseline, remeasure = prog.tasks
    assert (agent.completed, agent.total) == (10, 10)
    assert (baseline.completed, baseline.total) == (4, 10)  # its own count, not a full bar
    assert (remeasure.completed, remeasure.total) == (1, 1)
    assert str(baseline.fields["info"]).endswith("done")


def test_the_agent_bar_ends_at_the_summary_count() -> None:
    """An agent that reports no progress left its bar at 0/N while the table said N."""
    prog = Progress(disable=True)
    bars = RunBars(prog, "agent", 30, lambda info: "$0")
    bars.finish(30)
    assert (prog.tasks[0].completed, prog.tasks[0].total) == (30, 30)
