"""What ``hawkeye`` reports: the search result as an ``AgentOutcome`` with its roofline extras."""

from __future__ import annotations

from optiforge.agents.hawkeye.problem import KernelProblem, strategy_checks
from optiforge.agents.kit import AgentOutcome, Evaluated, SearchResult, search_outcome

NOT_MEASURED = "not measured without GPU"
COST_MODEL = (
    "cost model (no GPU): values are estimated speedups over the starting kernel, not timings"
)


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
    return search_outcome(
        result, proposer=proposer, higher_is_better=True, llm=llm, best=best,
        extra={
            "arch": arch, "facts": problem.facts.model_dump(), "roofline": problem.roofline,
            "strategies": strategies, "best_applies": best.payload.get("applied") if best else None,
            "best_params": best.payload.get("params") if best else None,
            "performance": None if arch != "interpreter" else _cpu_performance(best),
            "strategy_checks": strategy_checks(result.history),
        },
    )  # fmt: skip


def _cpu_performance(best: Evaluated | None) -> str:
    metrics = (best.metrics or {}) if best is not None else {}
    return COST_MODEL if "cost_speedup" in metrics else NOT_MEASURED
