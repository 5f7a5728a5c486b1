"""What an agent hands the search loop: its ``SearchProblem`` and ``Proposer`` (or
``HistoryProposer``), the LLM/offline pair chosen per run, and the one proposer dispatch."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from optiforge.agents.kit.context import RunContext
from optiforge.agents.kit.lineage import Lesson
from optiforge.agents.kit.search.records import Evaluated, Proposal
from optiforge.evals.protocol import Score, Task


@runtime_checkable
class SearchProblem(Protocol):
    """What an agent supplies to the loop."""

    task: Task
    higher_is_better: bool

    def initial(self, ctx: RunContext) -> list[Proposal]:
        """Seed candidates (evaluated in round 0)."""
        ...

    def materialize(self, proposal: Proposal, ctx: RunContext) -> dict[str, Any]:
        """Turn a proposal into an evaluable payload; raise ``InvalidCandidate`` to reject."""
        ...

    def evaluator(self) -> Callable[[dict[str, Any]], Score]:
        """A picklable callable scoring one materialized payload (runs in executor workers).

        One with a ``for_run(ctx)`` method (``SandboxedTaskEvaluator``) is bound to the run
        before it is used, so a problem is built without the run's handles."""
        ...

    def reflect(
        self, batch: list[Evaluated], population: list[Evaluated], ctx: RunContext
    ) -> Sequence[str | Lesson]:
        """Lessons from one round (may be empty); the loop stores them in memory.

        A lesson that holds any candidate output (an ``Evaluated.error``, stdout, stderr)
        is a ``Lesson(provenance="candidate")``; a bare ``str`` counts as ``unknown``.
        Both are shown to later prompts only quoted as untrusted data."""
        ...


@runtime_checkable
class Proposer(Protocol):
    """Makes new candidates from the current population (LLM or heuristic)."""

    name: str

    def propose(
        self,
        problem: SearchProblem,
        population: list[Evaluated],
        n: int,
        round_: int,
        ctx: RunContext,
    ) -> list[Proposal]:
        """Up to ``n`` new proposals; may raise ``BudgetExceeded``/``LLMError``."""
        ...


@runtime_checkable
class HistoryProposer(Protocol):
    """A proposer that reads every candidate evaluated so far, not only the survivors.

    ``history`` is every candidate of the earlier rounds (seeds, failures and candidates
    rejected at materialization included, in evaluation order), read from the run's logs
    up to the checkpointed round: a proposer that shows earlier attempts or skips tried
    configs reads them from here, never from its own or the problem's instance memory,
    so a resumed run proposes exactly as an uninterrupted one (a resume rebuilds the
    proposer and the problem from scratch).
    """

    name: str

    def propose_from_history(
        self,
        problem: SearchProblem,
        history: list[Evaluated],
        population: list[Evaluated],
        n: int,
        round_: int,
        ctx: RunContext,
    ) -> list[Proposal]:
        """Up to ``n`` new proposals; may raise ``BudgetExceeded``/``LLMError``."""
        ...


@dataclass(frozen=True)
class LLMOrOffline:
    """The LLM proposer when the run has an LLM (``ctx.llm``), else the offline one.

    The choice is made from the runtime context in every node, so a graph is built
    without live handles (``AgentSpec.build``) and proposes as its run's context says.
    """

    llm: Proposer | HistoryProposer
    offline: Proposer | HistoryProposer

    def pick(self, ctx: RunContext) -> Proposer | HistoryProposer:
        """The proposer of a run with context ``ctx``."""
        return self.llm if ctx.llm is not None else self.offline


AnyProposer = Proposer | HistoryProposer | LLMOrOffline
"""What a search takes: one proposer, or the LLM/offline pair chosen per run."""


def pick_proposer(proposer: AnyProposer, ctx: RunContext) -> Proposer | HistoryProposer:
    """The proposer that runs in context ``ctx``."""
    return proposer.pick(ctx) if isinstance(proposer, LLMOrOffline) else proposer


def propose(
    proposer: Proposer | HistoryProposer,
    problem: SearchProblem,
    history: Callable[[], list[Evaluated]],
    population: list[Evaluated],
    n: int,
    round_: int,
    ctx: RunContext,
) -> list[Proposal]:
    """Up to ``n`` proposals of round ``round_``: a ``HistoryProposer`` is handed the search's
    ``history()`` (read only for it), any other proposer the population alone."""
    if isinstance(proposer, HistoryProposer):
        return proposer.propose_from_history(problem, history(), population, n, round_, ctx)
    return proposer.propose(problem, population, n, round_, ctx)
