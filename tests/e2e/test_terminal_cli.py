"""``optiforge run terminal`` as a user runs it: in a fresh directory, with a model on a
local OpenAI-compatible server, the agent and its base-harness baseline both run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from optiforge.evals.registry import resolve_task


def test_run_terminal_in_a_fresh_directory_runs_agent_and_baseline(
    tmp_path: Path,
    openai_server,  # type: ignore[no-untyped-def]
) -> None:
    task = resolve_task("saddle/normalize-names")
    sol = task.solution()

    def reply(body: dict[str, Any]) -> str:
        # the reference solution, one command a turn, then submit (every episode anew)
        n = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return json.dumps({"command": sol[n]} if n < len(sol) else {"submit": True})

    openai_server.handler = reply
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    out = subprocess.run(
        [sys.executable, "-m", "optiforge.cli", "run", "terminal", "-b", "saddle/normalize-names",
         "--model", "openai/test-model", "--api-base", openai_server.url, "--memory", "none"],
        capture_output=True, text=True, timeout=300, cwd=fresh,
        env={**os.environ, "OPENAI_API_KEY": "sk-test", "COLUMNS": "200"},
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-800:] + out.stderr[-800:]
    (run_dir,) = (fresh / "runs").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["best_score"] == 1.0
    # the baseline ran too (its own episode: the same model, the base harness)
    assert summary["baseline_name"] == "base-harness" and summary["baseline_score"] == 1.0
    assert openai_server.count == 2 * (len(sol) + 1)
