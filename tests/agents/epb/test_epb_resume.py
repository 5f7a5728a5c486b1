"""epb resume: kill -9 mid-run, resume, and ask exactly as an uninterrupted run.

The bank, its atoms and coefficients, the router fit and the history are the checkpointed
state of every round; the program scores along the teacher's trajectories are a per-run
cache (``ctx.memo``) that a resumed run recomputes (they are deterministic). So a resumed
run re-runs the killed round: the LLM gets the uninterrupted run's prompts from that
round's first request (the textual gradient) on, and the portfolio is the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _resume import kill_at_block, logging_model, read_prompts, resume_and_rerun

from optiforge.agents.epb import SPEC, EPBConfig
from optiforge.agents.kit import RunContext
from optiforge.evals.registry import resolve_task
from optiforge.runs import FileTracer
from optiforge.testing import FunctionLLM
from optiforge.testing.epb import reply

BUDGET, BLOCK_AT = 2, 5
"""Round 1 asks 3 times (the critique, two rewrites); the kill lands in round 2's first rewrite."""
CONFIG = {"train_tours": 6, "val_tours": 3, "router_steps": 40, "guard_tours": 4, "cases": 3,
          "block2_every": 2, "seeds": ["nearest", "farthest", "stranding"]}  # fmt: skip
"""Small, and block II (an LLM boost) after round 2."""


def solve(run_dir: Path, prompts: Path, *, block_at: int | None, resume: bool) -> Any:
    """Run epb with the scripted EPB model logging its prompts; ``block_at``: hang inside
    that LLM call."""
    run_dir.mkdir(parents=True, exist_ok=True)
    model = logging_model(prompts, block_at, lambda m: reply(str(m[-1]["content"])))
    ctx = RunContext(llm=FunctionLLM(model), tracer=FileTracer(run_dir / "events.jsonl"), seed=0,
                     run_dir=run_dir, agent="epb")  # fmt: skip
    task = resolve_task("nco/tsp20@dev")
    return SPEC.build(task, EPBConfig.model_validate(CONFIG), BUDGET).execute(ctx, resume=resume)


def _is_critique(messages: list[dict[str, Any]]) -> bool:
    """A round's first request: the textual gradient (``proposers.gradient_prompt``)."""
    return "Write a short critique" in str(messages[-1]["content"])


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a hang guard, not a measure: loaded machines are slow
def test_kill_and_resume_asks_as_the_uninterrupted_run(tmp_path: Path) -> None:
    killed, prompts = tmp_path / "a" / "run", tmp_path / "a" / "prompts.jsonl"
    killed.parent.mkdir()
    kill_at_block(__file__, killed, prompts, BLOCK_AT)
    before = read_prompts(prompts)
    assert len(before) == BLOCK_AT

    after, resumed, straight, fresh = resume_and_rerun(solve, killed, prompts, tmp_path / "b")
    assert before == straight[:BLOCK_AT]
    rounds = [i for i, m in enumerate(straight) if _is_critique(m)]
    assert (
        len(rounds) == BUDGET and rounds[1] < BLOCK_AT - 1
    )  # killed in round 2, after its critique
    assert after == straight[rounds[1] :]  # round 2 asked again from its critique on
    assert any("NEW heuristic program" in str(m[-1]["content"]) for m in after)  # block II's boost
    assert resumed.model_dump() == fresh.model_dump()
    assert resumed.n_evaluations == BUDGET and resumed.extra["history"][0]["gradient"] == "llm"
