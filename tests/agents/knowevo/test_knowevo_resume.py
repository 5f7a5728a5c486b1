"""knowevo resume: kill -9 mid-run, resume, and ask exactly as an uninterrupted run.

The tree, the measurements and the counters are the checkpointed state of every step; a
step's expansion draws from ``ctx.rng("expand", rollouts)``, so a resumed run re-runs the
killed step's expansion with the same split and evidence: the LLM's edit loop gets the
uninterrupted run's prompts from that expansion's first turn on, and the outcome (the
tree, the final strategy) is the same.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from _resume import kill_at_block, logging_model, read_prompts, resume_and_rerun

from optiforge.agents.kit import RunContext
from optiforge.agents.knowevo import SPEC, KnowEvoConfig
from optiforge.evals.registry import resolve_task
from optiforge.runs import FileTracer
from optiforge.testing import FunctionLLM

BUDGET, BLOCK_AT = 24, 6  # killed in the third expansion's second turn
CONFIG = {"picks_per_rollout": 3, "expand_every": 1, "min_measured": 6, "tests_per_expansion": 2,
          "recall_blocks": 0}  # fmt: skip
"""An expansion (two LLM turns, each one candidate test) after every rollout from the second."""


def _reply(messages: list[dict[str, Any]]) -> str:
    """A deterministic block writer: the block is a function of the conversation alone."""
    h = int(hashlib.sha256(json.dumps(messages).encode()).hexdigest()[:8], 16)
    k, w = h % 3 + 1, (h // 3 % 5) / 4
    return (f"```python\ndef score(variant, ctx):\n    \"\"\"about {k} substitutions\"\"\"\n"
            f"    return -abs(len(variant['mutations']) - {k}) * {w}\n```")  # fmt: skip


def solve(run_dir: Path, prompts: Path, *, block_at: int | None, resume: bool) -> Any:
    """Run knowevo with a prompt-logging model; ``block_at``: hang inside that LLM call."""
    run_dir.mkdir(parents=True, exist_ok=True)
    llm = FunctionLLM(logging_model(prompts, block_at, _reply))
    ctx = RunContext(llm=llm, tracer=FileTracer(run_dir / "events.jsonl"), seed=0,
                     run_dir=run_dir, agent="knowevo")  # fmt: skip
    task = resolve_task("protein/thermostability-a@dev")
    return SPEC.build(task, KnowEvoConfig.model_validate(CONFIG), BUDGET).execute(
        ctx, resume=resume
    )


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
    # an expansion's first turn is a one-message conversation; the resumed run re-runs the
    # killed step, so it asks from the first turn of the killed expansion on
    start = max(i for i, m in enumerate(straight) if len(m) == 1 and i < BLOCK_AT)
    assert 0 < start < BLOCK_AT - 1  # killed inside an expansion after its first turn
    assert after == straight[start:]
    assert resumed.model_dump() == fresh.model_dump()
    assert resumed.n_evaluations == BUDGET and resumed.extra["llm"]["asked"] == len(straight)
    # the tree file the outcome writes is the uninterrupted run's
    tree = json.loads((killed / "tree.json").read_text())
    assert tree == json.loads((tmp_path / "b" / "run" / "tree.json").read_text())
