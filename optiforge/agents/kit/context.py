"""``RunContext``: the live handles an agent graph's nodes share (never checkpointed).

LangGraph keeps serializable state in the graph and live handles in the runtime
context; this is that context. Graph state must hold everything a resume needs; a
``RunContext`` is rebuilt from the run's settings on every start.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

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
