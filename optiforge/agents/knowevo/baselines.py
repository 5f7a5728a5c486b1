"""KnowEvo's baselines: the initial expert heuristics (no evolution), monolithic program
evolution (the whole strategy rewritten at once, kept when it tests better, as
OpenEvolve-style evolution would), and random mutation (random localized edits,
round-robin rollouts, no backward phase). Each spends the same measurement budget."""

from __future__ import annotations

from typing import Any

from optiforge.agents.kit import RunContext
from optiforge.agents.knowevo.agent import build
from optiforge.agents.knowevo.blocks import initial_strategy
from optiforge.agents.knowevo.config import KnowEvoConfig
from optiforge.agents.spec import AgentOutcome, Baseline


def initial_baseline(
    task: Any, ctx: RunContext, budget: int | None, config: Any = None
) -> AgentOutcome:
    """The initial expert heuristics as they are."""
    return AgentOutcome(best_candidate=initial_strategy(), stop_reason="baseline")


def _variant(name: str, **settings: Any) -> Baseline:
    def run(task: Any, ctx: RunContext, budget: int | None, config: Any = None) -> AgentOutcome:
        cfg = KnowEvoConfig(**settings)
        agent_run = build(task, cfg, budget)
        # beside the agent in the same run dir: not checkpointed, no tree file of its own
        quiet = RunContext(llm=None, sandbox=ctx.sandbox, memory=None, budget=ctx.budget,
                           tracer=ctx.tracer, seed=ctx.seed, run_dir=None, agent=name)  # fmt: skip
        from dataclasses import replace

        return replace(agent_run, durable=False).execute(quiet)

    run.__name__ = f"baseline_{name}"
    return run


BASELINES: dict[str, Baseline] = {
    "initial": initial_baseline,
    "monolithic": _variant("monolithic", mode="monolithic"),
    "random-mutation": _variant("random-mutation", allocation="uniform", backward=False),
}
