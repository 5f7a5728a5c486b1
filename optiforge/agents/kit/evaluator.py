"""``SandboxedTaskEvaluator``: the one evaluator the search loop ships to its workers.

It is picklable (an executor may run it in another process) and scores a payload with
the task's own ``evaluate`` in a fresh sandbox, so every number comes from the suite's
harness, never from the agent or the candidate.
"""

from __future__ import annotations

from typing import Any

from optiforge.agents.kit.context import RunContext
from optiforge.evals.protocol import Score, Task
from optiforge.runs import EVENTS


class SandboxedTaskEvaluator:
    """``payload -> Score``: ``task.evaluate(payload, a fresh sandbox of backend)``."""

    def __init__(self, task: Task, backend: str = "local", events_path: str | None = None) -> None:
        self.task = task
        self.backend = backend
        self.events_path = events_path
        """Sandbox runs are traced to this events file (None: not traced)."""

    def for_run(self, ctx: RunContext) -> SandboxedTaskEvaluator:
        """This evaluator tracing to the run's events file (``run_dir/events.jsonl``), unless
        it already has one; unchanged without a run directory."""
        if self.events_path is not None or ctx.run_dir is None:
            return self
        return SandboxedTaskEvaluator(self.task, self.backend, str(ctx.run_dir / EVENTS))

    def __call__(self, payload: dict[str, Any]) -> Score:
        from optiforge.runs import FileTracer
        from optiforge.sandboxes import get_sandbox

        tracer = FileTracer(self.events_path) if self.events_path else None
        return self.task.evaluate(payload, get_sandbox(self.backend, tracer=tracer))
