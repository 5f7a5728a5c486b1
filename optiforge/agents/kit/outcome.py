"""The one typed outcome of an agent run, and the search loop's result turned into one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from optiforge.agents.kit.search import Evaluated, SearchResult


class AgentOutcome(BaseModel):
    """What one agent (or baseline) run on one task produced.

    ``best_candidate`` is re-scored by the harness (``Task.evaluate``); ``claimed_value``
    is only the agent's own number, kept for diagnosis and never reported as the result.
    """

    model_config = ConfigDict(extra="forbid")

    best_candidate: Any = None
    claimed_value: float | None = None
    trace: list[float | None] = Field(default_factory=list)
    """Best-so-far value after each evaluation (the convergence curve)."""
    n_evaluations: int = 0
    stop_reason: str = ""
    extra: dict[str, Any] = Field(default_factory=dict)
    failure: str | None = None
    """The agent's verdict that its run failed although it returned a candidate (e.g. not
    one LLM proposal was valid, so the candidate is only the seed); the harness then
    reports the run ``failed`` (``optiforge.harness.status``)."""
    notes: list[str] = Field(default_factory=list)
    """What a reader must know about what the run measured, one line each (e.g. a budget
    too small for the LLM to be asked, a ``--budget`` the agent does not spend): the
    harness puts them in ``summary.json`` (``notes``) and the CLI prints them as warnings."""
    llm_proposals: dict[str, int] | None = None
    """The LLM's proposals as the agent counts them: ``{"made": n, "valid": k}`` (valid: it
    passed the agent's checks and was scored). None: no LLM proposed, or the agent does not
    count. The harness puts it in ``summary.json`` and reports a run whose ``made > 0`` and
    ``valid == 0`` as ``failed`` (``harness.status.run_status``)."""


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
