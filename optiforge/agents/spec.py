"""``AgentSpec[T, C]``: how the CLI and the eval runner see an agent (``build`` -> ``AgentRun``).

``T`` is the task family the agent runs on (a runtime-checkable Protocol declared beside
the family's tasks, ``task_type``), ``C`` its config model. The harness checks a task with
``isinstance(task, spec.task_type)`` (``check_task``), never by suite name or ``hasattr``.
An agent that reads a second family declares it in ``families`` (a ``TaskFamily``: its
Protocol, its suite and the baselines measured on it).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

from optiforge.agents.kit.context import RunContext
from optiforge.agents.kit.outcome import AgentOutcome
from optiforge.agents.kit.run import AgentRun
from optiforge.errors import ConfigError
from optiforge.evals.protocol import Task

T = TypeVar("T")
C = TypeVar("C", bound=BaseModel)

Build = Callable[[T, C, int | None], AgentRun]
"""``build(task, config, budget) -> AgentRun``: the agent's graph for one run on ``task``
with its validated config and evaluation budget (None: the agent's own). No live handle
is passed: the harness drives the run with the run's ``RunContext`` (``AgentRun.drive``,
checkpoint and resume included) and reads its result (``AgentRun.outcome``). Bad input
(a task the agent cannot read) raises here, before anything runs."""

Baseline = Callable[[T, RunContext, int | None, C], AgentOutcome]
"""``baseline(task, ctx, budget, config) -> AgentOutcome``: the agent's budget and its
validated config (a baseline that needs no config ignores it)."""


def protocol_members(proto: type) -> list[str]:
    """The public attributes and methods a Protocol declares (its own and its bases')."""
    names: set[str] = set()
    for base in proto.__mro__:
        if base is object or not getattr(base, "_is_protocol", False):
            continue
        names |= {n for n in getattr(base, "__annotations__", {}) if not n.startswith("_")}
        names |= {n for n, v in vars(base).items() if callable(v) and not n.startswith("_")}
    return sorted(names)


@dataclass(frozen=True)
class TaskFamily(Generic[T, C]):
    """Another task family an agent runs on, beside its ``task_type`` (the formulator:
    word problems, and ``train`` tasks), with the baselines measured on that family."""

    task_type: Any
    """A ``runtime_checkable`` Protocol declared beside the family's tasks."""
    benchmark: str
    """The suite whose tasks are of this family."""
    baselines: dict[str, Baseline[T, C]] = field(default_factory=dict)
    """Baselines on this family's tasks (replacing the agent's own; the first is primary)."""


@dataclass(frozen=True)
class AgentSpec(Generic[T, C]):
    """A registered agent."""

    name: str
    description: str
    config_model: type[C]
    build: Build[T, C]
    default_benchmark: str | None = None
    task_type: Any = Task
    """The task family the agent runs on: a ``runtime_checkable`` Protocol (e.g.
    ``NCOTask``) declared beside the family's tasks; the harness refuses a task that is not
    an instance up front (``check_task``). ``Task``: any task of ``suites``."""
    suites: tuple[str, ...] | None = None
    """Only for an agent whose ``task_type`` is the bare ``Task``: suites whose tasks it
    can solve; None: only ``default_benchmark``'s (none either: any)."""
    baselines: dict[str, Baseline[T, C]] = field(default_factory=dict)
    """Baselines measured in the same eval; the first is the primary one for ``run``."""
    default_budget: int = 32
    offline_equivalent: str | None = None
    """A baseline that *is* this agent when no LLM is given (skipped by default in offline evals)."""
    summary_notes: Callable[[list[dict[str, Any]]], list[str]] | None = None
    """Extra lines (tables, caveats) for eval reports, computed from the result rows."""
    artifact: str = "candidate"
    """What the agent's best candidate is, as a pipeline passes it on: ``program``,
    ``gp-kernel``, ``triton-kernel``, ``formulation``, ``causal-model``, ``tool``,
    ``harness-patch``."""
    cli: str | None = None
    """The sub-command group the agent owns, as ``module:attribute`` of its ``typer.Typer``
    (``optiforge.agents.autorem.cli:app``). A reference, not the app: the app sits on the
    CLI layer (it builds run contexts and reads suites), which agent code never imports;
    the registry's ``AGENT_VERBS`` mounts it under its verb and imports it when it runs."""
    families: tuple[TaskFamily[Any, C], ...] = ()
    """Further task families the agent runs on (``check_task`` accepts their tasks too;
    ``baselines_for`` gives their own baselines)."""
    attempt_event: str | None = None
    """The kind of the event the agent writes once per candidate attempt (fields:
    ``kit.events.AttemptEvent``); the pipelines' ``diagnose`` step counts them. None: the
    agent's candidates are its evaluations (``evaluations.jsonl``)."""

    def accepts(self, suite: str) -> bool:
        """Whether tasks of ``suite`` may be ones this agent can run on (a name-level
        pre-check for listings; ``check_task`` decides on the task itself)."""
        if self.task_type is not Task:
            return True
        allowed = self.suites or ((self.default_benchmark,) if self.default_benchmark else None)
        return allowed is None or suite in allowed

    def check_task(self, task: Any) -> T:
        """The one task-type guard: ``task`` as the agent's task family, or a
        ``ConfigError`` naming the family the agent runs on.

        Raises:
            ConfigError: ``task`` is not of the agent's task family.
        """
        if self.task_type is not Task:
            if isinstance(task, self.task_type) or self.family_of(task) is not None:
                return task  # type: ignore[no-any-return]
            want = getattr(self.task_type, "__name__", str(self.task_type))
            if self.families:
                kinds = [(self.default_benchmark, want)] + [
                    (f.benchmark, str(f.task_type.__name__)) for f in self.families
                ]
                names = " or ".join(f"{b} tasks ({w})" for b, w in kinds)
                raise ConfigError(f"{self.name} runs on {names}; {task.suite}/{task.name} is "
                                  f"not one (try --bench {self.default_benchmark})")  # fmt: skip
            missing = [m for m in protocol_members(self.task_type) if not hasattr(task, m)]
            why = f" (it has no {', '.join(missing[:4])})" if missing else ""
            suite = f"{self.default_benchmark} tasks ({want})" if self.default_benchmark else want
            raise ConfigError(
                f"{self.name} runs on {suite}; {task.suite}/{task.name} is not one{why} "
                f"(try --bench {self.default_benchmark})"
            )
        if not self.accepts(task.suite):
            allowed = ", ".join(self.suites or (str(self.default_benchmark),))
            raise ConfigError(
                f"{self.name} runs on {allowed} tasks, not {task.suite}/{task.name} "
                f"(try --bench {self.default_benchmark or allowed})"
            )
        return task  # type: ignore[no-any-return]

    def family_of(self, task: object) -> TaskFamily[Any, C] | None:
        """The first of ``families`` whose Protocol ``task`` satisfies (None: none, the
        agent's own ``task_type``)."""
        return next((f for f in self.families if isinstance(task, f.task_type)), None)

    def baselines_for(self, task: object) -> dict[str, Baseline[Any, C]]:
        """The baselines measured on ``task``: its family's, else the agent's own."""
        family = self.family_of(task)
        return dict(family.baselines) if family is not None else dict(self.baselines)

    @property
    def primary_baseline(self) -> str | None:
        return next(iter(self.baselines), None)
