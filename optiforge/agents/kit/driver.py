"""``run_graph``: the one durable driver (checkpoint, resume, close) for every agent graph.

A graph is compiled with LangGraph's SQLite checkpointer in the run directory
(``checkpoints.sqlite``) and invoked with ``durability="sync"``, so every finished node
is on disk before the next one starts. A run killed at any point resumes from its last
finished node (``resume=True``, the CLI's ``--resume``); a finished run resumed returns
its final state without running anything.

The run's LLM ledger (calls, tokens, USD, sandbox seconds spent by this graph) is written
into every checkpoint's metadata (``LEDGER_KEY``) and restored into ``ctx.budget`` on a
resume, so a resumed run's summary counts the spend made before the interrupt: it equals
an uninterrupted run's (work after the last checkpoint is redone, and counted once).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optiforge.agents.kit.context import RunContext
from optiforge.errors import ConfigError, RunRecordError

CHECKPOINTS = "checkpoints.sqlite"
LEDGER_KEY = "optiforge_ledger"
"""Checkpoint-metadata key of the graph's spend so far (``ledger_of``)."""
PROGRESS_KEY = "optiforge_progress"
"""Checkpoint-metadata key of the last ``ctx.progress`` report (a resumed progress bar
starts at the evaluations already done, not at 0)."""
LEDGER_FIELDS = ("calls", "tokens", "usd", "sandbox_s", "unpriced_calls")
FORCE_RESTART_HINT = "rerun with --force-restart to move the run aside and start over"


