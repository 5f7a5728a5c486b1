"""What ``evolve`` reports: a search result as the harness's ``AgentOutcome``."""

from __future__ import annotations

from optiforge.agents.kit import SearchResult
from optiforge.agents.spec import AgentOutcome


def search_outcome(result: SearchResult, proposer: str, higher_is_better: bool) -> AgentOutcome:
    """The best program as the candidate; search counts in ``extra``."""
    best = result.best
    return AgentOutcome(
        best_candidate=best.payload if best else None,
        claimed_value=best.value if best else None,
        trace=result.trace(higher_is_better),
        n_evaluations=result.n_evaluations,
        stop_reason=result.stop_reason,
        extra={
            "proposer": proposer,
            "n_duplicates": result.n_duplicates,
            "n_invalid": result.n_invalid,
            "rounds": result.rounds,
        },
    )
