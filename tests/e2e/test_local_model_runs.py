"""Every agent through the real LLM path: ``optiforge run AGENT --model local`` (the embedded
SmolLM2-135M-Instruct behind its own OpenAI-compatible server, litellm in the provider
process), a small budget each.

A 135M model rarely writes a valid kernel or reformulation, so a run may end ``failed``
(exit 1: not one LLM proposal was valid); what must hold is that it ends on its own terms
with complete records: real LLM calls with real token counts, the run's status in its
summary and manifest, every evaluation logged. ``make test`` runs these (CI with
``OPTIFORGE_REQUIRE_LOCAL_LLM=1``, so a broken install fails instead of skipping);
``pytest -m local_llm`` runs them alone.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.local_llm, pytest.mark.slow]

RUNS: dict[str, list[str]] = {
    "evolve": ["--bench", "funcfit/quadratic", "--budget", "4",
               "--set", "agent.search.proposals_per_round=2"],
    # one refresh: the RBF-ARD seed kernel and one LLM kernel (a form and its code)
    "kernel-discovery": ["--bench", "hdbo/branin2_in_100", "--budget", "11",
                         "--set", "agent.seed_kernels=[]",
                         "--set", "agent.kernel_evals_per_refresh=2",
                         "--set", "agent.proposals_per_round=1",
                         "--set", "agent.max_code_reasks=0"],
    "hawkeye": ["--bench", "kernelarena/t2t_add", "--budget", "2",
                "--set", "agent.search.proposals_per_round=1"],
    "autorem": ["--bench", "autoro/autoro-dev-d1-0000-s0", "--set", "agent.max_attempts=1"],
    "agent-cbo": ["--bench", "cbo/toy_graph", "--budget", "3", "--set", "agent.llm_every=2"],
}  # fmt: skip


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("agent", list(RUNS))
def test_agent_runs_on_the_local_model(agent: str, tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = subprocess.run(
        [sys.executable, "-m", "optiforge.cli", "run", agent, *RUNS[agent],
         "--model", "local", "--memory", "none", "--out", str(out)],
        # a hang guard, not a measure: kernel-discovery took 520 s beside 4 busy loops (load
        # ~7.5 on 2 cores) against 900 s before, which a busier machine exceeded
        capture_output=True, text=True, timeout=3600,
        env={**os.environ, "COLUMNS": "200", "OMP_NUM_THREADS": "1"},
    )  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert proc.returncode == {"finished": 0, "failed": 1}[summary["status"]], proc.stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == summary["status"]
    assert summary["model"] == "local"
    events = _jsonl(out / "events.jsonl")
    calls = [e for e in events if e["kind"] == "llm_call"]
    assert calls and summary["llm_calls"] == len(calls)
    assert all(e["ok"] and e["tokens_in"] > 0 and e["tokens_out"] > 0 for e in calls)
    assert all(e["model"] == "openai/smollm2-135m-instruct" for e in calls)
    assert summary["cost_usd"] == 0.0 and summary["unpriced_calls"] == 0  # known to be free
    assert events[0]["kind"] == "run_started" and events[-1]["kind"] == "run_finished"
    if (out / "evaluations.jsonl").exists():  # the search agents log every evaluation
        assert len(_jsonl(out / "evaluations.jsonl")) >= 1
