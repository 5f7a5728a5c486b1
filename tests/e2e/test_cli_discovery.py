"""Finding things from the CLI: tasks, agent options, help text, untruncated listings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "optiforge.cli"]


def optiforge(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # as when piped to a file
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=1200, env=env)


def test_list_tasks_names_what_bench_takes() -> None:
    out = optiforge("list", "tasks", "funcfit")
    assert out.returncode == 0, out.stderr
    assert "funcfit/quadratic@dev" in out.stdout and "funcfit/cubic@heldout" in out.stdout
    out = optiforge("list", "tasks", "funcfit", "--split", "nope")
    assert out.returncode == 2 and "has no split 'nope'" in out.stderr


def test_config_show_lists_keys_defaults_and_docs() -> None:
    out = optiforge("config", "show", "hawkeye", "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["key"]: r for r in json.loads(out.stdout)}
    # the agent's own default for the nested search config, not SearchConfig's class default
    assert rows["search.max_evaluations"]["default"] == 12
    assert "strategies" in rows["strategies_per_task"]["doc"]
    table = optiforge("config", "show", "evolve")
    assert "search.population_size" in table.stdout and "Survivors kept" in table.stdout


def test_help_shows_the_split_syntax() -> None:
    out = optiforge("run", "--help")
    assert "SUITE/TASK@SPLIT" in out.stdout  # was "SUITE/TASK[@split]" with the [...] eaten


def test_listings_are_not_cut_off_the_terminal() -> None:
    from optiforge.llm.providers import PROVIDERS

    out = optiforge("list", "providers")
    assert out.returncode == 0
    for p in PROVIDERS:
        assert p.notes in out.stdout


def test_runs_and_compare(tmp_path: Path) -> None:
    from optiforge.config import RunSettings
    from optiforge.evals.registry import resolve_task
    from optiforge.harness.runner import run_task

    task = resolve_task("funcfit/quadratic@dev")
    for name, budget in (("short", 2), ("long", 6)):
        run_task("evolve", task, RunSettings(budget=budget, memory="none"), tmp_path / name,
                 with_baseline=False)  # fmt: skip
    other = resolve_task("funcfit/sine@dev")
    run_task("evolve", other, RunSettings(budget=2, memory="none"), tmp_path / "sine",
             with_baseline=False)  # fmt: skip
    (tmp_path / "not-a-run").mkdir()
    out = optiforge("runs", "--root", str(tmp_path))
    assert out.returncode == 0, out.stderr
    assert "runs in" in out.stdout and "(3)" in out.stdout  # not-a-run is not listed
    for name in ("short", "long", "sine"):
        assert name in out.stdout
    assert out.stdout.count("finished") == 3
    cmp = optiforge("compare", str(tmp_path / "short"), str(tmp_path / "long"),
                    "--plot", str(tmp_path / "c.png"))  # fmt: skip
    assert cmp.returncode == 0, cmp.stderr
    assert "funcfit/quadratic@dev (mse, lower is better)" in cmp.stdout and " *" in cmp.stdout
    assert (tmp_path / "c.png").stat().st_size > 1000
    bad = optiforge("compare", str(tmp_path / "short"), str(tmp_path / "sine"))
    assert bad.returncode == 2 and "different tasks" in bad.stderr


@pytest.mark.slow
def test_executor_ray_runs_the_same_search(tmp_path: Path) -> None:
    """`--executor ray`: evaluations go to (local) Ray workers, each still sandboxed; the
    search finds what the process executor finds (same seed, same proposals)."""
    import json

    pytest.importorskip("ray")
    best = {}
    for name in ("process", "ray"):
        out = tmp_path / name
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
        proc = subprocess.run([*CLI, "run", "evolve", "--bench", "funcfit/quadratic", "--budget", "6",
                               "--memory", "none", "--workers", "2", "--executor", name,
                               "--out", str(out)], capture_output=True, text=True, timeout=1200, env=env)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        best[name] = json.loads((out / "summary.json").read_text())["best_score"]
    assert best["ray"] == best["process"]
