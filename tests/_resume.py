"""Kill -9 and resume, shared by the agents' resume tests.

A test module defines ``solve(run_dir, prompts, *, block_at, resume)`` that runs its agent
with ``logging_model(prompts, block_at, reply)`` as the LLM; ``kill_at_block`` runs that
``solve`` in a child process, waits until the child hangs inside LLM call ``block_at``,
and SIGKILLs it, so the kill lands at a known point.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parent
CHILD = """
import sys
from pathlib import Path
sys.path[:0] = [sys.argv[1], sys.argv[2]]
t = __import__(sys.argv[3])
t.solve(Path(sys.argv[4]), Path(sys.argv[5]), block_at=int(sys.argv[6]), resume=False)
"""

Reply = Callable[[list[dict[str, Any]]], str]


def logging_model(prompts: Path, block_at: int | None, reply: Reply) -> Callable[..., str]:
    """A ``FunctionLLM`` model that appends each prompt to ``prompts`` and answers with
    ``reply(messages)``; the ``block_at``-th call writes ``PROMPTS.blocked`` and hangs."""

    def model(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        with prompts.open("a") as fh:
            fh.write(json.dumps(messages) + "\n")
        n = len(prompts.read_text().splitlines())
        if block_at is not None and n == block_at:
            Path(str(prompts) + ".blocked").write_text(str(n))
            time.sleep(600)
        return reply(messages)

    return model


def read_prompts(path: Path) -> list[Any]:
    """The prompts a ``logging_model`` wrote, in call order."""
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def kill_at_block(test_file: str, run_dir: Path, prompts: Path, block_at: int) -> None:
    """Run ``solve`` of the module at ``test_file`` in a child; SIGKILL it inside call
    ``block_at`` (fails the test if the child exits first or never gets there)."""
    here = Path(test_file).resolve()
    env = {**os.environ, "PYTHONPATH": str(TESTS.parent)}
    args = [str(here.parent), str(TESTS), here.stem, str(run_dir), str(prompts), str(block_at)]
    child = subprocess.Popen([sys.executable, "-c", CHILD, *args], env=env,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    blocked = Path(str(prompts) + ".blocked")
    # a safety net against a hung child (the kill point is an event, not a time): generous,
    # so a loaded machine that takes minutes to import and reach it does not fail the test
    deadline = time.monotonic() + 900
    try:
        while not blocked.exists():
            if child.poll() is not None:
                err = child.stderr.read().decode() if child.stderr else ""
                pytest.fail(f"child exited early: {err[-2000:]}")
            assert time.monotonic() < deadline, "child never reached the kill point"
            time.sleep(0.1)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=120)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == -signal.SIGKILL


def resume_and_rerun(
    solve: Callable[..., Any], killed: Path, prompts: Path, fresh_dir: Path
) -> tuple[list[Any], Any, list[Any], Any]:
    """After ``kill_at_block``: resume the killed run, then run the same task uninterrupted
    in ``fresh_dir``; returns (prompts after the resume, its outcome, the uninterrupted
    run's prompts, its outcome)."""
    prompts.unlink()
    resumed = solve(killed, prompts, block_at=None, resume=True)
    after = read_prompts(prompts)
    fresh_prompts = fresh_dir / "prompts.jsonl"
    fresh = solve(fresh_dir / "run", fresh_prompts, block_at=None, resume=False)
    return after, resumed, read_prompts(fresh_prompts), fresh
