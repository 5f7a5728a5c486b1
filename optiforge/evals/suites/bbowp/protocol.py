"""``WordProblemTask``: the task family of black-box optimization word problems (what the
``formulator`` reads).

Declared beside the suite's tasks (``BBOWPTask`` is one) so agents import this Protocol,
never a suite module. Imports only ``evals.protocol`` and the standard library.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from optiforge.evals.protocol import Score, Task

if TYPE_CHECKING:  # pragma: no cover
    from optiforge.sandboxes import Sandbox


@runtime_checkable
class WordProblemTask(Task, Protocol):
    """A black box described in words; a candidate is a formulation ``{"space", "method"}``
    that ``evaluate`` runs for the instance's budget."""

    budget: int
    """Evaluations the formulated optimization runs (the instance fixes it)."""
    human: dict[str, Any]
    """The human-designed formulation (the ``human`` baseline)."""

    @property
    def knobs(self) -> dict[str, dict[str, Any]]:
        """The system's knobs as its API states them: ``kind``, ``low``/``high`` or
        ``choices`` (which of them matter is not said)."""
        ...

    def default_formulation(self) -> dict[str, Any]:
        """Every knob at its full valid range, linear scales, GP-BO (the paper's baseline)."""
        ...

    def pilot(
        self,
        formulation: Any,
        evals: int,
        sandbox: Sandbox | None = None,
        *,
        seed: int | None = None,
    ) -> Score:
        """A short run of ``formulation`` (at most half the budget) in the sandbox;
        ``details["evaluations"]`` lists what it saw."""
        ...
