"""Kernel Discovery whose LLM kernels were all invalid says so (issue 42: it exited 0 with
0 of 12 valid LLM kernels), and its best candidate names the kernel, not only the data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import optiforge.agents.kernel_discovery as kd
from optiforge.config import RunSettings
from optiforge.evals.registry import resolve_task
from optiforge.harness.report import render_report
from optiforge.harness.runner import run_task
from optiforge.testing.scripted import FunctionLLM

SETTINGS = RunSettings(
    model="scripted",
    budget=12,
    memory="none",
    agent={"refresh_every": 4, "kernel_evals_per_refresh": 3, "proposals_per_round": 1,
           "seed_kernels": ["RBF_ARD"], "acq_restarts": 1, "acq_raw_samples": 16},
)  # fmt: skip


@pytest.mark.slow
def test_all_invalid_llm_kernels_fail_the_run_and_say_so(tmp_path: Path) -> None:
    asked: list[int] = []

    def reply(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        asked.append(1)
        return "I cannot write a kernel today."  # no form, no code: every proposal invalid

    task = resolve_task("hdbo/levy4_in_25@dev")
    out = run_task(kd.SPEC, task, SETTINGS, tmp_path / "run", llm=FunctionLLM(reply),
                   with_baseline=False)  # fmt: skip
    assert asked  # the model was asked
    counts = out.llm_proposals
    assert counts["made"] > 0 and counts["valid"] == 0
    assert out.status == "failed"
    assert f"0 of {counts['made']} LLM proposals were valid" in out.status_reason
    saved = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert saved["llm_proposals"] == counts and saved["status"] == "failed"
    assert out.best_score is not None  # the BO result stands: the model added nothing
    best = json.loads((tmp_path / "run" / "best" / "candidate.json").read_text())
    assert best["kernel"] == "RBF_ARD" and "X" in best  # re-scored data, named kernel
    html = render_report(tmp_path / "run").read_text()
    assert "<code>RBF_ARD</code></pre>" in html
