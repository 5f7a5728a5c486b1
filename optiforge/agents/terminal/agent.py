"""The ``terminal`` agent's graph: one node (``nodes.episode``) that works the task through
the config's harness; ``nodes.outcome`` reads the result."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph

from optiforge.agents.kit import AgentRun
from optiforge.agents.kit.context import AgentContext
from optiforge.agents.terminal import nodes
from optiforge.agents.terminal.config import TerminalConfig
from optiforge.agents.terminal.nodes import run_episode
from optiforge.agents.terminal.problem import TerminalState
from optiforge.evals.suites.saddle.protocol import SaddleTask

__all__ = ["build", "run_episode"]  # run_episode moved to nodes.py; importable here as before


def build(task: SaddleTask, config: TerminalConfig, budget: int | None) -> AgentRun:
    """One episode of ``task`` through the config's harness (a bad harness folder is a
    ``ConfigError`` here, before anything runs)."""
    config.load_harness()
    g = StateGraph(TerminalState, context_schema=AgentContext)
    g.add_node("episode", nodes.episode)
    g.add_edge(START, "episode")
    g.add_edge("episode", END)
    return AgentRun(graph=g, outcome=nodes.outcome, what="a terminal run", task=task,
                    config=config, eval_budget=budget)  # fmt: skip
