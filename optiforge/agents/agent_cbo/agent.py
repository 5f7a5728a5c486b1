"""``agent-cbo``: causal BO that learns only the structure the optimizer can feel.

One LangGraph graph (nodes and what each does: ``nodes.py``; the state and the numerical
session behind it: ``problem.py``)::

    language_prior -> discovery -> calibration -> residual_repair -> commit_gate
                                        ^                                 |
                                        +------------ cbo_step <----------+  (until budget)

The offline agent (no LLM) is the ``discovery-only`` baseline of the paper. With
``ctx.run_dir`` set every node is checkpointed and a resume continues from the last one.
"""

from __future__ import annotations

import time
from functools import partial
from typing import Any

from langgraph.graph import END, START, StateGraph

from optiforge.agents.agent_cbo import nodes
from optiforge.agents.agent_cbo.config import AgentCBOConfig
from optiforge.agents.agent_cbo.problem import AgentCBOState
from optiforge.agents.agent_cbo.report import agent_outcome
from optiforge.agents.kit import AgentOutcome, AgentRun, RunContext
from optiforge.agents.kit.context import AgentContext
from optiforge.errors import ConfigError
from optiforge.evals.suites.cbo.protocol import CausalBOTask

CHECKPOINTS = "agent_cbo_checkpoints.sqlite"
THREAD_ID = "agent_cbo"


def build_graph() -> StateGraph[Any, Any, Any, Any]:
    """The agent's StateGraph, uncompiled (the run's task and config are its context)."""
    g: StateGraph[Any, Any, Any, Any] = StateGraph(AgentCBOState, context_schema=AgentContext)
    g.add_node("language_prior", nodes.language_prior)
    g.add_node("discovery", nodes.discovery)
    g.add_node("cbo_step", nodes.cbo_step)
    g.add_node("calibration", nodes.calibration)
    g.add_node("residual_repair", nodes.residual_repair)
    g.add_node("commit_gate", nodes.commit_gate)
    g.add_edge(START, "language_prior")
    g.add_edge("language_prior", "discovery")
    # Round 0 gates the language prior's proposals on observational data alone, so a
    # good prior shapes the very first interventions.
    g.add_edge("discovery", "calibration")
    g.add_conditional_edges("cbo_step", nodes.after_step, ["calibration", END])
    g.add_edge("calibration", "residual_repair")
    g.add_edge("residual_repair", "commit_gate")
    g.add_edge("commit_gate", "cbo_step")
    return g


def build(
    task: CausalBOTask, config: AgentCBOConfig, budget: int | None, *, durable: bool = True
) -> AgentRun:
    """``AgentSpec.build``: ``budget`` is the number of interventions (None: the task's;
    the cost budget is the task's). durable: checkpoint every node when the run has a
    run directory (``--resume`` continues there)."""
    return AgentRun(
        graph=build_graph(), outcome=partial(agent_outcome, t0=time.perf_counter()), thread_id=THREAD_ID,
        recursion_limit=8 * (budget or task.n_trials) + 20, what="an agent-cbo run",
        checkpoints=CHECKPOINTS, durable=durable, task=task, config=config, eval_budget=budget,
    )  # fmt: skip


def run_agent(
    task: CausalBOTask, ctx: RunContext, config: AgentCBOConfig, n_trials: int | None = None,
    *, durable: bool = False, resume: bool = False,
) -> AgentOutcome:  # fmt: skip
    """Run the agent graph on a CBO task (tests, benchmarks, the discovery-only baseline).

    durable: checkpoint every node to ``ctx.run_dir / CHECKPOINTS`` (needs ``run_dir``);
    resume: continue the checkpointed run there instead of refusing to overwrite it.
    """
    if (durable or resume) and ctx.run_dir is None:
        raise ConfigError("agent-cbo: checkpointing and resume need a run directory")
    return build(task, config, n_trials, durable=durable or resume).execute(ctx, resume=resume)
