"""terminal resume: kill -9 inside an episode, resume, and end as an uninterrupted run.

The graph is one node (the episode): a kill inside it leaves no finished node, so the
resumed run works the task again from its initial files (nothing of the killed episode
leaks into it: the work dir lives in the episode) and its prompts and outcome equal an
uninterrupted run's. A finished run resumed again calls no model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _resume import kill_at_block, logging_model, read_prompts, resume_and_rerun

from optiforge.agents.kit import RunContext
from optiforge.agents.terminal import SPEC, TerminalConfig
from optiforge.evals.registry import resolve_task
from optiforge.runs import FileTracer
from optiforge.testing import FunctionLLM

TASK = "saddle/dedupe-events"
BLOCK_AT = 3  # the child is killed inside the third turn (two commands ran)


def _reply(messages: list[dict[str, Any]]) -> str:
    """The reference solution, one command a turn, then submit (a function of the prompt)."""
    sol = resolve_task(TASK).solution()
    n = sum(1 for m in messages if m["role"] == "assistant")
    return json.dumps({"command": sol[n]} if n < len(sol) else {"submit": True})


def solve(run_dir: Path, prompts: Path, *, block_at: int | None, resume: bool) -> Any:
    """Run terminal with a prompt-logging model; ``block_at``: hang inside that LLM call."""
    run_dir.mkdir(parents=True, exist_ok=True)
    llm = FunctionLLM(logging_model(prompts, block_at, _reply))
    ctx = RunContext(llm=llm, tracer=FileTracer(run_dir / "events.jsonl"), seed=0,
                     run_dir=run_dir, agent="terminal")  # fmt: skip
    return SPEC.build(resolve_task(TASK), TerminalConfig(), None).execute(ctx, resume=resume)


@pytest.mark.timeout(1800)  # a hang guard, not a measure: loaded machines are slow
def test_kill_and_resume_ends_as_the_uninterrupted_run(tmp_path: Path) -> None:
    killed, prompts = tmp_path / "a" / "run", tmp_path / "a" / "prompts.jsonl"
    killed.parent.mkdir()
    kill_at_block(__file__, killed, prompts, BLOCK_AT)
    assert len(read_prompts(prompts)) == BLOCK_AT

    after, resumed, straight, fresh = resume_and_rerun(solve, killed, prompts, tmp_path / "b")
    n_calls = len(resolve_task(TASK).solution()) + 1
    assert after == straight and len(after) == n_calls  # the episode ran again, from the start
    assert resumed.model_dump() == fresh.model_dump()
    assert resumed.stop_reason == "submitted" and resumed.extra["steps"] == n_calls - 1
    score = resolve_task(TASK).evaluate(resumed.best_candidate)
    assert score.passed and score.value == 1.0

    prompts.unlink()  # a finished run resumed again: the checkpoint's result, no model call
    again = solve(killed, prompts, block_at=None, resume=True)
    assert read_prompts(prompts) == [] and again.model_dump() == resumed.model_dump()
