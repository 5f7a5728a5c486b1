"""The task family of ``saddle``: what an agent (``terminal``, and AutoSaddler through it)
may read from a shell task.

A runtime-checkable Protocol declared beside the suite's tasks; agents import it instead of
the suite's modules.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from optiforge.evals.protocol import Task


@runtime_checkable
class SaddleTask(Task, Protocol):
    """A shell task: a work dir, an instruction, one command at a time, a hidden test
    (``evaluate`` replays ``{"commands": [...]}`` from the initial files)."""

    instruction: str
    """What the agent is asked to do."""

    def initial_files(self) -> dict[str, bytes]:
        """The work dir's starting files (relative path -> bytes)."""
        ...

    def step(
        self,
        files: dict[str, bytes],
        command: str,
        sandbox: Any | None = None,
        timeout_s: float = 30.0,
    ) -> tuple[dict[str, bytes], dict[str, Any]]:
        """Run one shell command over ``files``: the files afterwards and ``{"returncode",
        "stdout", "stderr", "timed_out", "seconds"}``."""
        ...
