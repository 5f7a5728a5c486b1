"""KnowEvo's baselines: the initial expert heuristics (no evolution), monolithic evolution
(the whole strategy rewritten at once by rule, kept when it tests better), LLM evolution
(OpenEvolve-style: the LLM rewrites the whole strategy program, a population on islands;
offline its rewrites are the rule-based ones) and random mutation (random localized
edits, round-robin rollouts, no evidence). Each spends the same measurement budget and
the same number of candidate tests (``tests_per_expansion`` per expansion, the same
expansions) as the agent with the same settings."""

from __future__ import annotations

from dataclasses import replace

from optiforge.agents.kit import RunContext
from optiforge.agents.knowevo.agent import build
from optiforge.agents.knowevo.blocks import initial_strategy
from optiforge.agents.knowevo.config import KnowEvoConfig
from optiforge.agents.spec import AgentOutcome, Baseline
from optiforge.evals.suites.protein.protocol import ProteinTask


def initial_baseline(
    task: ProteinTask, ctx: RunContext, budget: int | None, config: KnowEvoConfig | None = None
) -> AgentOutcome:
    """The initial expert heuristics as they are."""
    return AgentOutcome(best_candidate=initial_strategy(), stop_reason="baseline")


_SHARED = ("picks_per_rollout", "expand_every", "tests_per_expansion", "margin", "min_measured")
"""Settings a baseline takes from the agent's config: the budgets and the acceptance rule."""


def _variant(
    name: str, with_llm: bool = False, **settings: str | bool
) -> Baseline[ProteinTask, KnowEvoConfig]:
    """The agent run with ``settings`` (and the agent config's ``_SHARED`` settings)."""

    def run(
        task: ProteinTask, ctx: RunContext, budget: int | None, config: KnowEvoConfig | None = None
    ) -> AgentOutcome:
        shared = config.model_dump(include=set(_SHARED)) if config is not None else {}
        cfg = KnowEvoConfig(**(shared | settings | {"recall_blocks": 0}))
        agent_run = build(task, cfg, budget)
        # beside the agent in the same run dir: not checkpointed, no tree file of its own
        quiet = RunContext(llm=ctx.llm if with_llm else None, sandbox=ctx.sandbox, memory=None,
                           budget=ctx.budget, tracer=ctx.tracer, seed=ctx.seed, run_dir=None,
                           agent=name)  # fmt: skip
        return replace(agent_run, durable=False).execute(quiet)

    run.__name__ = f"baseline_{name}"
    return run


BASELINES: dict[str, Baseline[ProteinTask, KnowEvoConfig]] = {
    "initial": initial_baseline,
    "monolithic": _variant("monolithic", mode="monolithic"),
    "llm-evolution": _variant("llm-evolution", with_llm=True, mode="llm-evolution"),
    "random-mutation": _variant("random-mutation", allocation="uniform", backward=False),
}
