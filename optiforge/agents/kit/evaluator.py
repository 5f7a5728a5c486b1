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

_SANDBOXES: dict[tuple[str, str | None, tuple[str, ...]], Any] = {}
"""Per process: (backend, events file, warm modules) -> its sandbox."""


def close_sandboxes() -> None:
    """Close this process's evaluation sandboxes (a warm one stops its zygote and removes
    its spool); the harness calls it when a run ends, a later run makes new ones."""
    while _SANDBOXES:
        _, sb = _SANDBOXES.popitem()
        close = getattr(sb, "close", None)
        if callable(close):
            close()


class SandboxedTaskEvaluator:
    """``payload -> Score``: ``task.evaluate(payload, the sandbox of backend)``.

    Each candidate runs in its own sandbox run. Bound to a run (``for_run``), it uses the
    run's own sandbox (``ctx.sandbox``: the back end the user chose, warm when the task
    declares ``warm_modules``, shared with the harness's re-measurements) in the run's
    process; a pickled copy (a process or Ray worker) drops that live handle and makes
    its sandbox once per process on first use: a task that declares ``warm_modules``
    (funcfit: numpy) gets a local sandbox whose zygote has imported them, so each
    candidate starts as a fork instead of a fresh interpreter
    (``optiforge.sandboxes.warm``; same containment promise, cold starts where the host
    cannot isolate forks).
    """

    def __init__(
        self,
        task: Task,
        backend: str = "local",
        events_path: str | None = None,
        sandbox: Any | None = None,
    ) -> None:
        self.task = task
        self.backend = backend
        self.events_path = events_path
        """Sandbox runs are traced to this events file (None: not traced)."""
        self.live = sandbox
        """The run's own sandbox (this process only: not pickled)."""

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "live": None}

    def sandbox(self) -> Any:
        """The sandbox this evaluation runs in: the run's own in its process, else the
        process's (made on first use, then shared by every copy of this evaluator in the
        process: an executor unpickles a fresh copy per call, and each must not start its
        own zygote)."""
        if self.live is not None:
            return self.live
        warm = tuple(getattr(self.task, "warm_modules", None) or ())
        warm = warm if self.backend == "local" else ()
        key = (self.backend, self.events_path, warm)
        if key not in _SANDBOXES:
            from optiforge.runs import FileTracer
            from optiforge.sandboxes import get_sandbox

            tracer = FileTracer(self.events_path) if self.events_path else None
            kw: dict[str, Any] = {"warm": list(warm)} if warm else {}
            _SANDBOXES[key] = get_sandbox(self.backend, tracer=tracer, **kw)
        return _SANDBOXES[key]

    def for_run(self, ctx: RunContext) -> SandboxedTaskEvaluator:
        """This evaluator bound to the run: in its sandbox (``ctx.sandbox``, whose back end
        workers in other processes use too) and tracing to its events file
        (``run_dir/events.jsonl``) unless it already has one."""
        backend = getattr(ctx.sandbox, "backend", None) or self.backend
        events = self.events_path
        if events is None and ctx.run_dir is not None:
            events = str(ctx.run_dir / EVENTS)
        return SandboxedTaskEvaluator(self.task, backend, events, ctx.sandbox)

    def __call__(self, payload: dict[str, Any]) -> Score:
        return self.task.evaluate(payload, self.sandbox())
