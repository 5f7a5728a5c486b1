"""The benchmark contract every suite implements: ``Benchmark`` -> ``Task`` -> ``Score``.

A ``Task`` is one problem configuration (a function to optimise, an RO instance, a
kernel with shapes...). ``Task.evaluate`` re-measures a candidate itself: an agent's
claim about its own candidate is never trusted. Splits: ``dev`` (visible to agents and
developers), ``test`` (in-distribution, unseen) and ``heldout`` (unseen configurations).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:  # pragma: no cover
    from optiforge.sandboxes import Sandbox

SPLITS: tuple[str, ...] = ("dev", "test", "heldout")


class Score(BaseModel):
    """The harness's own measurement of one candidate on one task."""

    model_config = ConfigDict(extra="forbid")

    value: float
    """The task's metric for this candidate (see ``Task.metric``/``higher_is_better``)."""
    passed: bool
    """Whether the candidate is valid/correct; a failed candidate's value is not comparable."""
    metrics: dict[str, float] = Field(default_factory=dict)
    """Secondary numbers (timings, counts, tolerances used...)."""
    details: dict[str, Any] = Field(default_factory=dict)
    """JSON-serialisable explanation, e.g. ``{"reason": "not robust-feasible in row 3"}``."""


@runtime_checkable
class Task(Protocol):
    """One benchmark problem configuration."""

    suite: str
    """Suite name, e.g. ``hdbo``."""
    name: str
    """Task name inside the suite, e.g. ``levy4_25d``."""
    split: str
    """One of ``SPLITS``."""
    metric: str
    """What ``Score.value`` measures, e.g. ``best_value`` or ``accuracy``."""
    higher_is_better: bool
    description: str
    """What an agent (or an LLM) is told about the task."""
    budget: int | None
    """Evaluations one run may spend when ``--budget`` is not given (None: the agent's
    default). The one budget name: a CBO task's trial count, an hdbo protocol's total."""

    def evaluate(self, candidate: Any, sandbox: Sandbox | None = None) -> Score:
        """Score ``candidate``; run untrusted code only inside ``sandbox``."""

        # Optional: ``check(candidate, sandbox) -> str``, a run of the candidate on probe inputs
        # that says whether it runs and what it returns, never its score: the verifier an
        # agent's LLM may call as a tool before it answers (``kit.tools``).
        ...


@runtime_checkable
class CodeTask(Task, Protocol):
    """A task whose candidates are programs, run in a sandbox (``funcfit``): the family of
    the program evolver (``evolve``)."""

    warm_modules: tuple[str, ...]
    """Modules the task's runner imports (a warm sandbox pre-imports them)."""

    def check(self, candidate: Any, sandbox: Any) -> str:
        """A run of ``candidate`` on probe inputs in ``sandbox``: whether it runs and what it
        returns (``"ok: ..."`` or ``"error: ..."``), never its score."""
        ...


@runtime_checkable
class SeededTask(Protocol):
    """A task that names the program a search starts from (``kernelarena``'s seed kernel)."""

    seed_code: str
    """The starting candidate's source (what a baseline submits unchanged)."""


@runtime_checkable
class Benchmark(Protocol):
    """A named collection of tasks with splits, and the report hooks of ``SuiteHooks``."""

    name: str
    splits: tuple[str, ...]

    def tasks(self, split: str = "dev") -> list[Task]:
        """All tasks of ``split``; raises ``ConfigError`` for an unknown split."""
        ...

    def notes(self, split: str, settings: Any = None) -> list[str]: ...

    def suite_metrics(self, rows: list[dict[str, Any]]) -> dict[str, Any] | None: ...

    def report_sections(self, summary: dict[str, Any]) -> list[str]: ...

    def report_plots(
        self, summary: dict[str, Any], rows: list[dict[str, Any]], out: Path
    ) -> list[Path]: ...


class SuiteHooks:
    """The report hooks the eval runner calls on every suite; a suite subclasses this
    and overrides the ones it has (the defaults add nothing)."""

    def check_split(self, split: str) -> None:
        """Raise ``ConfigError`` naming the suite's splits unless ``split`` is one of them."""
        splits = tuple(getattr(self, "splits", ()))
        if split not in splits:
            from optiforge.errors import ConfigError

            name = getattr(self, "name", type(self).__name__)
            raise ConfigError(f"{name} has no split {split!r} (splits: {', '.join(splits)})")

    def notes(self, split: str, settings: Any = None) -> list[str]:
        """Lines printed under the results table (e.g. what the metric means on CPU)."""
        return []

    def suite_metrics(self, rows: list[dict[str, Any]]) -> dict[str, Any] | None:
        """Suite-level numbers from the result rows (``summary["suite_metrics"]``)."""
        return None

    def report_sections(self, summary: dict[str, Any]) -> list[str]:
        """Markdown appended to ``summary.md``."""
        return []

    def report_plots(
        self, summary: dict[str, Any], rows: list[dict[str, Any]], out: Path
    ) -> list[Path]:
        """Extra PNGs written into the eval directory (their paths)."""
        return []
