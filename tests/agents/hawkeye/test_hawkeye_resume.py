"""Hawkeye resume: kill -9 mid-run, resume, and propose exactly as an uninterrupted run.

The LLM proposer shows previous attempts with their failure reasons and lessons from
memory; both must come from what the run checkpointed (the search history, the memory
store), so the resumed run's prompts after the kill equal the uninterrupted run's.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from _kernels import SOFTMAX_JIT
from _resume import kill_at_block, logging_model, read_prompts, resume_and_rerun

from optiforge.agents.hawkeye import SPEC, HawkeyeConfig
from optiforge.agents.kit import EVALUATIONS, RunContext
from optiforge.evals.suites.kernelarena import KernelArenaBenchmark
from optiforge.memory import Store
from optiforge.runs import FileTracer
from optiforge.testing import FunctionLLM

BUDGET, BLOCK_AT = 5, 3  # the child is killed inside LLM call 3 (round 3's proposal)
CONFIG = {"arch": "interpreter", "strategies_per_task": 2,
          "search": {"max_evaluations": BUDGET, "proposals_per_round": 1, "population_size": 2}}  # fmt: skip


BAD = "import torch\n\n\ndef launch(x):\n    return torch.softmax(x, dim=-1)\n"
GOOD = (
    SOFTMAX_JIT
    + """

def launch(x):
    m, n = x.shape
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _softmax[(m,)](x, out, n, x.stride(0), x.stride(1), BLOCK_N=triton.next_power_of_2(n))
    return out  # variant {v}
"""
)


def _task() -> Any:
    return next(t for t in KernelArenaBenchmark().tasks("dev") if t.name == "torch_softmax")


def _reply(messages: list[dict[str, Any]]) -> str:
    """A deterministic model: the reply is a function of the prompt alone (a cheat first)."""
    user = messages[-1]["content"]
    if "FAILED" not in user:
        return f"```python\n{BAD}```"
    v = int(hashlib.sha256(user.encode()).hexdigest()[:6], 16) % 1000
    return f"```python\n{GOOD.format(v=v)}```"


def solve(run_dir: Path, prompts: Path, *, block_at: int | None, resume: bool) -> Any:
    """Run hawkeye with a prompt-logging model; ``block_at``: hang inside that LLM call."""

    model = logging_model(prompts, block_at, _reply)

    run_dir.mkdir(parents=True, exist_ok=True)
    store = Store(f"sqlite:///{run_dir / 'memory.db'}", embedder=None)
    ctx = RunContext(llm=FunctionLLM(model), memory=store, tracer=FileTracer(run_dir / "events.jsonl"),
                     seed=0, run_dir=run_dir, agent="hawkeye")  # fmt: skip
    try:
        return SPEC.build(_task(), HawkeyeConfig.model_validate(CONFIG), BUDGET).execute(
            ctx, resume=resume
        )
    finally:
        store.close()


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a hang guard, not a measure: loaded machines are slow
def test_kill_and_resume_proposes_as_the_uninterrupted_run(tmp_path: Path) -> None:
    # Both runs use a run directory of the same name: memory ids derive from it.
    killed, prompts = tmp_path / "a" / "run", tmp_path / "a" / "prompts.jsonl"
    killed.parent.mkdir()
    kill_at_block(__file__, killed, prompts, BLOCK_AT)
    before = read_prompts(prompts)
    assert len(before) == BLOCK_AT
    logged = len((killed / EVALUATIONS).read_text().splitlines())
    assert logged == 2  # the seed and round 2's kernel (round 1's cheat is rejected unscored)

    after, resumed, straight, fresh = resume_and_rerun(solve, killed, prompts, tmp_path / "b")
    # The killed call's round is proposed again, from the checkpointed history: every
    # prompt from the kill point on (previous attempts, failure reasons, memory lessons)
    # is the uninterrupted run's.
    assert after == straight[BLOCK_AT - 1 :]
    assert before == straight[:BLOCK_AT]
    assert "calls torch.softmax" in after[0][-1]["content"]  # the failed attempt is shown
    assert resumed.model_dump() == fresh.model_dump()
    assert resumed.n_evaluations == BUDGET
    ids = [json.loads(x)["id"] for x in (killed / EVALUATIONS).read_text().splitlines()]
    assert len(ids) == len(set(ids)) == BUDGET  # no evaluation was repeated
