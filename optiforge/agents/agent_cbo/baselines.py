"""agent-cbo's baselines: known-graph CBO (upper reference), plain BO, and the agent offline."""

from __future__ import annotations

import time
from typing import Any

from optiforge.agents.agent_cbo.agent import run_agent
from optiforge.agents.agent_cbo.config import AgentCBOConfig
from optiforge.agents.agent_cbo.report import cbo_outcome
from optiforge.agents.kit import RunContext
from optiforge.agents.spec import AgentOutcome
from optiforge.solvers.cbo import CBOConfig, run_bo, run_cbo


def known_graph_baseline(
    task: Any, ctx: RunContext, budget: int | None, config: Any = None
) -> AgentOutcome:
    """CBO with the task's true exploration sets and graph (the paper's upper reference)."""
    t0 = time.perf_counter()
    d = config if isinstance(config, AgentCBOConfig) else AgentCBOConfig()
    cfg = CBOConfig(n_trials=budget or task.n_trials, budget_cost=task.budget_cost,
                    stuck_patience=d.stuck_patience, stuck_margin=d.stuck_margin)  # fmt: skip
    tr = run_cbo(task.scm, exploration_sets=task.exploration_sets, config=cfg, seed=ctx.seed)
    return cbo_outcome(tr, "baseline", time.perf_counter() - t0, {"proposer": "known-graph"})


def plain_bo_baseline(
    task: Any, ctx: RunContext, budget: int | None, config: Any = None
) -> AgentOutcome:
    """One GP over all manipulable variables, no causal knowledge."""
    t0 = time.perf_counter()
    cfg = CBOConfig(n_trials=budget or task.n_trials, budget_cost=task.budget_cost)
    tr = run_bo(task.scm, config=cfg, seed=ctx.seed)
    return cbo_outcome(tr, "baseline", time.perf_counter() - t0, {"proposer": "plain-bo"})


def discovery_only_baseline(
    task: Any, ctx: RunContext, budget: int | None, config: Any = None
) -> AgentOutcome:
    """The agent without LLM beliefs (PC priors only): what the language prior is measured against."""
    from dataclasses import replace

    cfg = config if isinstance(config, AgentCBOConfig) else AgentCBOConfig()
    return run_agent(task, replace(ctx, llm=None), cfg, budget)
