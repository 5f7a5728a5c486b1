"""What ``hawkeye`` reports: the search result as an ``AgentOutcome`` with its roofline extras."""

from __future__ import annotations

from optiforge.agents.hawkeye.problem import KernelProblem
from optiforge.agents.kit import Evaluated, SearchResult
from optiforge.agents.spec import AgentOutcome

NOT_MEASURED = "not measured without GPU"


def search_outcome(
    result: SearchResult,
    best: Evaluated | None,
    problem: KernelProblem,
    proposer: str,
    strategies: list[str],
) -> AgentOutcome:
    """``best`` as the candidate; arch, roofline facts, strategies and counts in ``extra``.

    Without a GPU (arch ``interpreter``) ``extra["performance"]`` says speed was not measured.
    """
    arch = problem.arch
    return AgentOutcome(
        best_candidate=best.payload if best else None,
        claimed_value=best.value if best else None,
        trace=result.trace(True),
        n_evaluations=result.n_evaluations,
        stop_reason=result.stop_reason,
        extra={
            "proposer": proposer, "arch": arch, "facts": problem.facts.model_dump(), "roofline": problem.roofline,
            "strategies": strategies, "best_applies": best.payload.get("applied") if best else None,
            "best_params": best.payload.get("params") if best else None,
            "n_duplicates": result.n_duplicates, "n_invalid": result.n_invalid, "rounds": result.rounds,
            "performance": None if arch != "interpreter" else NOT_MEASURED,
        },
    )  # fmt: skip
