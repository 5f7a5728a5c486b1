"""``ROTask``: the task family of robust-optimization reformulation (what ``autorem`` reads).

Declared beside the suite's tasks (``benchmark.AutoROTask`` is one) so agents import this
Protocol, never a suite module. Imports only ``evals.protocol``, the standard library and,
for annotations, the solver types the members hold.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from optiforge.evals.protocol import Task

if TYPE_CHECKING:  # pragma: no cover
    from optiforge.solvers.robust.instance import ROInstance


@runtime_checkable
class ROTask(Task, Protocol):
    """One robust-optimization instance whose ``evaluate`` verifies a candidate program
    (or, on a text-only task, a formulation ``{"model", "code"}``) itself."""

    instance: ROInstance
    """The instance: its model (hidden on a text-only task: read only ``statement``)."""
    text_only: bool | None
    """The agent reads words only (it writes the model itself)."""
    timeout_s: float
    """Wall-clock limit of one candidate program in the sandbox."""

    @property
    def statement(self) -> str:
        """The problem as words (what a text-only task's modelling step reads)."""
        ...

    def tolerance_line(self) -> str:
        """The tolerances the task scores with (printed in every report)."""
        ...
