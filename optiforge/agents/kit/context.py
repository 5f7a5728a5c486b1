"""``RunContext``: the live handles an agent graph's nodes share (never checkpointed);
``AgentContext[T, C]``: those handles plus the run's task, config and evaluation budget,
the runtime context of every agent graph.

LangGraph keeps serializable state in the graph and live handles in the runtime
context; this is that context. Graph state must hold everything a resume needs; a
``RunContext`` is rebuilt from the run's settings on every start.

An agent's graph nodes are module-level functions (``agents/<agent>/nodes.py``) that read
what a closure used to capture from ``runtime.context``::

    Ctx = AgentContext[NCOTask, EPBConfig]

    def collect(state: EPBState, runtime: Runtime[Ctx]) -> dict[str, Any]:
        ctx = runtime.context
        ctx.task.teacher_trajectories(...)    # typed: NCOTask declares it
        ctx.config.block2_every               # typed: EPBConfig
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import numpy as np
from pydantic import BaseModel

from optiforge.runs import NullTracer, Tracer

if TYPE_CHECKING:  # the handles' modules are imported by whoever builds the context
    from optiforge.llm.base import LLM
    from optiforge.llm.budget import Budget
    from optiforge.memory.store import Store
    from optiforge.sandboxes.base import Sandbox
    from optiforge.sandboxes.executors import Executor


@dataclass
class RunContext:
    """Live handles shared by the nodes of an agent graph (never checkpointed)."""

    llm: LLM | None = None
    """None for offline runs (heuristic proposers)."""
    sandbox: Sandbox | None = None
    """Where untrusted code runs."""
    memory: Store | None = None
    """None: nothing is remembered."""
    executor: Executor | None = None
    """None evaluates in this process, one by one."""
    budget: Budget | None = None
    """LLM spend and sandbox seconds."""
    tracer: Tracer = field(default_factory=NullTracer)
    seed: int = 0
    run_dir: Path | None = None
    agent: str = "agent"
    recalled: list[dict[str, Any]] = field(default_factory=list)
    """Lessons recalled from memory for this search (``kit.recall``); set by the loop from
    its checkpointed state before every proposal."""
    ledger_restored: bool = False
    """The budget already holds this run's spend before a resume (a pipeline restores its
    one shared ledger from its event log): the driver then does not add the checkpoint's."""
    progress: Callable[[dict[str, Any]], None] | None = None
    """Called after each round with ``{"evaluations", "max_evaluations", "best"}``."""

    def rng(self, *salt: int | str) -> np.random.Generator:
        """A generator derived from the run seed and ``salt`` (stable across resumes)."""
        parts = [self.seed] + [
            int(hashlib.sha256(str(s).encode()).hexdigest()[:8], 16) for s in salt
        ]
        return np.random.default_rng(parts)


T = TypeVar("T")
"""The task family an agent runs on (a runtime-checkable Protocol, ``AgentSpec.task_type``)."""
C = TypeVar("C", bound=BaseModel)
"""The agent's config model (``AgentSpec.config_model``)."""
X = TypeVar("X")


@dataclass
class AgentContext(RunContext, Generic[T, C]):
    """The runtime context of an agent graph: the run's handles, task, config and budget.

    ``AgentRun.drive`` builds it from the harness's ``RunContext`` (``of``) when the run
    was built with a task; graph nodes read ``runtime.context.task / .config / .llm``.
    """

    task: T = field(kw_only=True)
    config: C = field(kw_only=True)
    eval_budget: int | None = field(default=None, kw_only=True)
    """Evaluations this run may spend (``build``'s ``budget``; None: the agent's default)."""
    _memo: dict[str, Any] = field(default_factory=dict, repr=False, kw_only=True)

    @classmethod
    def of(
        cls, ctx: RunContext, task: T, config: C, eval_budget: int | None = None
    ) -> AgentContext[T, C]:
        """``ctx``'s handles (shared, not copied) with ``task``, ``config`` and the budget.

        An ``AgentContext`` for the same task and config is returned as it is.
        """
        if isinstance(ctx, AgentContext) and ctx.task is task and ctx.config is config:
            return ctx
        handles = {f.name: getattr(ctx, f.name) for f in fields(RunContext)}
        return cls(**handles, task=task, config=config, eval_budget=eval_budget)

    def memo(self, key: str, make: Callable[[], X]) -> X:
        """A per-run value built once by ``make`` (never checkpointed: rebuilt after a
        resume), e.g. data a graph's nodes share that a closure used to capture."""
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]  # type: ignore[no-any-return]
