"""``RLPlanTask``: the task family of the ``rl`` suite (what the ``formulator`` reads when
it poses a constrained or multi-objective control problem described in words and picks an
RL method and its hyperparameters).

Declared beside the suite's tasks so agents import this Protocol, never a suite module.
Imports only ``evals.protocol`` and the standard library: the catalogue's methods reach an
agent as data (``options``), never as imported code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from optiforge.evals.protocol import Score, Task

if TYPE_CHECKING:  # pragma: no cover
    from optiforge.sandboxes import Sandbox

PLAN_KEYS = frozenset({"kind", "env", "limits", "objective", "method", "hparams"})
"""What a control plan says: the posed problem (``kind``; ``limits`` for ``cmdp`` and
``statewise``, ``objective`` for ``mo-offline``; ``env`` optional, the task's when absent)
and the method that solves it, ``{"method": NAME, "hparams": {NAME: value}}``."""


@runtime_checkable
class RLPlanTask(Task, Protocol):
    """A control problem described in words; a candidate is a control plan (``PLAN_KEYS``)
    that poses the problem and names a catalogue RL method, which ``evaluate`` trains for
    the task's budget and scores on held-out episodes of the true problem (lower is
    better)."""

    budget: int
    """Environment steps (online) or gradient steps (offline) every plan runs."""
    kinds: tuple[str, ...]
    """The problem kinds a plan may pose (``cmdp``, ``statewise``, ``mo-offline``: the same
    for every task; which one the words describe is the formulator's to read)."""
    facts: dict[str, float | int | str]
    """What the controlled system declares about itself (environment spec, number of
    constraint costs or objectives, budget): public, never a score or the posed truth."""

    @property
    def options(self) -> dict[str, dict[str, Any]]:
        """The catalogue methods that import here, as data: per name its ``description``,
        the problem ``kinds`` it solves and ``hparams`` (per hyperparameter ``low``,
        ``high``, ``default``, ``log``, ``kind``)."""
        ...

    def check_plan(self, candidate: Any) -> str | None:
        """None for a plan ``evaluate`` can run; else one line saying why not (an unknown
        or unavailable method, one that does not solve the posed kind, a hyperparameter
        unknown or out of range, a posed problem inconsistent with the description's
        numbers). Never runs the plan."""
        ...

    def default_plan(self) -> dict[str, Any]:
        """The fixed default: ``ppo-lag`` (online) or ``linear-scalarization`` (offline) at
        its catalogue defaults on the problem posed as the words state it."""
        ...

    def tuned_plan(self, trials: int, seed: int) -> dict[str, Any]:
        """The strong reference: every applicable method, ``trials`` random-search draws
        each, scored on validation episodes (never the held-out ones); the best plan, with
        what the search saw under ``"search"`` (ignored by ``evaluate``)."""
        ...

    def evaluate(
        self, candidate: Any, sandbox: Sandbox | None = None, *, seed: int | None = None
    ) -> Score:
        """Train the plan's method on the posed problem from the harness's ``seed``; score
        the policy on held-out episodes of the true problem."""
        ...
