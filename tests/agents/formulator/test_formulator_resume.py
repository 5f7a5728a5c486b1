"""Formulator resume: kill -9 inside the revision call, resume, and finish as an
uninterrupted run.

The first formulation is checkpointed when ``formulate`` ends, so the resumed run does
not ask for it again: it re-enters ``revise`` (the pilot is re-run with the run's seed,
so it sees the same evaluations) and makes the killed revision call again with the same
conversation; the outcome equals the uninterrupted run's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _resume import kill_at_block, logging_model, read_prompts, resume_and_rerun

from optiforge.agents.formulator import SPEC, FormulatorConfig
from optiforge.agents.kit import RunContext
from optiforge.evals.registry import resolve_task
from optiforge.runs import FileTracer
from optiforge.testing import FunctionLLM

BLOCK_AT = 2  # the child is killed inside the revision call (the first formulation is in)
WIDE = {"variables": [{"name": "radius", "kind": "float", "low": 10, "high": 200},
                      {"name": "length", "kind": "float", "low": 10, "high": 240}],
        "method": "random", "rationale": "wide first"}  # fmt: skip
NARROW = {"variables": [{"name": "radius", "kind": "float", "low": 40, "high": 60},
                        {"name": "length", "kind": "float", "low": 150, "high": 240}],
          "method": "tpe", "rationale": "narrowed"}  # fmt: skip


def _reply(messages: list[dict[str, Any]]) -> str:
    # the revision conversation holds the first reply and the pilot's results
    return json.dumps(NARROW if len(messages) > 2 else WIDE)


def solve(run_dir: Path, prompts: Path, *, block_at: int | None, resume: bool) -> Any:
    """Run the formulator with a prompt-logging model; ``block_at``: hang inside that call."""
    run_dir.mkdir(parents=True, exist_ok=True)
    ctx = RunContext(llm=FunctionLLM(logging_model(prompts, block_at, _reply)), seed=0,
                     tracer=FileTracer(run_dir / "events.jsonl"), run_dir=run_dir,
                     agent="formulator")  # fmt: skip
    task = resolve_task("bbowp/pressure-vessel@dev")
    run = SPEC.build(task, FormulatorConfig(revise_after=4), None)
    return run.execute(ctx, resume=resume)


def _kinds(run_dir: Path) -> list[str]:
    return [json.loads(x)["kind"] for x in (run_dir / "events.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a hang guard, not a measure: loaded machines are slow
def test_kill_and_resume_revises_as_the_uninterrupted_run(tmp_path: Path) -> None:
    killed, prompts = tmp_path / "a" / "run", tmp_path / "a" / "prompts.jsonl"
    killed.parent.mkdir()
    kill_at_block(__file__, killed, prompts, BLOCK_AT)
    before = read_prompts(prompts)
    assert len(before) == BLOCK_AT
    assert _kinds(killed).count("pilot") == 1 and "revision" not in _kinds(killed)

    after, resumed, straight, fresh = resume_and_rerun(solve, killed, prompts, tmp_path / "b")
    # only the killed revision call is made again, from the same conversation
    assert before == straight and after == straight[BLOCK_AT - 1 :]
    assert "A pilot run of that formulation (random) made 4 evaluations" in after[0][-1]["content"]
    assert resumed.model_dump() == fresh.model_dump()
    form = resumed.extra["formulation"]
    assert form["method"] == "tpe" and form["pilot"]["method"] == "random"
    assert resumed.extra["pilot"]["evals"] == 4 and resumed.extra["reasks"] == 0
