"""``TrainPlanTask``: the task family of the ``train`` suite (what the ``formulator`` reads
when it picks a training optimizer and its hyperparameters).

Declared beside the suite's tasks so agents import this Protocol, never a suite module.
Imports only ``evals.protocol`` and the standard library: the catalogue's methods reach an
agent as data (``options``), never as imported code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from optiforge.evals.protocol import Score, Task

if TYPE_CHECKING:  # pragma: no cover
    from optiforge.sandboxes import Sandbox

PLAN_KEYS = frozenset({"optimizer", "hparams"})
"""What a training plan says: ``{"optimizer": NAME, "hparams": {NAME: value}}``."""


@runtime_checkable
class TrainPlanTask(Task, Protocol):
    """A training problem described in words; a candidate is a training plan
    ``{"optimizer": NAME, "hparams": {...}}`` naming a catalogue method, which ``evaluate``
    runs for the task's step budget and scores on held-out data (lower is better)."""

    budget: int
    """Training steps every plan runs (the task fixes it)."""
    problem_kind: str
    """The problem's kind: ``classify``, ``lm``, ``lowrank`` or ``bilevel``."""
    facts: dict[str, float | int | str]
    """What the problem declares about itself (sizes, batch, steps, noise rate...): public,
    never a score or held-out data."""

    @property
    def options(self) -> dict[str, dict[str, Any]]:
        """The catalogue methods that apply to this problem, as data: per name its
        ``description`` and ``hparams`` (per hyperparameter ``low``, ``high``, ``default``,
        ``log``, ``kind``)."""
        ...

    def check_plan(self, candidate: Any) -> str | None:
        """None for a plan ``evaluate`` can run; else one line saying why not (an unknown
        optimizer, one that does not apply to this problem, an unknown hyperparameter, a
        value outside its range). Never runs the plan."""
        ...

    def default_plan(self) -> dict[str, Any]:
        """The fixed default: AdamW at its catalogue defaults (the ``adamw`` baseline)."""
        ...

    def tuned_plan(self, trials: int, seed: int) -> dict[str, Any]:
        """The strong reference: every applicable method tuned by ``trials`` random-search
        draws scored on a validation split (never the held-out one); the best plan, with
        what the search saw under ``"search"`` (ignored by ``evaluate``)."""
        ...

    def evaluate(
        self, candidate: Any, sandbox: Sandbox | None = None, *, seed: int | None = None
    ) -> Score:
        """Run the plan for ``budget`` steps from the harness's ``seed``; score held out."""
        ...
