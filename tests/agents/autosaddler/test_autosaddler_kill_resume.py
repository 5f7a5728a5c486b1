"""AutoSaddler resume: kill -9 inside a tuning round's episode, resume, end as an
uninterrupted run.

The tuning graph checkpoints after each node (the base measurement, each round); the
terminal agent it tunes answers through a prompt-logging simulated shell model. The child
is killed inside one of the last LLM calls of the run (in the second round): the resumed
run redoes only the interrupted node, asking exactly the uninterrupted run's last prompts
in the same order (command outputs aside: they show the sandbox's random uid), and its outcome (every round's verdict, the tuned harness) is the same.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _resume import kill_at_block, logging_model, read_prompts

from optiforge.agents.autosaddler import SaddlerConfig, TerminalTarget, tune
from optiforge.agents.kit import RunContext
from optiforge.agents.terminal.testing import SimulatedShellModel
from optiforge.sandboxes import get_sandbox
from optiforge.testing import FunctionLLM

SMALL = {"iterations": 2, "batch": 2, "runs": 1, "val_tasks": 3, "val_runs": 1, "workers": 1}
BEFORE_END = 2
"""The child is killed inside the run's last-but-``BEFORE_END`` LLM call (round 2)."""


def _shape(prompts: list[Any]) -> list[list[tuple[str, str]]]:
    """Each call's conversation without the command outputs (they hold the sandbox's fresh
    random uid and timestamps, e.g. ``ls -l``): roles, the task, and every action taken."""
    return [
        [
            (m["role"], "" if m["role"] == "user" and i > 1 else str(m["content"]))
            for i, m in enumerate(p)
        ]  # fmt: skip
        for p in prompts
    ]


def solve(run_dir: Path, prompts: Path, *, block_at: int | None, resume: bool) -> Any:
    """Tune the terminal harness, its agent answering through a prompt-logging model."""
    run_dir.mkdir(parents=True, exist_ok=True)
    sandbox = get_sandbox("local")

    def agent_llm(seed: int) -> FunctionLLM:
        shell = SimulatedShellModel(seed)
        return FunctionLLM(logging_model(prompts, block_at, lambda m: shell(m, None, None)))

    target = TerminalTarget(agent_llm, sandbox)
    ctx = RunContext(sandbox=sandbox, run_dir=run_dir)
    return tune(target, SaddlerConfig(**SMALL), ctx, resume=resume)


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a hang guard, not a measure: loaded machines are slow
def test_kill_in_round_two_and_resume_ends_as_the_uninterrupted_run(tmp_path: Path) -> None:
    straight_prompts = tmp_path / "fresh" / "prompts.jsonl"
    fresh = solve(tmp_path / "fresh" / "run", straight_prompts, block_at=None, resume=False)
    straight = read_prompts(straight_prompts)
    block_at = len(straight) - BEFORE_END

    killed, prompts = tmp_path / "k" / "run", tmp_path / "k" / "prompts.jsonl"
    kill_at_block(__file__, killed, prompts, block_at)
    assert _shape(read_prompts(prompts)) == _shape(straight[:block_at])  # the same run so far

    prompts.unlink()
    resumed = solve(killed, prompts, block_at=None, resume=True)
    after = read_prompts(prompts)
    # only the interrupted node ran again: fewer calls than a restart, the same last prompts
    assert 0 < len(after) < len(straight)
    assert _shape(after) == _shape(straight[len(straight) - len(after) :])
    assert resumed.model_dump() == fresh.model_dump()
    assert [r["accepted"] for r in resumed.extra["history"]] == [
        r["accepted"] for r in fresh.extra["history"]
    ]
