"""agent-cbo's baselines: known-graph CBO (upper reference), plain BO, and the agent offline."""

from __future__ import annotations

import time
from dataclasses import replace

from optiforge.agents.agent_cbo.agent import run_agent
from optiforge.agents.agent_cbo.config import AgentCBOConfig
from optiforge.agents.agent_cbo.report import baseline_outcome
from optiforge.agents.kit import AgentOutcome, RunContext
from optiforge.evals.suites.cbo.protocol import CausalBOTask
from optiforge.solvers.cbo import CBOConfig, run_bo, run_cbo


def known_graph_baseline(
    task: CausalBOTask, ctx: RunContext, budget: int | None, config: AgentCBOConfig
) -> AgentOutcome:
    """CBO with the task's true exploration sets and graph (the paper's upper reference)."""
    t0 = time.perf_counter()
    cfg = CBOConfig(n_trials=budget or task.n_trials, budget_cost=task.budget_cost,
                    stuck_patience=config.stuck_patience, stuck_margin=config.stuck_margin)  # fmt: skip
    tr = run_cbo(task.scm, exploration_sets=task.exploration_sets, config=cfg, seed=ctx.seed)
    return baseline_outcome(tr, time.perf_counter() - t0, "known-graph")


def plain_bo_baseline(
    task: CausalBOTask, ctx: RunContext, budget: int | None, config: AgentCBOConfig
) -> AgentOutcome:
    """One GP over all manipulable variables, no causal knowledge."""
    t0 = time.perf_counter()
    cfg = CBOConfig(n_trials=budget or task.n_trials, budget_cost=task.budget_cost)
    tr = run_bo(task.scm, config=cfg, seed=ctx.seed)
    return baseline_outcome(tr, time.perf_counter() - t0, "plain-bo")


def discovery_only_baseline(
    task: CausalBOTask, ctx: RunContext, budget: int | None, config: AgentCBOConfig
) -> AgentOutcome:
    """The agent without LLM beliefs (PC priors only): what the language prior is measured against."""
    return run_agent(task, replace(ctx, llm=None), config, budget)
