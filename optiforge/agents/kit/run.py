"""``AgentRun``: one agent run, built and not yet started; what the harness drives.

An agent's ``AgentSpec.build(task, config, budget)`` returns one. It holds no live
handle: the LLM, sandbox, memory and run directory reach the graph's nodes through
``RunContext`` (LangGraph's runtime context) when the harness drives it, so everything
that depends on them (which proposer runs, where sandbox runs are traced) is decided in
the nodes, and a resume rebuilds the same run from the same three arguments.

The harness does::

    run = spec.build(task, config, budget)
    final = run.drive(ctx, resume=resume)     # run_graph: checkpoint, resume, close
    outcome = run.outcome(final.state, ctx)   # post-processing, e.g. a tie-break

A baseline that is the agent with other settings builds its own ``AgentRun`` and calls
``execute`` (both steps at once).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from optiforge.agents.kit.context import AgentContext, RunContext
from optiforge.agents.kit.driver import CHECKPOINTS, GraphRun, ResumeCheck, run_graph
from optiforge.agents.kit.outcome import AgentOutcome

if TYPE_CHECKING:
    from langgraph.graph import StateGraph

Outcome = Callable[[dict[str, Any], RunContext], AgentOutcome]
"""``outcome(final_state, ctx) -> AgentOutcome``: the run's result read from its final state."""


@dataclass(frozen=True)
class AgentRun:
    """An agent graph with everything needed to run it durably and read its result.

    One ``AgentRun`` is one run: build a new one per run (a graph's nodes may cache
    things for the run they belong to, e.g. the evaluation log they read).
    """

    graph: StateGraph[Any, Any, Any, Any]
    """The uncompiled graph (``StateGraph(state_type, context_schema=RunContext)``)."""
    outcome: Outcome
    """``final_state, ctx -> AgentOutcome`` (called on the state ``drive`` returns)."""
    start: Mapping[str, Any] = field(default_factory=dict)
    """The initial state of a fresh run."""
    thread_id: str = "main"
    """The graph's thread in the checkpoint file (several runs may share a file)."""
    checkpoints: str = CHECKPOINTS
    """The checkpoint file's name in the run directory."""
    recursion_limit: int = 100
    """LangGraph's step cap (a graph that loops sets it from its budget)."""
    check: ResumeCheck | None = None
    """Called on every resume with the checkpointed values; raises to refuse it."""
    what: str = "run"
    """How errors name the run (``"search 'search'"``, ``"an agent-cbo run"``)."""
    durable: bool = True
    """Checkpoint when the context has a run directory (False: never, e.g. a baseline
    that runs the agent's graph beside the agent in the same run directory)."""
    task: Any = None
    """The run's task: set, ``drive`` gives the graph an ``AgentContext`` holding it, the
    config and the budget (the graph's ``context_schema``); None: the ``RunContext`` as is."""
    config: Any = None
    eval_budget: int | None = None

    def context(self, ctx: RunContext) -> RunContext:
        """The runtime context the graph runs with: ``ctx`` with this run's task, config
        and budget (``AgentContext.of``) when the run has a task, else ``ctx``."""
        if self.task is None:
            return ctx
        return AgentContext.of(ctx, self.task, self.config, self.eval_budget)

    @property
    def state_type(self) -> Any:
        """The graph state's type (a ``TypedDict``)."""
        return self.graph.state_schema

    @property
    def context_type(self) -> Any:
        """The runtime context's type (``RunContext``)."""
        return self.graph.context_schema

    def compile(self, checkpointer: Any | None = None) -> Any:
        """The compiled graph, checkpointing to ``checkpointer`` (None: not durable)."""
        return self.graph.compile(checkpointer=checkpointer)

    def drive(self, ctx: RunContext, *, resume: bool = False) -> GraphRun:
        """Run (or resume) the graph to its end with the kit's durable driver."""
        return run_graph(
            self.compile, self.context(ctx), start=self.start, thread_id=self.thread_id, resume=resume,
            durable=self.durable, recursion_limit=self.recursion_limit, check=self.check,
            what=self.what, checkpoints=self.checkpoints,
        )  # fmt: skip

    def execute(self, ctx: RunContext, *, resume: bool = False) -> AgentOutcome:
        """``drive`` then ``outcome``: the run's ``AgentOutcome``."""
        ctx = self.context(ctx)
        return self.outcome(self.drive(ctx, resume=resume).state, ctx)
