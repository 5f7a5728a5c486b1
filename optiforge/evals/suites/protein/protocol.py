"""``ProteinTask``: what an agent may read from a ``protein`` task (the task family KnowEvo
runs on).

The suite's tasks (``protein.ProteinTask``, a dataclass) satisfy it; agents import this
Protocol, never the suite's modules. A candidate is a strategy ``{"blocks": {name:
source}, "weights": {name: weight}}`` of expertise blocks; block code runs only in the
sandbox.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from optiforge.evals.protocol import Task

if TYPE_CHECKING:  # pragma: no cover - a type only; the suite's tasks import sandboxes lazily
    from optiforge.sandboxes import Sandbox


class LandscapeInfo(Protocol):
    """The public face of a task's hidden fitness landscape."""

    property: str
    """The property fitness measures (``thermostability`` or ``solubility``)."""


@runtime_checkable
class ProteinTask(Task, Protocol):
    """A variant-ranking task: a held-in pool measurable within a budget, a hidden test pool."""

    budget: int
    """Measurements (oracle calls on held-in variants) one run may spend."""
    landscape: LandscapeInfo

    @property
    def heldin(self) -> list[dict[str, Any]]:
        """The held-in variants (``mutations`` and sequence features, no fitness); their
        index is the id ``measure`` takes."""
        ...

    def measure(self, ids: list[int]) -> list[float]:
        """The measured fitness of held-in variants ``ids`` (the oracle: each one counts
        against the budget)."""
        ...

    def score_strategies(
        self, strategies: list[dict[str, Any]], sandbox: Sandbox | None = None
    ) -> list[dict[str, Any]]:
        """Each strategy run on the held-in pool in the sandbox: ``scores`` (one per
        variant), ``blocks`` (each block's z-scored outputs) and ``errors`` (per block)."""
        ...
