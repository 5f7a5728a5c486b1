"""The progress bars of ``optiforge run``: the agent's bar, then one per later phase.

The runner reports phases after the agent's search (``{"phase": "baseline seed", ...}``,
``harness.runner``); each gets its own bar, so a wait after the agent's bar is full says
what it waits for. An agent's ``"status"`` (what it is doing now, e.g. EPB's sandbox runs
before its first round) shows beside its bar.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class RunBars:
    """``progress(info)`` for ``run_task``: updates the current bar, opens one per phase."""

    def __init__(
        self, prog: Any, title: str, total: int | None, cost: Callable[[dict[str, Any]], str]
    ) -> None:
        self.prog, self.cost = prog, cost
        self.bar = prog.add_task(title, total=total, info="")
        self.agent_bar = self.bar
        self.phase: tuple[Any, str, bool] | None = None
        """The open phase's bar, its status text, whether it reported counts of its own."""

    def finish(self, n_evaluations: int | None = None) -> None:
        """Close the open phase's bar: one wait done (its own counts, when it had any).

        ``n_evaluations``: the run's count in its summary; the agent's bar then shows it (an
        agent that reports no progress left its bar at 0 while the table counted them).
        """
        if n_evaluations is not None:
            task = next(t for t in self.prog.tasks if t.id == self.agent_bar)
            total = max(int(task.total or 0), n_evaluations)
            self.prog.update(self.agent_bar, completed=n_evaluations, total=total or None)
        if self.phase is None:
            return
        bar, status, counted = self.phase
        if counted:
            self.prog.update(bar, info=f"{status} · done")
        else:  # a wait without a count of its own: one step, done
            self.prog.update(bar, total=1, completed=1, info=f"{status} · done")
        self.phase = None

    def __call__(self, info: dict[str, Any]) -> None:
        phase = info.get("phase")
        total = info.get("max_evaluations")
        if isinstance(phase, str):  # a new wait after the agent's search: a bar of its own
            self.finish()
            status = str(info.get("status") or "")
            # no total until it reports one: rich shows a pulsing bar and the elapsed time
            self.bar = self.prog.add_task(phase, total=None, info=status)
            self.phase = (self.bar, status, False)
            return
        if self.phase is not None and "evaluations" in info:
            self.phase = (self.phase[0], self.phase[1], True)
        best = info.get("best")
        # the agent's own observation; the final table shows the harness's re-measurement
        parts = [str(info["status"])] if info.get("status") else []
        if isinstance(best, float):
            parts.append(f"observed best {best:.5g}")
        if info.get("llm_calls"):
            parts.append(f"{info['llm_calls']} LLM calls, {self.cost(info)}")
        # the agent's own count of what it may spend (rounds, a clamped budget) when it
        # reports one, so the bar's total is the unit of its counter
        kw: dict[str, Any] = {"total": total} if isinstance(total, int) and total > 0 else {}
        if "evaluations" in info:
            kw["completed"] = info["evaluations"]
        self.prog.update(self.bar, info=" · ".join(parts), **kw)
