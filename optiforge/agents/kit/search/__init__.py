"""The shared search loop: propose -> materialize -> evaluate -> reflect -> select.

One LangGraph graph serves every agent that searches over candidates (kernels, programs,
configs). An agent supplies a ``SearchProblem`` (seeds, materialization, a picklable
evaluator, optional reflection) and a ``Proposer`` (an LLM one and a heuristic one behind
the same protocol). The graph state holds only serializable data (ids, payloads,
scores); live handles (LLM, sandbox, memory, executor, budget, tracer) travel in
``RunContext`` through LangGraph's ``context_schema``.

Durability: the graph is compiled with LangGraph's SQLite checkpointer in the run
directory (``checkpoints.sqlite``) and invoked with ``durability="sync"``, so every
finished node is on disk. Inside the evaluate node each finished evaluation is appended
to ``evaluations.jsonl`` at once, and the materialize node appends each candidate it
rejects to ``rejected.jsonl``; a run killed mid-node resumes with ``resume=True``
(``--resume RUN_DIR``) and does not repeat the evaluations that had finished.

The state is of bounded size (checkpointed after every node, so its size is the cost of
a checkpoint): the round's proposals and batch, the population, the best, counters, and
a pointer into the two logs, not the history. The history (every candidate so far, in
order) is the logs' records of the rounds the state has finished (``history_round``),
checked against the state's count and digest of their ids; with no run directory the
logs live in memory, and the code path is the same. Everything a resume needs is in the
state and the logs: a proposer that reads earlier attempts is a ``HistoryProposer``
(handed that history), never one that remembers them itself.

Budgets: the number of evaluations (``SearchConfig.max_evaluations``), LLM spend and
sandbox seconds (``RunContext.budget``). Running out is a normal stop
(``stop_reason``), not a crash.

The package, by concern: ``records`` (proposals, candidates, config, state, result),
``protocols`` (what an agent supplies; the one proposer dispatch), ``logs`` (the two
candidate logs and the history read from them), ``loop`` (``SearchLoop``: what the nodes
share, where evaluations run), ``nodes`` (the graph's nodes), ``graph`` (their wiring),
``outcome`` (a result as an ``AgentOutcome``), ``run`` (``search_run``, ``run_search``).
"""

from optiforge.agents.kit.search.graph import build_search_graph, search_graph
from optiforge.agents.kit.search.outcome import (
    llm_counts,
    proposal_counts,
    proposals_failure,
    search_outcome,
)
from optiforge.agents.kit.search.protocols import (
    AnyProposer,
    HistoryProposer,
    LLMOrOffline,
    Proposer,
    SearchProblem,
    pick_proposer,
    propose,
)
from optiforge.agents.kit.search.records import (
    EVALUATIONS,
    REJECTED,
    Evaluated,
    Proposal,
    SearchConfig,
    SearchResult,
    SearchState,
    payload_key,
)
from optiforge.agents.kit.search.run import SearchOutcome, run_search, search_result, search_run

__all__ = [
    "EVALUATIONS",
    "REJECTED",
    "AnyProposer",
    "Evaluated",
    "HistoryProposer",
    "LLMOrOffline",
    "Proposal",
    "Proposer",
    "SearchConfig",
    "SearchOutcome",
    "SearchProblem",
    "SearchResult",
    "SearchState",
    "build_search_graph",
    "payload_key",
    "llm_counts",
    "pick_proposer",
    "proposal_counts",
    "proposals_failure",
    "propose",
    "run_search",
    "search_graph",
    "search_outcome",
    "search_result",
    "search_run",
]