def open_checkpointer(path: Path) -> tuple[sqlite3.Connection, Any]:
    """A LangGraph ``SqliteSaver`` on ``path`` (WAL, ``synchronous=NORMAL``) and its connection.

    WAL with NORMAL sync makes each commit durable against a crash or ``kill -9`` of this
    process (the same guarantee as the event log) without an fsync per graph step, which
    otherwise dominates a loop of cheap evaluations. The caller closes the connection.

    Raises:
        RunRecordError: the file exists and is not a SQLite database.
    """
    from langgraph.checkpoint.sqlite import SqliteSaver

    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        conn = sqlite3.connect(str(path), check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
    except sqlite3.DatabaseError as e:
        raise RunRecordError(f"{path} is damaged ({e}); {FORCE_RESTART_HINT}") from None
    return conn, SqliteSaver(conn)


def graph_finished(snapshot: Any) -> bool:
    """Whether a checkpointed graph (``graph.get_state``) has run to its end.

    ``snapshot.next`` alone does not say so: it leaves out the next step's tasks whose
    writes are saved already (a kill landed after a node's writes and before the
    checkpoint that follows them), so it is empty mid-run too. Those tasks are still
    in ``snapshot.tasks``; a finished graph has none.
    """
    return not snapshot.next and not snapshot.tasks


@dataclass(frozen=True)
class GraphRun:
    """What ``run_graph`` returns."""

    state: dict[str, Any]
    """The graph's final state."""
    resumed: bool
    """Started from a checkpoint rather than from ``start``."""
    already_done: bool
    """The checkpointed run had finished: nothing ran this time."""


def ledger_of(budget: Any) -> dict[str, float]:
    """The spend a ``Budget`` holds, as ``{field: used}`` over ``LEDGER_FIELDS``."""
    if budget is None:
        return dict.fromkeys(LEDGER_FIELDS, 0.0)
    snap = budget.snapshot()
    return {k: float((snap.get(k) or {}).get("used") or 0) for k in LEDGER_FIELDS}


def _restore_ledger(budget: Any, saved: Any) -> None:
    """Add a checkpoint's ledger to ``budget`` (a resumed run's spend before the interrupt)."""
    if budget is None or not isinstance(saved, dict):
        return
    vals = {k: float(saved.get(k) or 0) for k in LEDGER_FIELDS}
    budget.restore(calls=int(vals["calls"]), tokens=int(vals["tokens"]), usd=vals["usd"],
                   sandbox_s=vals["sandbox_s"], unpriced_calls=int(vals["unpriced_calls"]))  # fmt: skip


def _stamp_ledger(
    saver: Any, budget: Any, base: dict[str, float], last_progress: dict[str, Any]
) -> None:
    """Make ``saver`` write the graph's spend since ``base`` (and ``last_progress``, the
    latest progress report) into every checkpoint it puts.

    The ledger then lives in the same row, written in the same transaction, as the state
    it paid for: a resume restores exactly the spend of the state it continues from.
    """
    put = saver.put

    def put_with_ledger(config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        now = ledger_of(budget)
        spent = {k: now[k] - base[k] for k in LEDGER_FIELDS}
        meta = {**(metadata or {}), LEDGER_KEY: spent}
        if last_progress:
            meta[PROGRESS_KEY] = _jsonable(last_progress)
        return put(config, checkpoint, meta, new_versions)

    saver.put = put_with_ledger


def _jsonable(info: dict[str, Any]) -> dict[str, Any]:
    """The JSON scalars of a progress report (checkpoint metadata is JSON)."""
    return {k: v for k, v in info.items() if isinstance(v, int | float | str | bool | None)}


def _remember_progress(ctx: RunContext, last: dict[str, Any]) -> Callable[[], None]:
    """Keep ``ctx.progress``'s latest report in ``last``; returns the undo."""
    report = ctx.progress
    if report is None:
        return lambda: None

    def remembering(info: dict[str, Any]) -> None:
        last.clear()
        last.update(info)
        report(info)

    ctx.progress = remembering

    def undo() -> None:
        ctx.progress = report

    return undo


ResumeCheck = Callable[[sqlite3.Connection, dict[str, Any], RunContext], None]
"""``check(conn, checkpointed_values, ctx)``: raise ``RunRecordError`` to refuse a resume."""


def run_graph(
    build: Callable[[Any | None], Any],
    ctx: RunContext,
    *,
    start: Mapping[str, Any],
    thread_id: str,
    resume: bool = False,
    durable: bool = True,
    recursion_limit: int = 100,
    check: ResumeCheck | None = None,
    what: str = "run",
    checkpoints: str = CHECKPOINTS,
) -> GraphRun:
    """Build, (re)start and run one agent graph to its end; always closes the checkpoint.

    Args:
        build: ``checkpointer -> compiled graph`` (the checkpointer is None when the run
            is not durable).
        ctx: the run's live handles; checkpoints go to ``ctx.run_dir`` when it is set.
        start: the initial state of a fresh run.
        thread_id: the graph's thread in the checkpoint (several graphs may share a run).
        resume: continue the checkpointed thread instead of refusing to overwrite it.
        durable: checkpoint when ``ctx.run_dir`` is set (False: never).
        recursion_limit: LangGraph's step cap.
        check: called on every resume (also when the thread has no checkpoint yet).
        what: how errors name the graph (e.g. ``"AutoREM thread 'x'"``).
        checkpoints: the checkpoint file's name in the run directory.

    Raises:
        ConfigError: resume without a run directory, or a fresh start over a thread
            that already holds a run.
        RunRecordError: the checkpoint is damaged (or ``check`` refused it).
    """
    if resume and (ctx.run_dir is None or not durable):
        raise ConfigError(f"{what}: resume needs a run directory")
    conn: sqlite3.Connection | None = None
    checkpointer = None
    last_progress: dict[str, Any] = {}
    undo_progress: Callable[[], None] = lambda: None  # noqa: E731
    if durable and ctx.run_dir is not None:
        conn, checkpointer = open_checkpointer(ctx.run_dir / checkpoints)
        # the spend before this call (a pipeline's shared ledger holds other runs' spend)
        _stamp_ledger(checkpointer, ctx.budget, ledger_of(ctx.budget), last_progress)
        undo_progress = _remember_progress(ctx, last_progress)
    try:
        graph = build(checkpointer)
        cfg: dict[str, Any] = {
            "configurable": {"thread_id": thread_id},
            "recursion_limit": recursion_limit,
        }
        initial: dict[str, Any] | None = dict(start)
        resumed = False
        if checkpointer is not None:
            assert conn is not None and ctx.run_dir is not None
            try:
                snapshot = graph.get_state(cfg)
            except sqlite3.DatabaseError as e:
                path = ctx.run_dir / checkpoints
                raise RunRecordError(f"{path} is damaged ({e}); {FORCE_RESTART_HINT}") from None
            if snapshot.values and not resume:
                raise ConfigError(
                    f"{ctx.run_dir} already holds {what} (thread {thread_id!r}); "
                    "pass resume=True (--resume)"
                )
            if resume and check is not None:
                check(conn, dict(snapshot.values or {}), ctx)
            if snapshot.values:
                resumed, initial = True, None  # continue from the last checkpoint
                # the spend that bought this state: the summary and the caps count it
                meta = snapshot.metadata or {}
                if not ctx.ledger_restored:
                    _restore_ledger(ctx.budget, meta.get(LEDGER_KEY))
                saved = meta.get(PROGRESS_KEY)
                if isinstance(saved, dict) and saved and ctx.progress is not None:
                    ctx.progress(dict(saved))  # the bar starts at the evaluations done
                if graph_finished(snapshot):
                    return GraphRun(dict(snapshot.values), resumed=True, already_done=True)
        # "sync": every finished node is on disk before the next starts (needs a checkpointer)
        kw: dict[str, Any] = {"durability": "sync"} if checkpointer is not None else {}
        final = graph.invoke(initial, cfg, context=ctx, **kw)
        return GraphRun(dict(final), resumed=resumed, already_done=False)
    finally:
        undo_progress()
        if conn is not None:
            conn.close()
