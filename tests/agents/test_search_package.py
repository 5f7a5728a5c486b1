"""``kit.search`` split by concern keeps its public names, and dispatches proposers once."""

from __future__ import annotations

from typing import Any

import optiforge.agents.kit as kit
from optiforge.agents.kit import search
from optiforge.agents.kit.search.protocols import propose

# what agents, the harness and tests imported from the one-file module
PUBLIC = [
    "EVALUATIONS", "REJECTED", "AnyProposer", "Evaluated", "HistoryProposer", "LLMOrOffline",
    "Proposal", "Proposer", "SearchConfig", "SearchOutcome", "SearchProblem", "SearchResult",
    "SearchState", "build_search_graph", "payload_key", "pick_proposer", "run_search",
    "search_graph", "search_result", "search_run", "search_outcome", "proposals_failure",
    "llm_counts", "proposal_counts",
]  # fmt: skip


def test_the_package_exports_what_the_module_did() -> None:
    missing = [n for n in PUBLIC if not hasattr(search, n)]
    assert not missing
    assert kit.search_outcome is search.search_outcome and kit.run_search is search.run_search


class _Plain:
    name = "plain"

    def propose(
        self, problem: Any, population: list[Any], n: int, round_: int, ctx: Any
    ) -> list[Any]:
        return [("plain", len(population), n, round_)]


class _Reader:
    name = "reader"

    def propose_from_history(
        self, problem: Any, history: list[Any], population: list[Any], n: int, round_: int, ctx: Any
    ) -> list[Any]:
        return [("reader", len(history), n, round_)]


def test_a_history_proposer_gets_the_history_and_only_it_reads_it() -> None:
    reads: list[int] = []

    def history() -> list[Any]:
        reads.append(1)
        return ["h1", "h2"]

    assert propose(_Reader(), None, history, [], 3, 2, None) == [("reader", 2, 3, 2)]  # type: ignore[arg-type]
    assert propose(_Plain(), None, history, ["p"], 1, 4, None) == [("plain", 1, 1, 4)]  # type: ignore[arg-type]
    assert reads == [1]  # the plain proposer's round never read the logs
