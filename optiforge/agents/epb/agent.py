"""EPB's graph: ``collect`` -> ``step`` (repeated, one block I round each, block II every
``block2_every`` rounds) -> end. The nodes are ``nodes.py``'s; the outcome ``report.py``'s.
The candidate is ``{"programs", "router", "beta"}``.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import START, StateGraph

from optiforge.agents.epb import nodes
from optiforge.agents.epb.config import EPBConfig
from optiforge.agents.epb.problem import EPBState
from optiforge.agents.epb.report import outcome
from optiforge.agents.kit import AgentRun
from optiforge.agents.kit.context import AgentContext
from optiforge.evals.suites.nco.protocol import NCOTask


def build(task: NCOTask, config: EPBConfig, budget: int | None) -> AgentRun:
    """One epb run on ``task``: ``budget`` block I rounds (None: the task's)."""
    g: StateGraph[Any, Any, Any, Any] = StateGraph(EPBState, context_schema=AgentContext)
    g.add_node("collect", nodes.collect)
    g.add_node("step", nodes.step)
    g.add_edge(START, "collect")
    g.add_conditional_edges("collect", nodes.after)
    g.add_conditional_edges("step", nodes.after)
    rounds = nodes.rounds_max(task, budget)
    return AgentRun(graph=g, outcome=outcome, what="an epb run", recursion_limit=2 * rounds + 20,
                    checkpoints="epb_checkpoints.sqlite", task=task, config=config,
                    eval_budget=budget)  # fmt: skip
