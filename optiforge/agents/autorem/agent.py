"""The AutoREM agent: one LangGraph graph per instance (model -> retrieve -> write -> run -> reflect).

Nodes (what each does: ``nodes.py``)::

    model -> retrieve -> write -> run -> finish
      |                   ^  |     |       ^
      |                   +--|-----+ (repair while attempts remain)
      +--> reflect <---------|-----+ (a failed trajectory, reflect="on_failure")
                   |         +-------------+ (the LLM failed)
                   +-----------------------+

Offline (no LLM) the modeller is the reference modeller (a parser of the model sheet's
grammar, ``modeller.reference_modeller``) and the writer is the reference reformulator
emitted as code (``proposers.counterpart_program``): offline accuracy measures the sheet
round trip and the checker, not an LLM.
"""

from __future__ import annotations

from functools import partial
from typing import Any, cast

from langgraph.graph import END, START, StateGraph

from optiforge.agents.autorem import nodes
from optiforge.agents.autorem.config import AutoREMConfig
from optiforge.agents.autorem.problem import AutoREMState, with_timeout
from optiforge.agents.autorem.report import autorem_outcome
from optiforge.agents.kit import AgentRun, RunContext
from optiforge.agents.kit.context import AgentContext
from optiforge.evals.suites.autoro.protocol import ROTask

CHECKPOINTS = "autorem_checkpoints.sqlite"


def build_graph() -> StateGraph[Any, Any, Any, Any]:
    """The per-instance graph, uncompiled (the run's task and config are its context)."""
    g: StateGraph[Any, Any, Any, Any] = StateGraph(AutoREMState, context_schema=AgentContext)
    g.add_node("model", nodes.model)
    g.add_node("retrieve", nodes.retrieve)
    g.add_node("write", nodes.write)
    g.add_node("run", nodes.run)
    g.add_node("reflect", nodes.reflect)
    g.add_node("finish", nodes.finish)
    g.add_edge(START, "model")
    g.add_conditional_edges("model", nodes.after_model, ["retrieve", "reflect", "finish"])
    g.add_edge("retrieve", "write")
    g.add_conditional_edges("write", nodes.after_write, ["run", "finish"])
    g.add_conditional_edges("run", nodes.after_run, ["write", "reflect", "finish"])
    g.add_edge("reflect", "finish")
    g.add_edge("finish", END)
    return g


def instance_run(task: ROTask, config: AutoREMConfig, *, thread_id: str | None = None) -> AgentRun:
    """The graph on one instance as an ``AgentRun`` (checkpoints in ``ctx.run_dir`` when set)."""
    thread = thread_id or f"autorem-{task.name}"
    return AgentRun(
        graph=build_graph(), outcome=partial(autorem_outcome, use_memory=config.use_memory),
        thread_id=thread, what=f"AutoREM thread {thread!r}", checkpoints=CHECKPOINTS,
        task=with_timeout(task, config.timeout_s), config=config,
    )  # fmt: skip


def run_instance(
    task: ROTask, ctx: RunContext, config: AutoREMConfig, *, resume: bool = False,
    thread_id: str | None = None,
) -> AutoREMState:  # fmt: skip
    """Run the graph on one instance and return its final state (the ``autorem solve`` CLI)."""
    run = instance_run(task, config, thread_id=thread_id)
    return cast(AutoREMState, run.drive(ctx, resume=resume).state)


def build(task: ROTask, config: AutoREMConfig, budget: int | None) -> AgentRun:
    """``AgentSpec.build``: one AutoRO instance: retrieve, write code, verify in the
    sandbox, repair. budget: caps the code attempts (evaluations) below ``max_attempts``."""
    if budget is not None:
        config = config.model_copy(
            update={"max_attempts": max(1, min(config.max_attempts, budget))}
        )
    return instance_run(task, config)
