"""A round's LLM proposals are in flight together, and give what one-by-one calls give."""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path
from typing import Any

from optiforge.config import RunSettings
from optiforge.evals.registry import resolve_task
from optiforge.harness.runner import run_task
from optiforge.harness.summary import RunSummary
from optiforge.testing import FunctionLLM


class Model:
    """A reply that is a function of the prompt; records how many calls overlap."""

    def __init__(self, delay_s: float) -> None:
        self.delay_s, self.lock = delay_s, threading.Lock()
        self.in_flight = self.peak = 0

    def __call__(self, messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        with self.lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        time.sleep(self.delay_s)  # a provider taking its time: lets calls overlap
        with self.lock:
            self.in_flight -= 1
        h = int(hashlib.sha256(messages[-1]["content"].encode()).hexdigest()[:6], 16)
        return f"```python\ndef f(x):\n    return {h % 97 / 10:.1f} * x * x\n```"


def _run(tmp: Path, name: str, model: Model) -> RunSummary:
    settings = RunSettings(budget=9, memory="none", agent={"search": {"proposals_per_round": 4}})
    return run_task("evolve", resolve_task("funcfit/quadratic@dev"), settings, tmp / name,
                    with_baseline=False, llm=FunctionLLM(model))  # fmt: skip


def test_round_calls_overlap_and_results_do_not_depend_on_it(tmp_path: Path) -> None:
    slow, instant = Model(0.3), Model(0.0)
    a, b = _run(tmp_path, "slow", slow), _run(tmp_path, "instant", instant)
    assert slow.peak == 4  # the round's four variants were in flight together
    assert (a.best_score, a.n_evaluations, a.trace) == (b.best_score, b.n_evaluations, b.trace)
    assert a.llm_calls == b.llm_calls == 8


def test_call_cap_cuts_the_batch_before_asking(tmp_path: Path) -> None:
    """--max-llm-calls 3 with 4 variants a round: exactly the first 3 are asked."""
    model = Model(0.05)
    settings = RunSettings(budget=20, max_llm_calls=3, memory="none",
                           agent={"search": {"proposals_per_round": 4}})  # fmt: skip
    s = run_task("evolve", resolve_task("funcfit/quadratic@dev"), settings, tmp_path / "cap",
                 with_baseline=False, llm=FunctionLLM(model))  # fmt: skip
    assert s.llm_calls == 3 and s.n_evaluations == 1 + 3
    assert s.status == "stopped"
