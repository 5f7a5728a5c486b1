"""evolve resume: kill -9 mid-run, resume, and propose exactly as an uninterrupted run.

The LLM proposer's prompt shows the best programs with their scores: they come from the
checkpointed population, so the resumed run's prompts after the kill equal the
uninterrupted run's, and so does the outcome.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from _resume import kill_at_block, logging_model, read_prompts, resume_and_rerun

from optiforge.agents.evolve import SPEC, EvolveConfig
from optiforge.agents.kit import EVALUATIONS, RunContext
from optiforge.evals.registry import resolve_task
from optiforge.runs import FileTracer
from optiforge.testing import FunctionLLM

BUDGET, BLOCK_AT = 7, 5  # 2 proposals a round; the child is killed inside round 3's first call
CONFIG = {
    "search": {"max_evaluations": BUDGET, "proposals_per_round": 2, "population_size": 10},
    "parents_shown": 10,
}  # every program stays in the prompt: each round asks anew


def _reply(messages: list[dict[str, Any]]) -> str:
    """A deterministic model: the program is a function of the prompt alone."""
    h = int(hashlib.sha256(messages[-1]["content"].encode()).hexdigest()[:8], 16)
    a, b = (h % 997) / 100 - 5, (h // 997 % 991) / 100 - 5
    return f"```python\ndef f(x):\n    return {a:.2f} * x + {b:.2f}\n```"


def solve(run_dir: Path, prompts: Path, *, block_at: int | None, resume: bool) -> Any:
    """Run evolve with a prompt-logging model; ``block_at``: hang inside that LLM call."""

    model = logging_model(prompts, block_at, _reply)

    run_dir.mkdir(parents=True, exist_ok=True)
    llm = FunctionLLM(model)
    # one call at a time, so the kill lands inside a known call and the prompt log has a
    # fixed order (concurrent rounds: tests/agents/evolve/test_evolve_concurrent.py)
    llm.ordered_replies = True  # type: ignore[attr-defined]
    ctx = RunContext(llm=llm, tracer=FileTracer(run_dir / "events.jsonl"), seed=0,
                     run_dir=run_dir, agent="evolve")  # fmt: skip
    task = resolve_task("funcfit/sine@dev")
    return SPEC.build(task, EvolveConfig.model_validate(CONFIG), BUDGET).execute(ctx, resume=resume)


@pytest.mark.timeout(1800)  # a hang guard, not a measure: loaded machines are slow
def test_kill_and_resume_proposes_as_the_uninterrupted_run(tmp_path: Path) -> None:
    killed, prompts = tmp_path / "a" / "run", tmp_path / "a" / "prompts.jsonl"
    killed.parent.mkdir()
    kill_at_block(__file__, killed, prompts, BLOCK_AT)
    before = read_prompts(prompts)
    assert len(before) == BLOCK_AT
    logged = len((killed / EVALUATIONS).read_text().splitlines())
    assert logged == 1 + 2 * 2  # the seed and rounds 1 and 2

    after, resumed, straight, fresh = resume_and_rerun(solve, killed, prompts, tmp_path / "b")
    # The killed call's round is proposed again from the checkpointed population: every
    # prompt from that round on is the uninterrupted run's.
    assert after == straight[BLOCK_AT - 1 :]
    assert before == straight[:BLOCK_AT]
    assert "Program 3 (score" in after[0][-1]["content"]  # the scored programs are shown
    assert resumed.model_dump() == fresh.model_dump()
    assert resumed.n_evaluations == BUDGET
    ids = [json.loads(x)["id"] for x in (killed / EVALUATIONS).read_text().splitlines()]
    assert len(ids) == len(set(ids)) == BUDGET  # no evaluation was repeated
