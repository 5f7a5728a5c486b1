"""KnowEvo's graph: ``step`` (a forward rollout, and an expansion every ``expand_every``
rollouts) repeated until the measurement budget is spent. The node is ``nodes.py``'s;
the outcome (the strategy with the best ``rho``, the tree files) ``report.py``'s.
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import START, StateGraph

from optiforge.agents.kit import AgentRun
from optiforge.agents.kit.context import AgentContext
from optiforge.agents.knowevo import nodes
from optiforge.agents.knowevo.config import KnowEvoConfig
from optiforge.agents.knowevo.nodes import first_llm_budget
from optiforge.agents.knowevo.problem import KnowEvoState
from optiforge.agents.knowevo.report import outcome
from optiforge.evals.suites.protein.protocol import ProteinTask

__all__ = ["build", "first_llm_budget"]


def build(task: ProteinTask, config: KnowEvoConfig, budget: int | None) -> AgentRun:
    """One knowevo run on ``task`` spending ``budget`` measurements (None: the task's)."""
    g: StateGraph[Any, Any, Any, Any] = StateGraph(KnowEvoState, context_schema=AgentContext)
    g.add_node("step", nodes.step)
    g.add_edge(START, "step")
    g.add_conditional_edges("step", nodes.after)
    rollouts = nodes.total_measurements(task, budget) // config.picks_per_rollout + 2
    return AgentRun(graph=g, outcome=outcome, what="a knowevo run", recursion_limit=2 * rollouts + 20,
                    checkpoints="knowevo_checkpoints.sqlite", task=task, config=config,
                    eval_budget=budget)  # fmt: skip
