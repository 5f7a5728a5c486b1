"""A search's result as the harness's ``AgentOutcome``: the best candidate, the trace, the
search's counts, and the verdict on an LLM search none of whose proposals passed."""

from __future__ import annotations

from typing import Any

from optiforge.agents.kit.outcome import AgentOutcome
from optiforge.agents.kit.search.records import Evaluated, SearchResult


def proposals_failure(result: SearchResult) -> str | None:
    """Why an LLM-driven search failed although it returned a candidate, else None.

    Not one proposal after the seeds passed (invalid at materialize, or failed its
    evaluation): the returned candidate is a seed, and the LLM contributed nothing. A
    search that stopped on an LLM error before proposing says so in its stop reason.
    """
    proposed = [h for h in result.history if h.round > 0]
    if not proposed or any(h.passed for h in proposed):
        return None
    invalid = sum(1 for h in proposed if str(h.error or "").startswith("invalid:"))
    return (
        f"not one of the {len(proposed)} LLM proposals was valid "
        f"({invalid} rejected before evaluation, {len(proposed) - invalid} failed it)"
    )


def proposal_counts(result: SearchResult) -> dict[str, int]:
    """The proposals after the seeds: made, rejected before evaluation (``invalid``),
    failed their evaluation, and scored (passed)."""
    proposed = [h for h in result.history if h.round > 0]
    invalid = sum(1 for h in proposed if str(h.error or "").startswith("invalid:"))
    passed = sum(1 for h in proposed if h.passed)
    return {"made": len(proposed), "invalid": invalid, "failed": len(proposed) - invalid - passed,
            "passed": passed}  # fmt: skip


def llm_counts(result: SearchResult) -> dict[str, int]:
    """``AgentOutcome.llm_proposals`` of a search whose proposals (after the seeds) an LLM made."""
    counts = proposal_counts(result)
    return {"made": counts["made"], "valid": counts["passed"]}


def search_outcome(
    result: SearchResult,
    *,
    proposer: str,
    higher_is_better: bool,
    llm: bool,
    best: Evaluated | None = None,
    extra: dict[str, Any] | None = None,
) -> AgentOutcome:
    """``best`` (default: the search's best) as the candidate, the search counts in ``extra``.

    Args:
        llm: the proposer is an LLM; a search none of whose proposals passed is then a
            failed run (``proposals_failure``). An offline proposer's misses are results.
        extra: agent-specific fields, merged over the search counts.
    """
    best = result.best if best is None else best
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
            "proposals": proposal_counts(result),
            **(extra or {}),
        },
        failure=proposals_failure(result) if llm else None,
        llm_proposals=llm_counts(result) if llm else None,
    )
