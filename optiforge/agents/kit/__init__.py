"""The agent kit: what every agent is built from, written once.

- ``context``: ``RunContext``, the live handles a graph's nodes share;
- ``run``: ``AgentRun``, what ``AgentSpec.build`` returns and the harness drives;
- ``driver``: ``run_graph``, the durable driver (checkpoint, resume, close);
- ``search``: the propose -> materialize -> evaluate -> reflect -> select loop;
- ``lineage``: the memory writer (candidates with lineage, lessons);
- ``evaluator``: the sandboxed task evaluator an executor can ship to a worker;
- ``outcome``: a search result as the harness's ``AgentOutcome``.
"""

from optiforge.agents.kit.context import RunContext
from optiforge.agents.kit.driver import CHECKPOINTS, GraphRun, open_checkpointer, run_graph
from optiforge.agents.kit.outcome import AgentOutcome
from optiforge.agents.kit.run import AgentRun
from optiforge.agents.kit.search import (
    EVALUATIONS,
    Evaluated,
    HistoryProposer,
    LLMOrOffline,
    Proposal,
    Proposer,
    SearchConfig,
    SearchProblem,
    SearchResult,
    SearchState,
    build_search_graph,
    payload_key,
    pick_proposer,
    proposals_failure,
    run_search,
    search_graph,
    search_outcome,
    search_result,
    search_run,
)

__all__ = [
    "AgentOutcome",
    "AgentRun",
    "LLMOrOffline",
    "pick_proposer",
    "search_graph",
    "search_result",
    "search_run",
    "proposals_failure",
    "search_outcome",
    "CHECKPOINTS",
    "EVALUATIONS",
    "Evaluated",
    "GraphRun",
    "HistoryProposer",
    "Proposal",
    "Proposer",
    "RunContext",
    "SearchConfig",
    "SearchProblem",
    "SearchResult",
    "SearchState",
    "build_search_graph",
    "open_checkpointer",
    "payload_key",
    "run_graph",
    "run_search",
]
