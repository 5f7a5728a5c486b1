"""AutoREM resume: kill -9 mid-repair, resume, and write exactly as an uninterrupted run.

The repair prompt (the conversation so far plus the verifier's verdict) is rebuilt from
the checkpointed graph state, so the resumed run's prompts after the kill equal the
uninterrupted run's, the rejected first attempt is not run again, and the outcome is
the same.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from autorem_helpers import sloppy_model, task

from optiforge.agents.autorem import SPEC, AutoREMConfig
from optiforge.agents.kit import RunContext
from optiforge.runs import FileTracer
from optiforge.testing import FunctionLLM

BLOCK_AT = 2  # the child is killed inside the repair call (attempt 1 was rejected)

CHILD = """
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
import test_autorem_resume as t
t.solve(Path(sys.argv[2]), Path(sys.argv[3]), block_at=int(sys.argv[4]), resume=False)
"""


def solve(run_dir: Path, prompts: Path, *, block_at: int | None, resume: bool) -> Any:
    """Run AutoREM with a prompt-logging model; ``block_at``: hang inside that LLM call."""

    def model(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        with prompts.open("a") as fh:
            fh.write(json.dumps(messages) + "\n")
        n = len(prompts.read_text().splitlines())
        if block_at is not None and n == block_at:
            Path(str(prompts) + ".blocked").write_text(str(n))
            time.sleep(600)
        return sloppy_model(messages, tools, schema)

    run_dir.mkdir(parents=True, exist_ok=True)
    ctx = RunContext(llm=FunctionLLM(model), tracer=FileTracer(run_dir / "events.jsonl"), seed=0,
                     run_dir=run_dir, agent="autorem")  # fmt: skip
    return SPEC.build(task("dev", 0, 1), AutoREMConfig(), None).execute(ctx, resume=resume)


def _attempts(run_dir: Path) -> list[dict[str, Any]]:
    lines = [json.loads(x) for x in (run_dir / "events.jsonl").read_text().splitlines()]
    return [e for e in lines if e["kind"] == "autorem_attempt"]


def _prompts(path: Path) -> list[Any]:
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.timeout(240)
def test_kill_and_resume_proposes_as_the_uninterrupted_run(tmp_path: Path) -> None:
    killed, prompts = tmp_path / "a" / "run", tmp_path / "a" / "prompts.jsonl"
    killed.parent.mkdir()
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    here = str(Path(__file__).resolve().parent)
    child = subprocess.Popen([sys.executable, "-c", CHILD, here, str(killed), str(prompts), str(BLOCK_AT)],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    blocked = Path(str(prompts) + ".blocked")
    deadline = time.monotonic() + 150
    try:
        while not blocked.exists():
            if child.poll() is not None:
                pytest.fail(f"child exited early: {child.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
            assert time.monotonic() < deadline, "child never reached the kill point"
            time.sleep(0.1)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=30)
    finally:
        if child.poll() is None:
            child.kill()
    before = _prompts(prompts)
    assert len(before) == BLOCK_AT
    assert [a["passed"] for a in _attempts(killed)] == [False]

    prompts.unlink()
    resumed = solve(killed, prompts, block_at=None, resume=True)
    after = _prompts(prompts)

    fresh_prompts = tmp_path / "b" / "prompts.jsonl"
    fresh = solve(tmp_path / "b" / "run", fresh_prompts, block_at=None, resume=False)
    straight = _prompts(fresh_prompts)
    # The killed repair call is made again from the checkpointed conversation.
    assert after == straight[BLOCK_AT - 1 :] and len(straight) == BLOCK_AT
    assert before == straight
    assert "The verifier rejected" in after[0][-1]["content"]
    assert resumed.model_dump() == fresh.model_dump()
    assert resumed.extra["solved"] and resumed.n_evaluations == 2
    # The rejected first attempt ran once, before the kill; only the repair ran after it.
    assert [a["passed"] for a in _attempts(killed)] == [False, True]
