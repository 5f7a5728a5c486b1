"""A resumed run's LLM ledger equals the uninterrupted run's (issue 42: 199 became 187).

The run is SIGKILLed inside an LLM call, resumed through the harness's ``run_task``, and
its ``summary.json`` counts (calls, tokens, unpriced calls) are compared with those of
the same seed run without a break.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from _resume import kill_at_block, logging_model, resume_and_rerun

from optiforge.config import RunSettings
from optiforge.evals.registry import resolve_task
from optiforge.harness.runner import run_task
from optiforge.testing import FunctionLLM

BUDGET, BLOCK_AT = 7, 5  # 2 proposals a round: killed inside round 3's first call
SETTINGS = RunSettings(
    budget=BUDGET,
    memory="none",
    agent={"search": {"proposals_per_round": 2, "population_size": 10}, "parents_shown": 10},
)
REPORTS: list[dict[str, Any]] = []  # progress reports of the runs made in this process


def _reply(messages: list[dict[str, Any]]) -> str:
    h = int(hashlib.sha256(messages[-1]["content"].encode()).hexdigest()[:8], 16)
    a, b = (h % 997) / 100 - 5, (h // 997 % 991) / 100 - 5
    return f"```python\ndef f(x):\n    return {a:.2f} * x + {b:.2f}\n```"


def solve(run_dir: Path, prompts: Path, *, block_at: int | None, resume: bool) -> dict[str, Any]:
    """evolve through the harness with a prompt-logging model; returns summary.json."""
    llm = FunctionLLM(logging_model(prompts, block_at, _reply))
    llm.ordered_replies = True  # type: ignore[attr-defined]
    task = resolve_task("funcfit/sine@dev")
    return run_task("evolve", task, SETTINGS, run_dir, llm=llm, resume=resume,
                    with_baseline=False, progress=REPORTS.append).row()  # fmt: skip


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a hang guard, not a measure
def test_resumed_summary_counts_the_calls_made_before_the_kill(tmp_path: Path) -> None:
    killed, prompts = tmp_path / "a" / "run", tmp_path / "a" / "prompts.jsonl"
    killed.parent.mkdir()
    kill_at_block(__file__, killed, prompts, BLOCK_AT)
    REPORTS.clear()
    after, resumed, straight, fresh = resume_and_rerun(solve, killed, prompts, tmp_path / "b")
    # the resumed run's first report (before any new evaluation) counts what its checkpoint
    # holds (a progress bar starts there, not at 0), with the calls that bought it, out of
    # the whole budget
    first = REPORTS[0]
    assert first["evaluations"] > 0 and first["max_evaluations"] == BUDGET
    assert 0 < first["llm_calls"] < BLOCK_AT
    assert len(after) < len(straight)  # the resume did not redo the calls before the kill
    assert fresh["llm_calls"] == len(straight) > 0
    for key in ("llm_calls", "tokens", "cost_usd", "unpriced_calls"):
        assert resumed[key] == fresh[key], key
    assert json.loads((killed / "summary.json").read_text())["llm_calls"] == fresh["llm_calls"]
