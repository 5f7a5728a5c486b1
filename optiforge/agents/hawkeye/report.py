"""What ``hawkeye`` reports: the search result as an ``AgentOutcome`` with its roofline extras
(``hawkeye_result``: the autotuner's tie-break, then ``hawkeye_outcome``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from optiforge.agents.hawkeye.config import HawkeyeConfig
from optiforge.agents.hawkeye.problem import KernelProblem, strategy_checks
from optiforge.agents.hawkeye.proposers import (
    AutotuneProposer,
    LLMKernelProposer,
    distance,
    prior_preference,
)
from optiforge.agents.kit import (
    AgentOutcome,
    Evaluated,
    RunContext,
    SearchResult,
    pick_proposer,
    search_outcome,
)
from optiforge.agents.kit.search import AnyProposer

NOT_MEASURED = "not measured without GPU"
COST_MODEL = (
    "cost model (no GPU): values are estimated speedups over the starting kernel, not timings"
)


class HawkeyeExtra(BaseModel):
    """Hawkeye's fields of ``AgentOutcome.extra`` (merged over the kit's search counts)."""

    model_config = ConfigDict(extra="forbid")

    arch: str
    """The target architecture (``interpreter`` without a GPU)."""
    facts: dict[str, Any]
    """The task's kernel facts (``strategies.KernelFacts``)."""
    roofline: dict[str, float]
    """``flops``, ``bytes``, ``intensity``, ``ridge``, ``min_time_us`` at the timing shape."""
    strategies: list[str]
    """The taxonomy strategies the LLM proposer rotates through."""
    best_applies: list[str] | None
    """The strategies detected in the best kernel."""
    best_params: dict[str, Any] | None
    performance: str | None
    """Without a GPU: what the values are (the cost model's estimate, or not measured)."""
    strategy_checks: dict[str, Any]
    """How often an LLM attempt applied the strategy asked for (``problem.strategy_checks``)."""


def hawkeye_result(
    result: SearchResult,
    ctx: RunContext,
    *,
    problem: KernelProblem,
    config: HawkeyeConfig,
    proposer: AnyProposer,
) -> AgentOutcome:
    """The outcome of a search by ``proposer`` (the one that ran in ``ctx``) on ``problem``."""
    ran = pick_proposer(proposer, ctx)
    best = result.best
    if best is not None and isinstance(ran, AutotuneProposer):
        # Without a GPU the cost model often ties configs (a compute-bound op at the
        # timing shape); break ties toward the roofline prior (the configs a GPU search
        # heads for) rather than keeping the slow seed.
        tied = [e for e in result.history if e.passed and e.value == best.value]
        pref = prior_preference(problem.facts)
        best = min(
            tied, key=lambda e: (distance(e.payload.get("params") or {}, pref), -tied.index(e))
        )
    chosen = [
        s.name
        for s in LLMKernelProposer(config.strategies_per_task).strategies(
            problem, result.population
        )
    ]
    llm = isinstance(ran, LLMKernelProposer)
    return hawkeye_outcome(result, best, problem, ran.name, chosen, llm)


def hawkeye_outcome(
    result: SearchResult,
    best: Evaluated | None,
    problem: KernelProblem,
    proposer: str,
    strategies: list[str],
    llm: bool,
) -> AgentOutcome:
    """``best`` as the candidate; arch, roofline facts, strategies and counts in ``extra``.

    Without a GPU (arch ``interpreter``) ``extra["performance"]`` says the values are the
    suite's cost model (``cost_speedup``), not timings (or not measured at all when the
    best candidate has no cost estimate).
    """
    arch = problem.arch
    extra = HawkeyeExtra(
        arch=arch, facts=problem.facts.model_dump(), roofline=problem.roofline,
        strategies=strategies, best_applies=best.payload.get("applied") if best else None,
        best_params=best.payload.get("params") if best else None,
        performance=None if arch != "interpreter" else _cpu_performance(best),
        strategy_checks=strategy_checks(result.history),
    )  # fmt: skip
    return search_outcome(
        result, proposer=proposer, higher_is_better=True, llm=llm, best=best,
        extra=extra.model_dump(),
    )  # fmt: skip


def _cpu_performance(best: Evaluated | None) -> str:
    metrics = (best.metrics or {}) if best is not None else {}
    return COST_MODEL if "cost_speedup" in metrics else NOT_MEASURED
