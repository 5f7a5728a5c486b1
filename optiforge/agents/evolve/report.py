"""What ``evolve`` reports: the kit's search outcome (the best program, the search counts);
a run whose LLM proposed not one passing program is a failed run."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from optiforge.agents.kit import (
    AgentOutcome,
    RunContext,
    SearchResult,
    pick_proposer,
    search_outcome,
)
from optiforge.agents.kit.search import AnyProposer


class EvolveExtra(BaseModel):
    """``AgentOutcome.extra`` of an evolve run: the kit's search counts, nothing of its own."""

    model_config = ConfigDict(extra="forbid")

    proposer: str
    """``llm`` or ``mutation``."""
    n_duplicates: int
    n_invalid: int
    rounds: int
    proposals: dict[str, int]
    """The proposals' counts by fate (``kit.outcome.proposal_counts``)."""


def evolve_result(
    result: SearchResult, ctx: RunContext, *, proposer: AnyProposer, higher_is_better: bool
) -> AgentOutcome:
    """The outcome of a search by ``proposer`` (the one that ran in ``ctx``)."""
    name = pick_proposer(proposer, ctx).name
    return evolve_outcome(result, name, higher_is_better, ctx.llm is not None)


def evolve_outcome(
    result: SearchResult, proposer: str, higher_is_better: bool, llm: bool
) -> AgentOutcome:
    """The best program as the candidate; search counts in ``extra`` (``EvolveExtra``)."""
    out = search_outcome(result, proposer=proposer, higher_is_better=higher_is_better, llm=llm)
    return out.model_copy(update={"extra": EvolveExtra.model_validate(out.extra).model_dump()})
