"""EPB offline and with a scripted LLM: blocks I and II on the shipped teacher."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from optiforge.config import RunSettings
from optiforge.evals.registry import resolve_task
from optiforge.harness.runner import run_task
from optiforge.runs import iter_events
from optiforge.testing import FunctionLLM

TASK = "nco/tsp20@dev"
SMALL = {"train_tours": 12, "val_tours": 6, "router_steps": 120}


def _run(tmp_path: Path, budget: int, llm: Any = None) -> dict[str, Any]:
    settings = RunSettings(budget=budget, agent=SMALL, model="scripted" if llm else "offline")
    return run_task("epb", resolve_task(TASK), settings, tmp_path, llm=llm, with_baseline=False)


def test_offline_blocks_lower_the_divergence_and_keep_programs_readable(tmp_path: Path) -> None:
    s = _run(tmp_path / "r", budget=4)
    assert s["status"] == "finished", s["status_reason"]
    history = s["extra"]["history"]
    block1 = [h for h in history if h["block"] == "I"]
    assert len(block1) == 4 and any("accepted" in h for h in block1)
    accepted = [h for h in block1 if "accepted" in h]
    assert all(h["val_after"] < h["val_before"] for h in accepted)  # judged on held-out states
    assert any(h["block"] == "II" for h in history)  # boost and prune after round 4
    candidate = s["extra"]["portfolio"]
    assert 1 <= len(candidate) <= 8
    # a blend is one flat weighted sum over the seed heuristics, not nested code
    assert s["verification"]["metrics"]["program_lines"] < 40 * len(candidate)


def test_the_llm_rewrites_the_blamed_program_from_textual_feedback(tmp_path: Path) -> None:
    prompts: list[str] = []
    code = ("```python\ndef scores(state):\n    d, c = state['dist'], state['current']\n"
            "    return [-d[c][j] - 0.2 * d[j][state['first']] for j in range(state['n'])]\n```")  # fmt: skip

    def model(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        prompts.append(messages[-1]["content"])
        return code

    s = _run(tmp_path / "l", budget=2, llm=FunctionLLM(model))
    assert prompts and "diverges most from the teacher" in prompts[0]
    assert "ranks the teacher's chosen city" in prompts[0]
    events = [e for e in iter_events(tmp_path / "l") if e["kind"] == "epb_round"]
    assert events and all(e["candidates"] >= 1 for e in events)
    assert s["status"] in ("finished", "failed")


def test_a_model_that_writes_no_program_fails_the_run(tmp_path: Path) -> None:
    s = _run(tmp_path / "f", budget=2, llm=FunctionLLM(lambda m, t, s: "no code"))
    assert s["status"] == "failed" and "no LLM program edit was accepted" in s["status_reason"]
