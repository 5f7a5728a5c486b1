"""``AgentSpec``: how the CLI and the eval runner see an agent (``build`` -> ``AgentRun``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from optiforge.agents.kit.context import RunContext
from optiforge.agents.kit.outcome import AgentOutcome
from optiforge.agents.kit.run import AgentRun
from optiforge.errors import ConfigError
from optiforge.evals.protocol import Task

Build = Callable[[Task, BaseModel, int | None], AgentRun]
"""``build(task, config, budget) -> AgentRun``: the agent's graph for one run on ``task``
with its validated config and evaluation budget (None: the agent's own). No live handle
is passed: the harness drives the run with the run's ``RunContext`` (``AgentRun.drive``,
checkpoint and resume included) and reads its result (``AgentRun.outcome``). Bad input
(a task the agent cannot read) raises here, before anything runs."""

Baseline = Callable[[Task, RunContext, int | None, Any], AgentOutcome]
"""``baseline(task, ctx, budget, config) -> AgentOutcome``: the agent's budget and its
validated config (a baseline that needs no config ignores it)."""


@dataclass(frozen=True)
class AgentSpec:
    """A registered agent."""

    name: str
    description: str
    config_model: type[BaseModel]
    build: Build
    default_benchmark: str | None = None
    suites: tuple[str, ...] | None = None
    """Suites whose tasks the agent can solve; None: only ``default_benchmark``'s (an agent
    without a default benchmark accepts any). The harness refuses other tasks up front."""
    baselines: dict[str, Baseline] = field(default_factory=dict)
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

    def accepts(self, suite: str) -> bool:
        """Whether tasks of ``suite`` are ones this agent can run on."""
        allowed = self.suites or ((self.default_benchmark,) if self.default_benchmark else None)
        return allowed is None or suite in allowed

    def check_task(self, task: Task) -> None:
        """The one task-type guard: ``ConfigError`` naming the suites the agent accepts.

        Raises:
            ConfigError: ``task`` belongs to a suite this agent cannot run on.
        """
        if not self.accepts(task.suite):
            allowed = ", ".join(self.suites or (str(self.default_benchmark),))
            raise ConfigError(
                f"{self.name} runs on {allowed} tasks, not {task.suite}/{task.name} "
                f"(try --bench {self.default_benchmark or allowed})"
            )

    @property
    def primary_baseline(self) -> str | None:
        return next(iter(self.baselines), None)
