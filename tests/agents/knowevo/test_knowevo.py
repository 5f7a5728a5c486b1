"""KnowEvo offline and with a scripted LLM: strategy mutation trees of localized block
edits, bandit vs uniform allocation, the backward phase, the baselines, memory lineage,
and the tree command."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from optiforge.config import RunSettings
from optiforge.evals.registry import resolve_task
from optiforge.harness.runner import run_task
from optiforge.runs import iter_events
from optiforge.testing import FunctionLLM

TASK = "protein/thermostability-a@dev"


def _run(tmp_path: Path, budget: int = 60, llm: Any = None, **agent: Any) -> dict[str, Any]:
    settings = RunSettings(budget=budget, agent=agent, model="scripted" if llm else "offline")
    return run_task("knowevo", resolve_task(TASK), settings, tmp_path, llm=llm, with_baseline=False)


def _nodes(run_dir: Path) -> list[dict[str, Any]]:
    return list(json.loads((run_dir / "tree.json").read_text())["nodes"])


def test_offline_tree_of_localized_edits_beats_the_initial_heuristics(tmp_path: Path) -> None:
    s = _run(tmp_path / "r", budget=72)
    assert s["status"] == "finished" and s["n_evaluations"] == 72
    nodes = _nodes(tmp_path / "r")
    assert len(nodes) >= 3 and nodes[0]["by"] == "root"
    for n in nodes[1:]:  # a child differs from its parent in exactly one block
        parent = nodes[n["parent"]]["strategy"]
        changed = [b for b in set(parent["blocks"]) | set(n["strategy"]["blocks"])
                   if parent["blocks"].get(b) != n["strategy"]["blocks"].get(b)
                   or parent["weights"].get(b) != n["strategy"]["weights"].get(b)]  # fmt: skip
        assert changed == [n["block"]] and n["by"] == "guided"
    assert sum(n["pulls"] for n in nodes) == 72 // 6
    # the harness's score on the unseen test pool, against the initial heuristics'
    from optiforge.agents.knowevo.blocks import initial_strategy

    initial = resolve_task(TASK).evaluate(initial_strategy())
    assert s["best_score"] > initial.value
    backward = [e for e in iter_events(tmp_path / "r") if e["kind"] == "backward"]
    assert backward and any(e["accepted"] for e in backward)


def test_uniform_allocation_spreads_rollouts_evenly(tmp_path: Path) -> None:
    def replay(run_dir: Path) -> list[bool]:
        """Per rollout: did it go to a least-rolled-out strategy of the tree at that time?"""
        pulls, least = {0: 0}, []
        for e in iter_events(run_dir):
            if e["kind"] == "tree_child":
                pulls[e["node"]] = 0
            elif e["kind"] == "rollout":
                least.append(pulls[e["node"]] == min(pulls.values()))
                pulls[e["node"]] += 1
        return least

    _run(tmp_path / "u", allocation="uniform", backward=False)
    assert all(replay(tmp_path / "u"))
    assert {n["by"] for n in _nodes(tmp_path / "u")[1:]} == {"random"}
    _run(tmp_path / "b", allocation="ucb", backward=False)
    assert not all(replay(tmp_path / "b"))  # the bandit goes back to what paid off


def test_baselines_spend_the_same_budget(tmp_path: Path) -> None:
    from optiforge.agents.kit import RunContext
    from optiforge.agents.knowevo.baselines import BASELINES

    task = resolve_task(TASK)
    ctx = RunContext(seed=0)
    mono = BASELINES["monolithic"](task, ctx, 36, None)
    rand = BASELINES["random-mutation"](task, ctx, 36, None)
    assert mono.n_evaluations == rand.n_evaluations == 36
    assert mono.extra["mode"] == "monolithic" and not rand.extra["backward"]
    assert (
        BASELINES["initial"](task, ctx, 36, None).best_candidate["weights"]["conservative"] == 1.0
    )


def test_accepted_blocks_are_memory_records_with_lineage(tmp_path: Path) -> None:
    from optiforge.memory import Store

    _run(tmp_path / "m", budget=72)
    nodes = _nodes(tmp_path / "m")
    store = Store(f"sqlite:///{tmp_path / 'm' / 'memory.db'}")
    child = next(n for n in nodes[1:] if n["block_ids"].get(n["block"]))
    rec = store.get(child["block_ids"][child["block"]])
    parent_rec = nodes[child["parent"]]["block_ids"][child["block"]]
    assert (
        rec.kind == "block" and rec.parent_ids == [parent_rec] and child["edit"] in rec.description
    )


def test_the_llm_rewrites_the_blamed_block_from_the_evidence(tmp_path: Path) -> None:
    prompts: list[str] = []
    rewrite = ("```python\ndef score(variant, ctx):\n    \"\"\"fewer substitutions are safer\"\"\"\n"
               "    return -len(variant['mutations'])\n```")  # fmt: skip

    def model(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        prompts.append(messages[-1]["content"])
        return (
            rewrite
            if len(prompts) % 2
            else "```python\ndef score(variant, ctx):\n    return 1/0\n```"
        )

    s = _run(tmp_path / "l", budget=48, llm=FunctionLLM(model), llm_edits=2)
    assert prompts and "Ranked high but measured poorly" in prompts[0]
    assert "Spearman correlation" in prompts[0] and "def score(variant, ctx)" in prompts[0]
    backward = [e for e in iter_events(tmp_path / "l") if e["kind"] == "backward"]
    assert backward and all(e["candidates"] == 2 for e in backward)
    assert any("ZeroDivisionError" in e for e in s["extra"]["errors"])  # the crash is reported
    assert {n["by"] for n in _nodes(tmp_path / "l")[1:]} <= {"llm"}


def test_tree_command_renders_the_tree(tmp_path: Path) -> None:
    from optiforge.cli.main import app

    _run(tmp_path / "t", budget=36)
    out = CliRunner().invoke(
        app, ["knowevo", "tree", str(tmp_path / "t"), "--block", "conservative"]
    )
    assert out.exit_code == 0, out.output
    assert "#0 [root] initial expert heuristics" in out.output and "final strategy #" in out.output
    assert "def score(variant, ctx)" in out.output
    bad = CliRunner().invoke(app, ["knowevo", "tree", str(tmp_path)])
    assert bad.exit_code != 0


def test_a_model_that_never_writes_a_block_fails_the_run(tmp_path: Path) -> None:
    s = _run(tmp_path / "f", budget=36, llm=FunctionLLM(lambda m, t, s: "I cannot help."))
    assert s["status"] == "failed" and "not one of the" in s["status_reason"]
    assert s["extra"]["llm"]["valid"] == 0 and s["extra"]["llm"]["asked"] > 0
