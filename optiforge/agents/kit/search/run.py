"""The search as an ``AgentRun`` (``search_run``) or run at once (``run_search``): the
checkpoint cross-checked against the logs on a resume, the result read from the logs."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

from optiforge.agents.kit.context import RunContext
from optiforge.agents.kit.driver import CHECKPOINTS, FORCE_RESTART_HINT
from optiforge.agents.kit.outcome import AgentOutcome
from optiforge.agents.kit.run import AgentRun
from optiforge.agents.kit.search.graph import loop_graph
from optiforge.agents.kit.search.logs import NO_DIGEST, CandidateLogs, is_mine
from optiforge.agents.kit.search.loop import SearchLoop
from optiforge.agents.kit.search.outcome import search_outcome
from optiforge.agents.kit.search.protocols import AnyProposer, SearchProblem, pick_proposer
from optiforge.agents.kit.search.records import (
    EVALUATIONS,
    REJECTED,
    Evaluated,
    SearchConfig,
    SearchResult,
)
from optiforge.errors import RunRecordError

SearchOutcome = Callable[[SearchResult, RunContext], AgentOutcome]
"""``outcome(result, ctx) -> AgentOutcome``: a search's result as the run's outcome."""


def search_run(
    problem: SearchProblem,
    proposer: AnyProposer,
    config: SearchConfig,
    *,
    outcome: SearchOutcome | None = None,
    thread_id: str = "search",
) -> AgentRun:
    """The search as an ``AgentRun``; checkpoints go to ``ctx.run_dir`` when it is set.

    outcome: the result read as an ``AgentOutcome``; default ``search_outcome`` with the
    proposer that ran (an LLM one's run fails when none of its proposals passed).
    """
    return _search_run(problem, proposer, config, outcome, thread_id)[0]


def _search_run(
    problem: SearchProblem,
    proposer: AnyProposer,
    config: SearchConfig,
    outcome: SearchOutcome | None,
    thread_id: str,
) -> tuple[AgentRun, Callable[[dict[str, Any], RunContext], SearchResult]]:
    """``search_run`` and ``result(final_state, ctx)``: its ``SearchResult`` (the
    history read from the run's logs)."""
    prefix = "" if thread_id == "search" else f"{thread_id}."
    loop = SearchLoop(problem, proposer, config, prefix, problem.evaluator())

    def check(conn: sqlite3.Connection, values: dict[str, Any], ctx: RunContext) -> None:
        check_checkpoint(conn, values, ctx.run_dir, prefix, config)

    def result(state: dict[str, Any], ctx: RunContext) -> SearchResult:
        return search_result(state, loop.history(state, ctx).rows)

    def read(state: dict[str, Any], ctx: RunContext) -> AgentOutcome:
        res = result(state, ctx)
        if outcome is not None:
            return outcome(res, ctx)
        return search_outcome(
            res, proposer=pick_proposer(proposer, ctx).name,
            higher_is_better=problem.higher_is_better, llm=ctx.llm is not None,
        )  # fmt: skip

    run = AgentRun(
        graph=loop_graph(loop), outcome=read,
        start={"round": 0}, thread_id=thread_id, recursion_limit=10 * config.max_rounds + 50,
        check=check, what=f"search {thread_id!r}",
    )  # fmt: skip
    return run, result


def run_search(
    problem: SearchProblem,
    proposer: AnyProposer,
    ctx: RunContext,
    config: SearchConfig,
    *,
    thread_id: str = "search",
    resume: bool = False,
) -> SearchResult:
    """Run (or resume) the search; checkpoints go to ``ctx.run_dir`` when it is set.

    Raises:
        ConfigError: ``resume`` without a run directory, or a fresh start over a run.
        RunRecordError: the checkpoint or the evaluation log is damaged.
    """
    run, result = _search_run(problem, proposer, config, None, thread_id)
    return result(run.drive(ctx, resume=resume).state, ctx)


def check_checkpoint(
    conn: Any, values: dict[str, Any], run_dir: Path | None, prefix: str, config: SearchConfig
) -> None:
    """Refuse to resume from a damaged checkpoint (one line naming the file).

    A torn or cut WAL does not fail to open: SQLite drops the frames after the damage
    and the run would silently continue from an older state. So the checkpoint is
    cross-checked against the candidate logs: the candidates of the rounds it has
    finished must be exactly the ones it counts (their number and the digest of their
    ids), and the evaluation log may be ahead of it by at most the round in flight
    (the rejection log too, which is not checked: a re-run round logs no rejection twice).
    """
    assert run_dir is not None
    db = run_dir / CHECKPOINTS
    hint = FORCE_RESTART_HINT
    try:
        row = conn.execute("PRAGMA integrity_check").fetchone()
    except sqlite3.DatabaseError as e:
        raise RunRecordError(f"{db} is damaged ({e}); {hint}") from None
    if not row or row[0] != "ok":
        raise RunRecordError(f"{db} is damaged (integrity check: {row}); {hint}")
    if "history" in values or "seen" in values:
        raise RunRecordError(
            f"{db} was written by an older optiforge (its state holds the whole history) "
            f"and cannot be resumed by this one; {hint}"
        )
    logs = CandidateLogs(run_dir)
    through = values.get("history_round", 0)
    hist = logs.history(prefix, through)
    n = values.get("n_history", 0)
    if len(hist.rows) != n or hist.digest != values.get("history_digest", NO_DIGEST):
        raise RunRecordError(
            f"{run_dir / EVALUATIONS} and {REJECTED} hold {len(hist.rows)} candidates of the "
            f"rounds {db} has finished, where it records {n} (or other ones): the logs "
            f"were cut or edited; {hint}"
        )
    ahead = [
        r
        for rid, r in logs.evaluated.done.items()
        if is_mine(rid, prefix) and r["round"] >= through
    ]
    in_flight = max(config.proposals_per_round, len(values.get("batch") or []))
    overlap = values.get("overlap", config.overlap)
    rounds_in_flight = 2 if overlap else 1  # overlap: this round and the next
    if len(ahead) > rounds_in_flight * in_flight or any(
        r["round"] >= through + rounds_in_flight for r in ahead
    ):
        raise RunRecordError(
            f"{db} is behind {EVALUATIONS} by {len(ahead)} evaluations (at most "
            f"{rounds_in_flight * in_flight} of its rounds from {through} can be in flight): the checkpoint or its "
            f"WAL was cut or damaged; {hint}"
        )


def search_result(state: dict[str, Any], history: list[dict[str, Any]]) -> SearchResult:
    """The search's final graph state and its history (read from the run's logs, see
    ``search_run``) as a ``SearchResult``."""
    best = state.get("best")
    return SearchResult(
        best=Evaluated.model_validate(best) if best else None,
        history=[Evaluated.model_validate(h) for h in history],
        population=[Evaluated.model_validate(p) for p in state.get("population", [])],
        n_evaluations=state.get("n_evaluations", 0),
        n_duplicates=state.get("n_duplicates", 0),
        n_invalid=state.get("n_invalid", 0),
        rounds=state.get("round", 0),
        stop_reason=state.get("stop_reason", ""),
        lessons=state.get("lessons", []),
    )
