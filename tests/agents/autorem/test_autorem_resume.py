"""AutoREM resume: kill -9 mid-repair, resume, and write exactly as an uninterrupted run.

The repair prompt (the conversation so far plus the verifier's verdict) is rebuilt from
the checkpointed graph state, so the resumed run's prompts after the kill equal the
uninterrupted run's, the rejected first attempt is not run again, and the outcome is
the same.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _resume import kill_at_block, logging_model, read_prompts, resume_and_rerun
from autorem_helpers import sloppy_model, task

from optiforge.agents.autorem import SPEC, AutoREMConfig
from optiforge.agents.kit import RunContext
from optiforge.runs import FileTracer
from optiforge.testing import FunctionLLM

BLOCK_AT = 2  # the child is killed inside the repair call (attempt 1 was rejected)


def solve(run_dir: Path, prompts: Path, *, block_at: int | None, resume: bool) -> Any:
    """Run AutoREM with a prompt-logging model; ``block_at``: hang inside that LLM call."""

    model = logging_model(prompts, block_at, lambda m: sloppy_model(m, None, None))

    run_dir.mkdir(parents=True, exist_ok=True)
    ctx = RunContext(llm=FunctionLLM(model), tracer=FileTracer(run_dir / "events.jsonl"), seed=0,
                     run_dir=run_dir, agent="autorem")  # fmt: skip
    return SPEC.build(task("dev", 0, 1), AutoREMConfig(), None).execute(ctx, resume=resume)


def _attempts(run_dir: Path) -> list[dict[str, Any]]:
    lines = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]
    return [e for e in lines if e["kind"] == "autorem_attempt"]


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a hang guard, not a measure: loaded machines are slow
def test_kill_and_resume_proposes_as_the_uninterrupted_run(tmp_path: Path) -> None:
    killed, prompts = tmp_path / "a" / "run", tmp_path / "a" / "prompts.jsonl"
    killed.parent.mkdir()
    kill_at_block(__file__, killed, prompts, BLOCK_AT)
    before = read_prompts(prompts)
    assert len(before) == BLOCK_AT
    assert [a["passed"] for a in _attempts(killed)] == [False]

    after, resumed, straight, fresh = resume_and_rerun(solve, killed, prompts, tmp_path / "b")
    # The killed repair call is made again from the checkpointed conversation.
    assert after == straight[BLOCK_AT - 1 :] and len(straight) == BLOCK_AT
    assert before == straight
    assert "The verifier rejected" in after[0][-1]["content"]
    assert resumed.model_dump() == fresh.model_dump()
    assert resumed.extra["solved"] and resumed.n_evaluations == 2
    # The rejected first attempt ran once, before the kill; only the repair ran after it.
    assert [a["passed"] for a in _attempts(killed)] == [False, True]
