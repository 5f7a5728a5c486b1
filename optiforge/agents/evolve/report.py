"""What ``evolve`` reports: the kit's search outcome (the best program, the search counts);
a run whose LLM proposed not one passing program is a failed run."""

from __future__ import annotations

from optiforge.agents.kit import AgentOutcome, SearchResult, search_outcome


def evolve_outcome(
    result: SearchResult, proposer: str, higher_is_better: bool, llm: bool
) -> AgentOutcome:
    """The best program as the candidate; search counts in ``extra``."""
    return search_outcome(result, proposer=proposer, higher_is_better=higher_is_better, llm=llm)
