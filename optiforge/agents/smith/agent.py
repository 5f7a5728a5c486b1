"""SMITH's graph: ``start`` -> ``build`` (one build task per step) -> ``use`` (a chunk of
questions per step) -> end. The nodes and routes are ``nodes.py``'s; the outcome
``report.py``'s. The candidate is ``{"tools": pool, "calls": {question id: [call, ...]}}``.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import START, StateGraph

from optiforge.agents.kit import AgentRun
from optiforge.agents.kit.context import AgentContext
from optiforge.agents.smith import nodes
from optiforge.agents.smith.config import SmithConfig
from optiforge.agents.smith.problem import SmithState
from optiforge.agents.smith.report import outcome
from optiforge.evals.suites.procedural.protocol import ProceduralTask


def build(task: ProceduralTask, config: SmithConfig, budget: int | None) -> AgentRun:
    """One smith episode on ``task`` spending at most ``budget`` validations (None: the task's)."""
    g: StateGraph[Any, Any, Any, Any] = StateGraph(SmithState, context_schema=AgentContext)
    g.add_node("start", nodes.start)
    g.add_node("build", nodes.build_step)
    g.add_node("use", nodes.use_step)
    g.add_edge(START, "start")
    g.add_conditional_edges("start", nodes.after_start)
    g.add_conditional_edges("build", nodes.after_build)
    g.add_conditional_edges("use", nodes.after_use)
    steps = len(task.build_tasks) + len(task.use_questions) // nodes.USE_CHUNK + 20
    return AgentRun(graph=g, outcome=outcome, what="a smith run", recursion_limit=steps,
                    checkpoints="smith_checkpoints.sqlite", task=task, config=config,
                    eval_budget=budget)  # fmt: skip
