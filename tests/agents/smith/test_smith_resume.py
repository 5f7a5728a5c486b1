"""smith resume: kill -9 mid-run, resume, and ask and answer exactly as an uninterrupted run.

The graph checkpoints after every build task and every chunk of use questions; the pool,
the build log and the calls made are in the checkpoint, so a resumed run asks the LLM
from the killed node on, with the same prompts, and ends with the same outcome.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _resume import kill_at_block, logging_model, read_prompts, resume_and_rerun

from optiforge.agents.kit import RunContext
from optiforge.agents.smith import SPEC, SmithConfig
from optiforge.agents.smith.nodes import USE_CHUNK
from optiforge.agents.smith.problem import ToolReply
from optiforge.agents.smith.testing import smith_llm
from optiforge.evals.registry import resolve_task
from optiforge.runs import FileTracer
from optiforge.testing import FunctionLLM

TASK = "procedural/train-families@dev"


def _text(messages: list[dict[str, Any]]) -> str:
    return str(messages[-1]["content"])


def _node_starts(prompts: list[Any]) -> list[int]:
    """The calls that begin a graph node: a build task's first attempt (a retry follows a
    failed validation in the same node), or the first question of a chunk."""
    builds = [i for i, m in enumerate(prompts)
              if _text(m).startswith("Write a Python tool") and "failed validation" not in _text(m)]  # fmt: skip
    uses = [i for i, m in enumerate(prompts) if _text(m).startswith("Answer the question")]
    return builds + uses[::USE_CHUNK]


def solve(run_dir: Path, prompts: Path, *, block_at: int | None, resume: bool) -> Any:
    """Run smith with a prompt-logging scripted model; ``block_at``: hang inside that call."""
    scripted = smith_llm(buggy_first=True)

    def reply(messages: list[dict[str, Any]]) -> Any:
        # a build prompt asks for structured output (the schema is not logged: named here)
        structured = "Give the tool as name" in str(messages[-1]["content"])
        return scripted.fn(messages, None, ToolReply if structured else None)

    model = logging_model(prompts, block_at, reply)
    run_dir.mkdir(parents=True, exist_ok=True)
    llm = FunctionLLM(model)
    # the logged model answers calls as JSON text: it is shown the tools in the prompt
    llm.supports_tools = False  # type: ignore[attr-defined]
    ctx = RunContext(llm=llm, tracer=FileTracer(run_dir / "events.jsonl"), seed=0,
                     run_dir=run_dir, agent="smith")  # fmt: skip
    return SPEC.build(resolve_task(TASK), SmithConfig(), None).execute(ctx, resume=resume)


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a hang guard, not a measure: loaded machines are slow
@pytest.mark.parametrize("block_at", [4, 26], ids=["build", "use"])
def test_kill_and_resume_asks_as_the_uninterrupted_run(tmp_path: Path, block_at: int) -> None:
    """Killed inside a build task's retry (call 4), or inside the second chunk of use
    questions (call 26: the scripted writer's 9 tools take 15 calls)."""
    killed, prompts = tmp_path / "a" / "run", tmp_path / "a" / "prompts.jsonl"
    killed.parent.mkdir()
    kill_at_block(__file__, killed, prompts, block_at)
    before = read_prompts(prompts)
    assert len(before) == block_at

    after, resumed, straight, fresh = resume_and_rerun(solve, killed, prompts, tmp_path / "b")
    assert before == straight[:block_at]
    phase = "Write a Python tool" if block_at == 4 else "Answer the question"
    assert _text(straight[block_at - 1]).startswith(phase)
    # the resumed run re-runs the killed node from its checkpoint: it asks exactly what the
    # uninterrupted run asked from that node's first call on
    start = max(i for i in _node_starts(straight) if i < block_at)
    assert after == straight[start:]
    assert 0 < start < block_at - 1  # the kill fell after the node's first call
    assert resumed.model_dump() == fresh.model_dump()
    assert resumed.extra["built"] == 9 and resumed.n_evaluations == fresh.n_evaluations
