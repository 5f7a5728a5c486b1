"""A spending cap keeps what was paid for: replies received before the cap are evaluated."""

from __future__ import annotations

from pathlib import Path

from optiforge.config import RunSettings
from optiforge.evals.registry import resolve_task
from optiforge.harness.runner import run_task
from optiforge.testing import ScriptedLLM

REPLY = "```python\ndef f(x):\n    return {k} * x * x\n```"


def test_llm_call_cap_mid_round_evaluates_the_paid_replies(tmp_path: Path) -> None:
    """--max-llm-calls 3 with 4 proposals a round: the 3 replies are evaluated (they were
    thrown away before), then the run stops on the cap, status ``stopped``."""
    llm = ScriptedLLM([REPLY.format(k=k) for k in (1, 2, 3, 4, 5)])
    settings = RunSettings(budget=20, max_llm_calls=3, memory="none",
                           agent={"search": {"proposals_per_round": 4}})  # fmt: skip
    summary = run_task("evolve", resolve_task("funcfit/quadratic@dev"), settings, tmp_path / "r",
                       with_baseline=False, llm=llm)  # fmt: skip
    assert len(llm.calls) == 3
    assert summary.n_evaluations == 1 + 3  # the seed and the three paid replies
    assert summary.stop_reason.startswith("budget exhausted")
    assert summary.status == "stopped"
