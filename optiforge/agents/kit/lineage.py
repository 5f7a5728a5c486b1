"""The one memory writer: candidates with their lineage, and lessons, idempotent on resume.

Every agent records what it tried through these two functions, so the memory's
contract (ids stable across a resume, parents only when stored, absence is ``None``)
lives in one place.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from optiforge.agents.kit.context import RunContext
from optiforge.memory.provenance import Provenance

if TYPE_CHECKING:
    from optiforge.memory.records import CandidateStatus


class Lesson(BaseModel):
    """A lesson a search problem learned in one round, with where its text came from.

    A problem's ``reflect`` returns these (a plain ``str`` is taken as ``unknown``, i.e.
    untrusted): a lesson quoting a candidate's output (its exception, stderr, a check's
    reason) is ``candidate`` and reaches later prompts only quoted as untrusted data.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = Field(min_length=1)
    provenance: Provenance
    """``measured`` / ``agent`` (shown as a lesson) or ``candidate`` / ``distilled`` /
    ``unknown`` (shown quoted, labelled as untrusted data; see ``memory.provenance``)."""

    @classmethod
    def of(cls, item: str | Lesson) -> Lesson:
        """``item`` as a ``Lesson``; a bare string is of ``unknown`` provenance."""
        return item if isinstance(item, Lesson) else cls(text=item, provenance="unknown")


def task_id(task: Any) -> str:
    """``suite/name@split``: how memory names a task."""
    return (
        f"{getattr(task, 'suite', '?')}/{getattr(task, 'name', '?')}@{getattr(task, 'split', '?')}"
    )


def task_signature(task: Any) -> str:
    """How lessons name a task: its suite and the name agents may see (``agent_name``), else
    a digest of its name. Lessons are recalled into later prompts; a CLI id names the
    answer on some suites (``funcfit/sine``, ``hdbo/levy4_in_25``) and must not reach them.
    """
    name = str(getattr(task, "name", "?"))
    seen = (
        getattr(task, "agent_name", "") or f"task-{hashlib.sha256(name.encode()).hexdigest()[:8]}"
    )
    return f"{getattr(task, 'suite', '?')}/{seen}"


def memory_id(ctx: RunContext, local_id: str, *, prefix: str = "cand") -> str:
    """A memory id for ``local_id`` that is the same on every resume of this run."""
    run = ctx.run_dir.name if ctx.run_dir else "norun"
    return f"{prefix}_{hashlib.sha256(f'{run}:{local_id}'.encode()).hexdigest()[:24]}"


def record_candidate(
    ctx: RunContext,
    *,
    mem_id: str,
    task: str,
    code: str | None = None,
    config: dict[str, Any] | None = None,
    parent_ids: Sequence[str] = (),
    metrics: dict[str, float] | None = None,
    score: float | None = None,
    status: CandidateStatus = "evaluated",
    tags: Sequence[str] = (),
    agent: str | None = None,
    provenance: Provenance = "agent",
) -> bool:
    """Store one candidate (no-op without memory, or when ``mem_id`` is already stored).

    ``provenance``: the code or config was written by the agent (or its LLM) and the
    metrics measured by the harness, hence ``agent``; a caller storing a candidate's own
    output in ``code`` or ``config`` says ``candidate``. Parents that are not in memory are dropped (a parent from a run without memory, or
    one that failed before it was written). Returns whether a record was written.
    """
    store = ctx.memory
    batch = _batches().get(id(store)) if store is not None else None
    if store is None or (batch is not None and mem_id in batch) or store.find(mem_id) is not None:
        return False
    from optiforge.memory import Candidate

    if code is None and config is None:
        config = {}

    def stored(p: str) -> bool:
        return (batch is not None and p in batch) or store.find(p) is not None

    cand = Candidate(
        id=mem_id,
        agent=agent or ctx.agent,
        task=task,
        code=code,
        config=config,
        parent_ids=[p for p in parent_ids if stored(p)],
        metrics=dict(metrics or {}),
        score=score,
        status=status,
        tags=[t for t in tags if t],
        provenance=provenance,
    )
    if batch is not None:
        batch[mem_id] = cand
    else:
        store.add_candidate(cand)
    return True


_LOCAL = threading.local()


def _batches() -> dict[int, dict[str, Any]]:
    """This thread's open ``candidate_batch`` buffers, by ``id(store)``: candidate id ->
    ``Candidate`` (per thread: another thread's records never land in a buffer that its
    owner is writing out)."""
    got: dict[int, dict[str, Any]] | None = getattr(_LOCAL, "batches", None)
    if got is None:
        got = _LOCAL.batches = {}
    return got


@contextmanager
def candidate_batch(ctx: RunContext) -> Iterator[None]:
    """Candidates recorded inside the block are written in one transaction when it ends.

    One commit per candidate cost about 5 s per 100 evaluations (every commit is synced to
    disk). The buffer is written in ``finally``: an exception, Ctrl-C included, still
    stores what was recorded before it (and is then re-raised); a kill -9 loses only the
    unwritten block, which is recorded again when its round is re-run on resume (ids are
    stable). Nested blocks write with the outermost one.
    """
    store = ctx.memory
    open_ = _batches()
    if store is None or id(store) in open_:
        yield
        return
    batch: dict[str, Any] = {}
    open_[id(store)] = batch
    try:
        yield
    finally:
        del open_[id(store)]
        if batch:
            store.add_candidates(list(batch.values()))


def record_lesson(
    ctx: RunContext,
    *,
    task: str,
    lesson: str,
    trajectory_summary: str,
    outcome: str,
    provenance: Provenance,
    tags: Sequence[str] = (),
    agent: str | None = None,
    score: float | None = None,
    mem_id: str | None = None,
) -> bool:
    """Store one lesson (an ``Experience``); no-op without memory, or when ``mem_id`` is
    already stored (None: a fresh id, always stored). Returns whether a record was written.

    ``provenance`` is required: the least trusted origin of any text in the record (a
    lesson that quotes candidate output is ``candidate``, see ``memory.provenance``)."""
    if ctx.memory is None or (mem_id is not None and ctx.memory.find(mem_id) is not None):
        return False
    from optiforge.memory import Experience, new_id

    ctx.memory.add_experience(
        Experience(
            id=mem_id or new_id("experience"),
            agent=agent or ctx.agent,
            task_signature=task,
            trajectory_summary=trajectory_summary,
            outcome=outcome,
            lesson=lesson,
            score=score,
            tags=list(tags),
            provenance=provenance,
        )
    )
    return True
