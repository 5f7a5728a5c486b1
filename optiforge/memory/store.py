"""The experience-memory store: typed records over SQLAlchemy 2 with retrieval.

SQLite (WAL, busy timeout, foreign keys) by default at ``~/.optiforge/memory.db``
(or env ``OPTIFORGE_MEMORY``); any SQLAlchemy URL works, PostgreSQL included. Every
write is its own transaction, so a crash loses nothing already committed. Retrieval is
brute-force cosine over embeddings cached in numpy (``n x dim``), or lexical: SQLite
FTS5 with bm25 ranking, and a token ``LIKE`` count on other databases.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, TypeVar

import numpy as np
from pydantic import ValidationError
from sqlalchemy import (
    Engine,
    case,
    create_engine,
    delete,
    event,
    func,
    insert,
    literal,
    select,
    text,
    update,
)
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, IntegrityError, OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session
from sqlalchemy.pool import StaticPool

from optiforge.errors import MemoryStoreError
from optiforge.memory._schema import (
    KIND_ROWS,
    PROVENANCE_TABLES,
    SCHEMA_VERSION,
    Base,
    BlockEdge,
    BlockRow,
    CandidateEdge,
    CandidateRow,
    DocumentRow,
    ExperienceRow,
    Meta,
    ToolRow,
    VectorRow,
)
from optiforge.memory.embeddings import (
    SLOW_LOAD_NOTICE_S,
    Embedder,
    EmbedderChoice,
    notice_after,
    resolve_embedder,
)
from optiforge.memory.provenance import PROVENANCES
from optiforge.memory.records import (
    RECORD_TYPES,
    Candidate,
    Experience,
    Hit,
    KnowledgeBlock,
    Record,
    RecordKind,
    Tool,
)
from optiforge.memory.scope import (  # noqa: F401 - re-exported
    DEFAULT_URL,
    MEMORY_SCOPES,
    PROJECTS_DIR,
    default_url,
    scoped_url,
)

T = TypeVar("T")

_log = logging.getLogger(__name__)

JSONL_FORMAT = "optiforge-memory/1"
_LOCK_RETRY_S = 60.0
_EMBED_BATCH = 256


def _provenances(provenance: Iterable[str] | None) -> frozenset[str] | None:
    """The provenance filter as a set (None: no filter), each value checked."""
    if provenance is None:
        return None
    if isinstance(provenance, str):
        provenance = [provenance]
    want = frozenset(provenance)
    bad = sorted(want - set(PROVENANCES))
    if bad:
        raise MemoryStoreError(
            f"unknown provenance {', '.join(map(repr, bad))}; use any of {', '.join(PROVENANCES)}"
        )
    return want


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


def _is_locked(exc: OperationalError) -> bool:
    msg = str(exc.orig).lower() if exc.orig is not None else str(exc).lower()
    return "locked" in msg or "busy" in msg


# -- rows <-> records -----------------------------------------------------------------


def _agent_of(rec: Record) -> str | None:
    return rec.author_agent if isinstance(rec, Tool) else rec.agent


def _row_from(rec: Record) -> Any:
    data = rec.model_dump(exclude={"kind", "parent_ids"})
    return KIND_ROWS[rec.kind](**data)


def _record_from(kind: str, row: Any, parent_ids: list[str] | None = None) -> Record:
    cls = RECORD_TYPES[kind]
    data = {c.key: getattr(row, c.key) for c in row.__table__.columns}
    if kind in ("candidate", "block"):
        data["parent_ids"] = parent_ids or []
    return cls.model_validate(data)  # type: ignore[return-value]


_EDGES: dict[str, type[CandidateEdge] | type[BlockEdge]] = {
    "candidate": CandidateEdge,
    "block": BlockEdge,
}


class _VectorCache:
    """Vectors of one model held as a growable ``capacity x dim`` float32 buffer."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self.version: int | None = None
        self.max_seq = 0
        self.n = 0
        self.buf = np.zeros((0, dim), dtype=np.float32)
        self.ids: list[str] = []
        self.kinds: list[str] = []
        self.agents: list[str | None] = []
        self.tags: list[frozenset[str]] = []
        self.provs: list[str] = []
        self.prov_arr = np.zeros(0, dtype="<U10")
        self.kind_arr = np.zeros(0, dtype="<U10")
        self.agent_arr = np.zeros(0, dtype=object)

    def append(
        self, rows: Sequence[tuple[int, str, str, str | None, list[str], str, bytes]]
    ) -> None:
        if not rows:
            return
        need = self.n + len(rows)
        if need > self.buf.shape[0]:
            # Doubling keeps interleaved write/search O(1) amortised instead of O(n) copies.
            new = np.zeros((max(need, 2 * self.buf.shape[0], 1024), self.dim), dtype=np.float32)
            new[: self.n] = self.buf[: self.n]
            self.buf = new
        for i, (seq, rid, kind, agent, tags, prov, vec) in enumerate(rows):
            v = np.frombuffer(vec, dtype=np.float32)
            if v.shape[0] != self.dim:
                raise MemoryStoreError(f"vector of {rid} has dim {v.shape[0]}, expected {self.dim}")
            self.buf[self.n + i] = v
            self.ids.append(rid)
            self.kinds.append(kind)
            self.agents.append(agent)
            self.tags.append(frozenset(tags or ()))
            self.provs.append(prov)
            self.max_seq = max(self.max_seq, seq)
        self.n = need
        self.kind_arr = np.asarray(self.kinds, dtype="<U10")
        self.agent_arr = np.asarray(self.agents, dtype=object)
        self.prov_arr = np.asarray(self.provs, dtype="<U10")


EMBEDDED_KINDS = frozenset({"experience", "tool", "block"})
"""Kinds that get vectors. Candidates (code/config of every search point, thousands per
run) are searched lexically only: embedding each one would dominate a search loop's cost,
and MiniLM sentence vectors say little about code."""


def _embed_texts(recs: Sequence[Record]) -> list[str]:
    return [r.search_text() for r in recs if r.kind in EMBEDDED_KINDS]


class Store:
    """Experience / candidate / tool / knowledge-block memory shared by agents and runs.

    Args:
        url: SQLAlchemy URL; ``None`` -> env ``OPTIFORGE_MEMORY`` or
            ``sqlite:///~/.optiforge/memory.db`` (``~`` is expanded, the folder created).
        embedder: an ``Embedder``, ``None`` for lexical retrieval only, or ``"auto"``
            (the bundled MiniLM model when installed, else ``None``).
        defer_embedding: while the embedder is not loaded yet (``loaded`` False: MiniLM
            costs seconds and ~640 MiB to load), store new records without vectors instead
            of loading it: a write never waits for the model. The vectors are made when a
            search needs them (``reindex``, run by every embedding search) or by
            ``reindex`` / ``optiforge memory reindex``. A run's store defers: most runs
            write lessons but never search them by embedding.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        embedder: EmbedderChoice = "auto",
        defer_embedding: bool = False,
    ) -> None:
        self._url_str = url or default_url()
        self.embedder: Embedder | None = resolve_embedder(embedder)
        self.defer_embedding = defer_embedding
        self._wengine, self._rengine = self._make_engines(self._url_str)
        self.dialect = self._wengine.dialect.name
        self.fts = False
        self._cache: _VectorCache | None = None
        self._cache_lock = threading.Lock()
        self._init_schema()

    # -- engines and transactions -------------------------------------------------------

    def _make_engines(self, url: str) -> tuple[Engine, Engine]:
        try:
            u = make_url(url)
        except ArgumentError as exc:
            raise MemoryStoreError(f"bad memory URL {url!r}: {_one_line(exc)}") from exc
        if u.get_backend_name() != "sqlite":
            try:
                eng = create_engine(u, pool_pre_ping=True)
            except (ImportError, SQLAlchemyError) as exc:
                raise MemoryStoreError(f"cannot open memory {u!r}: {_one_line(exc)}") from exc
            return eng, eng
        db = u.database or ""
        in_memory = db in ("", ":memory:") or "mode=memory" in db
        if not in_memory:
            path = Path(db).expanduser()
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise MemoryStoreError(f"cannot create {path.parent}: {exc}") from exc
            u = u.set(database=str(path))
        kwargs: dict[str, Any] = {"connect_args": {"timeout": 30.0, "check_same_thread": False}}
        if in_memory:
            # One shared connection, else every pooled connection sees its own empty DB.
            eng = create_engine(u, poolclass=StaticPool, **kwargs)
            self._sqlite_events(eng, immediate=True, wal=False)
            return eng, eng
        weng = create_engine(u, **kwargs)
        reng = create_engine(u, **kwargs)
        # Writers take the write lock at BEGIN (IMMEDIATE): a deferred transaction that
        # upgrades from read to write fails with SQLITE_BUSY without honouring the timeout.
        self._sqlite_events(weng, immediate=True, wal=True)
        self._sqlite_events(reng, immediate=False, wal=True)
        return weng, reng

    @staticmethod
    def _sqlite_events(engine: Engine, *, immediate: bool, wal: bool) -> None:
        @event.listens_for(engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            # Let SQLAlchemy's "begin" event emit BEGIN itself (pysqlite's own is deferred).
            dbapi_conn.isolation_level = None
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA busy_timeout = 30000")
            cur.execute("PRAGMA foreign_keys = ON")
            if wal:
                cur.execute("PRAGMA journal_mode = WAL")
            # FULL: a commit is on disk before it returns (kill -9 and power loss safe).
            cur.execute("PRAGMA synchronous = FULL")
            cur.close()

        @event.listens_for(engine, "begin")
        def _on_begin(conn: Any) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    def _write(self, fn: Callable[[Session], T]) -> T:
        """Run ``fn`` in one write transaction, retrying while the database is locked."""
        deadline = time.monotonic() + _LOCK_RETRY_S
        delay = 0.01
        while True:
            try:
                with Session(self._wengine, expire_on_commit=False) as s, s.begin():
                    out = fn(s)
                    s.execute(
                        update(Meta).where(Meta.key == "version").values(value=Meta.value + 1)
                    )
                return out
            except OperationalError as exc:
                if _is_locked(exc) and time.monotonic() < deadline:
                    time.sleep(delay)
                    delay = min(delay * 2, 0.5)
                    continue
                raise MemoryStoreError(f"memory write failed: {_one_line(exc)}") from exc
            except IntegrityError as exc:
                raise MemoryStoreError(
                    f"memory write rejected: {_one_line(exc.orig or exc)}"
                ) from exc
            except SQLAlchemyError as exc:
                raise MemoryStoreError(f"memory write failed: {_one_line(exc)}") from exc

    @contextmanager
    def _read(self) -> Any:
        try:
            with Session(self._rengine) as s, s.begin():
                yield s
        except OperationalError as exc:
            raise MemoryStoreError(f"memory read failed: {_one_line(exc)}") from exc

    def _init_schema(self) -> None:
        def create(s: Session) -> None:
            Base.metadata.create_all(s.connection())
            if s.get(Meta, "version") is None:
                s.add(Meta(key="version", value=0))
                s.flush()
            self._migrate(s)
            if self.dialect == "sqlite":
                try:
                    with s.begin_nested():
                        s.execute(
                            text(
                                "CREATE VIRTUAL TABLE IF NOT EXISTS memory_fts USING fts5("
                                "record_id UNINDEXED, kind UNINDEXED, body, "
                                "tokenize='porter unicode61')"
                            )
                        )
                    self.fts = True
                except OperationalError as exc:
                    if "fts5" not in str(exc).lower():
                        raise
                    self.fts = False

        try:
            self._write(create)
        except MemoryStoreError as exc:
            raise MemoryStoreError(f"cannot open memory {self.url}: {exc}") from exc

    @staticmethod
    def _migrate(s: Session) -> None:
        """Bring a database written by an older optiforge to ``SCHEMA_VERSION`` in place.

        Version 1 -> 2 adds ``provenance`` columns; the rows already there read as
        ``unknown`` (untrusted), since nothing says where their text came from.
        """
        row = s.get(Meta, "schema")
        have = row.value if row is not None else 1
        if have > SCHEMA_VERSION:
            raise MemoryStoreError(
                f"memory schema version {have} is newer than this optiforge's "
                f"({SCHEMA_VERSION}); upgrade optiforge to open it"
            )
        conn = s.connection()
        insp = sa_inspect(conn)
        for table in PROVENANCE_TABLES:
            if "provenance" not in {c["name"] for c in insp.get_columns(table)}:
                conn.exec_driver_sql(
                    f"ALTER TABLE {table} ADD COLUMN provenance VARCHAR(16) "
                    "NOT NULL DEFAULT 'unknown'"
                )
        if row is None:
            s.add(Meta(key="schema", value=SCHEMA_VERSION))
        elif row.value != SCHEMA_VERSION:
            row.value = SCHEMA_VERSION
        s.flush()

    @property
    def url(self) -> str:
        """The database URL with any password hidden."""
        return make_url(self._url_str).render_as_string(hide_password=True)

    def close(self) -> None:
        """Release database connections."""
        self._wengine.dispose()
        if self._rengine is not self._wengine:
            self._rengine.dispose()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- documents (search text) --------------------------------------------------------

    def _embed_on_write(self, texts: Sequence[str]) -> np.ndarray | None:
        """Vectors for records being written, or ``None`` (no embedder, or deferred: the
        model is not loaded and ``defer_embedding`` is on)."""
        if self.defer_embedding and not getattr(self.embedder, "loaded", True):
            return None
        return self._embed(texts)

    def _embed(self, texts: Sequence[str]) -> np.ndarray | None:
        """``n x dim`` vectors for ``texts``, or ``None`` without an embedder."""
        if self.embedder is None or not texts:
            return None
        out = [
            self.embedder.embed(texts[i : i + _EMBED_BATCH])
            for i in range(0, len(texts), _EMBED_BATCH)
        ]
        vecs = np.concatenate(out).astype(np.float32, copy=False)
        if vecs.shape != (len(texts), self.embedder.dim):
            raise MemoryStoreError(
                f"embedder {self.embedder.name} returned {vecs.shape}, expected "
                f"{(len(texts), self.embedder.dim)}"
            )
        return vecs

    def _replace_document(self, s: Session, rec: Record) -> None:
        """Rewrite a record's search text; its vectors are dropped and re-made lazily."""
        s.execute(delete(VectorRow).where(VectorRow.record_id == rec.id))
        s.execute(
            update(DocumentRow)
            .where(DocumentRow.record_id == rec.id)
            .values(agent=_agent_of(rec), tags=rec.tags, body=rec.search_text())
        )
        if self.fts:
            s.execute(text("DELETE FROM memory_fts WHERE record_id = :r"), {"r": rec.id})
            s.execute(
                text("INSERT INTO memory_fts(record_id, kind, body) VALUES (:r, :k, :b)"),
                {"r": rec.id, "k": rec.kind, "b": rec.search_text()},
            )

    def _insert(self, s: Session, rec: Record, vec: np.ndarray | None) -> None:
        self._insert_many(s, [rec], None if vec is None else vec[None, :])

    def _insert_many(self, s: Session, recs: Sequence[Record], vecs: np.ndarray | None) -> None:
        """Insert records (rows, edges, documents, FTS, vectors) with bulk statements.

        ``vecs`` is ``len(recs) x dim`` or ``None``. A parent may be earlier in ``recs``.
        """
        ids = [r.id for r in recs]
        if len(set(ids)) != len(ids):
            raise MemoryStoreError("duplicate ids in one batch of records")
        for i in range(0, len(ids), 500):
            clash = s.scalar(
                select(DocumentRow.record_id).where(DocumentRow.record_id.in_(ids[i : i + 500]))
            )
            if clash is not None:
                raise MemoryStoreError(f"a record with id {clash!r} already exists")
        batch_pos = {rid: i for i, rid in enumerate(ids)}
        by_kind: dict[str, list[Record]] = {}
        for r in recs:
            by_kind.setdefault(r.kind, []).append(r)
        for kind, group in by_kind.items():
            if kind in _EDGES:
                self._check_parents(s, kind, group, batch_pos)
        # Rows of a kind before its edges: edges point at rows (foreign keys).
        for kind, group in by_kind.items():
            row_t = KIND_ROWS[kind]
            s.execute(
                insert(row_t),
                [r.model_dump(exclude={"kind", "parent_ids"}) for r in group],
            )
            if kind in _EDGES:
                edges = [
                    {"child_id": r.id, "parent_id": p, "pos": j}
                    for r in group
                    for j, p in enumerate(r.parent_ids)  # type: ignore[union-attr]
                ]
                if edges:
                    s.execute(insert(_EDGES[kind]), edges)
        docs = [
            {
                "record_id": r.id,
                "kind": r.kind,
                "agent": _agent_of(r),
                "tags": r.tags,
                "body": r.search_text(),
                "provenance": r.provenance,
            }
            for r in recs
        ]
        s.execute(insert(DocumentRow), docs)
        if self.fts:
            s.execute(
                text(
                    "INSERT INTO memory_fts(record_id, kind, body) VALUES (:record_id, :kind, :body)"
                ),
                docs,
            )
        if vecs is not None and self.embedder is not None:
            vecs = np.ascontiguousarray(vecs, dtype=np.float32)
            embedded = [r for r in recs if r.kind in EMBEDDED_KINDS]  # aligned with vecs
            if embedded:
                s.execute(
                    insert(VectorRow),
                    [
                        {
                            "record_id": r.id,
                            "model": self.embedder.name,
                            "dim": int(vecs.shape[1]),
                            "vector": vecs[i].tobytes(),
                        }
                        for i, r in enumerate(embedded)
                    ],
                )

    @staticmethod
    def _check_parents(
        s: Session, kind: str, group: Sequence[Record], batch_pos: dict[str, int]
    ) -> None:
        row_t = KIND_ROWS[kind]
        wanted = {p for r in group for p in r.parent_ids if p not in batch_pos}  # type: ignore[union-attr]
        found: set[str] = set()
        wl = sorted(wanted)
        for i in range(0, len(wl), 500):
            found.update(s.scalars(select(row_t.id).where(row_t.id.in_(wl[i : i + 500]))))  # type: ignore[attr-defined]
        for r in group:
            for p in r.parent_ids:  # type: ignore[union-attr]
                in_batch = p in batch_pos and batch_pos[p] < batch_pos[r.id]
                if not in_batch and p not in found:
                    raise MemoryStoreError(f"unknown parent {kind} id {p!r} of {r.id!r}")

    def _add_many(self, recs: Sequence[Record]) -> list[str]:
        vecs = self._embed_on_write(_embed_texts(recs))
        self._write(lambda s: self._insert_many(s, recs, vecs))
        return [r.id for r in recs]

    # -- experiences --------------------------------------------------------------------

    def add_experience(self, exp: Experience) -> str:
        """Store one experience (own transaction); returns its id."""
        return self._add_many([_expect(exp, Experience)])[0]

    def add_experiences(self, exps: Iterable[Experience]) -> list[str]:
        """Store many experiences in one transaction (embedded in batches); returns ids."""
        recs = [_expect(e, Experience) for e in exps]
        return self._add_many(recs) if recs else []

    def experiences(
        self,
        *,
        agent: str | None = None,
        provenance: Iterable[str] | None = None,
        limit: int | None = None,
    ) -> list[Experience]:
        """Experiences, oldest first, optionally of one agent and of these provenances."""
        q = select(ExperienceRow).order_by(ExperienceRow.created_at, ExperienceRow.id)
        if agent is not None:
            q = q.where(ExperienceRow.agent == agent)
        provs = _provenances(provenance)
        if provs is not None:
            q = q.where(ExperienceRow.provenance.in_(sorted(provs)))
        with self._read() as s:
            return [_record_from("experience", r) for r in s.scalars(q.limit(limit))]  # type: ignore[misc]

    # -- candidates ---------------------------------------------------------------------

    def add_candidate(self, cand: Candidate) -> str:
        """Store a search candidate; its ``parent_ids`` must already be stored."""
        return self._add_many([_expect(cand, Candidate)])[0]

    def add_candidates(self, cands: Iterable[Candidate]) -> list[str]:
        """Store many candidates in one transaction (all or none); a parent may be an
        earlier candidate of the same call. Returns their ids."""
        recs = [_expect(c, Candidate) for c in cands]
        return self._add_many(recs) if recs else []

    def update_candidate(self, cand_id: str, **fields: Any) -> Candidate:
        """Change fields of a candidate (status, metrics, score, code, config, tags)."""
        allowed = {"status", "metrics", "score", "code", "config", "tags"}
        bad = sorted(set(fields) - allowed)
        if bad:
            raise MemoryStoreError(
                f"cannot update candidate field(s) {', '.join(bad)}; allowed: {', '.join(sorted(allowed))}"
            )

        def write(s: Session) -> Candidate:
            row = s.get(CandidateRow, cand_id)
            if row is None:
                raise MemoryStoreError(f"unknown candidate id {cand_id!r}")
            old = _record_from("candidate", row, self._parents(s, "candidate", cand_id))
            try:
                new = Candidate.model_validate({**old.model_dump(), **fields})
            except ValidationError as exc:
                raise MemoryStoreError(f"invalid candidate update: {_first_error(exc)}") from exc
            for key in fields:
                setattr(row, key, getattr(new, key))
            if new.search_text() != old.search_text():
                self._replace_document(s, new)
            return new

        return self._write(write)

    def candidates(
        self,
        *,
        agent: str | None = None,
        task: str | None = None,
        status: str | None = None,
        provenance: Iterable[str] | None = None,
        limit: int | None = None,
    ) -> list[Candidate]:
        """Candidates matching all given filters, oldest first."""
        q = select(CandidateRow).order_by(CandidateRow.created_at, CandidateRow.id)
        if agent is not None:
            q = q.where(CandidateRow.agent == agent)
        if task is not None:
            q = q.where(CandidateRow.task == task)
        if status is not None:
            q = q.where(CandidateRow.status == status)
        provs = _provenances(provenance)
        if provs is not None:
            q = q.where(CandidateRow.provenance.in_(sorted(provs)))
        with self._read() as s:
            rows = list(s.scalars(q.limit(limit)))
            parents = self._parents_many(s, "candidate", [r.id for r in rows])
            return [_record_from("candidate", r, parents.get(r.id, [])) for r in rows]  # type: ignore[misc]

    def lineage(self, cand_id: str) -> list[Candidate]:
        """All ancestors of a candidate, nearest first (breadth-first, each once)."""
        return self._ancestors("candidate", cand_id)  # type: ignore[return-value]

    # -- tools --------------------------------------------------------------------------

    def add_tool(self, tool: Tool, *, replace: bool = False) -> str:
        """Store a tool; a tool of the same name is an error unless ``replace``."""
        tool = _expect(tool, Tool)
        vecs = self._embed_on_write([tool.search_text()])

        def write(s: Session) -> str:
            old = s.scalar(select(ToolRow).where(ToolRow.name == tool.name))
            if old is not None:
                if not replace:
                    raise MemoryStoreError(f"a tool named {tool.name!r} already exists")
                old_id = old.id
                s.execute(delete(DocumentRow).where(DocumentRow.record_id == old_id))
                if self.fts:
                    s.execute(text("DELETE FROM memory_fts WHERE record_id = :r"), {"r": old_id})
                s.delete(old)
                s.flush()
            self._insert(s, tool, None if vecs is None else vecs[0])
            return tool.id

        return self._write(write)

    def get_tool(self, name: str) -> Tool:
        """The tool called ``name``."""
        with self._read() as s:
            row = s.scalar(select(ToolRow).where(ToolRow.name == name))
            if row is None:
                raise MemoryStoreError(f"unknown tool {name!r}")
            return _record_from("tool", row)  # type: ignore[return-value]

    def tools(self) -> list[Tool]:
        """All tools, by name."""
        with self._read() as s:
            rows = s.scalars(select(ToolRow).order_by(ToolRow.name))
            return [_record_from("tool", r) for r in rows]  # type: ignore[misc]

    def record_tool_use(self, name: str, success: bool) -> Tool:
        """Count one use of a tool (and one success if ``success``); atomic across processes."""

        def write(s: Session) -> Tool:
            res = s.execute(
                update(ToolRow)
                .where(ToolRow.name == name)
                .values(
                    usage_count=ToolRow.usage_count + 1,
                    success_count=ToolRow.success_count + (1 if success else 0),
                )
            )
            if res.rowcount == 0:  # type: ignore[attr-defined]
                raise MemoryStoreError(f"unknown tool {name!r}")
            row = s.scalar(select(ToolRow).where(ToolRow.name == name))
            return _record_from("tool", row)  # type: ignore[return-value]

        return self._write(write)

    # -- knowledge blocks ---------------------------------------------------------------

    def add_block(self, block: KnowledgeBlock, parent_ids: Sequence[str] = ()) -> str:
        """Store a knowledge block; ``parent_ids`` (added to ``block.parent_ids``) must exist."""
        block = _expect(block, KnowledgeBlock)
        if parent_ids:
            merged = list(dict.fromkeys([*block.parent_ids, *parent_ids]))
            block = block.model_copy(update={"parent_ids": merged})
            KnowledgeBlock.model_validate(block.model_dump())
        return self._add_many([block])[0]

    def block_children(self, block_id: str) -> list[KnowledgeBlock]:
        """Blocks mutated directly from ``block_id``, oldest first."""
        with self._read() as s:
            if s.get(BlockRow, block_id) is None:
                raise MemoryStoreError(f"unknown block id {block_id!r}")
            rows = list(
                s.scalars(
                    select(BlockRow)
                    .join(BlockEdge, BlockEdge.child_id == BlockRow.id)
                    .where(BlockEdge.parent_id == block_id)
                    .order_by(BlockRow.created_at, BlockRow.id)
                )
            )
            parents = self._parents_many(s, "block", [r.id for r in rows])
            return [_record_from("block", r, parents.get(r.id, [])) for r in rows]  # type: ignore[misc]

    def block_ancestors(self, block_id: str) -> list[KnowledgeBlock]:
        """All ancestors of a block, nearest first."""
        return self._ancestors("block", block_id)  # type: ignore[return-value]

    # -- graph helpers ------------------------------------------------------------------

    @staticmethod
    def _parents(s: Session, kind: str, rid: str) -> list[str]:
        edge = _EDGES[kind]
        q = select(edge.parent_id).where(edge.child_id == rid).order_by(edge.pos)
        return list(s.scalars(q))

    @staticmethod
    def _parents_many(s: Session, kind: str, ids: Sequence[str]) -> dict[str, list[str]]:
        edge = _EDGES[kind]
        out: dict[str, list[str]] = {}
        for i in range(0, len(ids), 500):
            q = (
                select(edge.child_id, edge.parent_id)
                .where(edge.child_id.in_(ids[i : i + 500]))
                .order_by(edge.child_id, edge.pos)
            )
            for child, parent in s.execute(q):
                out.setdefault(child, []).append(parent)
        return out

    def _ancestors(self, kind: str, rid: str) -> list[Record]:
        row_t = KIND_ROWS[kind]
        with self._read() as s:
            if s.get(row_t, rid) is None:
                raise MemoryStoreError(f"unknown {kind} id {rid!r}")
            # Level by level: one query per generation, portable to every dialect.
            seen: dict[str, None] = {}
            frontier = [rid]
            while frontier:
                nxt: list[str] = []
                for pids in self._parents_many(s, kind, frontier).values():
                    for p in pids:
                        if p not in seen and p != rid:
                            seen[p] = None
                            nxt.append(p)
                frontier = nxt
            return self._fetch(s, kind, list(seen))

    def _fetch(self, s: Session, kind: str, ids: Sequence[str]) -> list[Record]:
        """Records of ``kind`` with these ids, in the given order (missing ones dropped)."""
        row_t: Any = KIND_ROWS[kind]
        rows: dict[str, Any] = {}
        for i in range(0, len(ids), 500):
            for r in s.scalars(select(row_t).where(row_t.id.in_(ids[i : i + 500]))):  # type: ignore[attr-defined]
                rows[r.id] = r
        parents = self._parents_many(s, kind, list(rows)) if kind in _EDGES else {}
        return [_record_from(kind, rows[i], parents.get(i, [])) for i in ids if i in rows]

    # -- any record ---------------------------------------------------------------------

    def get(self, record_id: str) -> Record:
        """The record with this id, whatever its kind.

        Raises:
            MemoryStoreError: no record has this id (``find`` returns None instead).
        """
        found = self.find(record_id)
        if found is None:
            raise MemoryStoreError(f"unknown memory id {record_id!r}")
        return found

    def find(self, record_id: str) -> Record | None:
        """The record with this id, or None when there is none.

        Raises:
            MemoryStoreError: the id is indexed but its row is missing (a corrupt store).
        """
        with self._read() as s:
            kind = s.scalar(select(DocumentRow.kind).where(DocumentRow.record_id == record_id))
            if kind is None:
                return None
            got = self._fetch(s, kind, [record_id])
            if not got:
                raise MemoryStoreError(f"memory id {record_id!r} has no {kind} row (corrupt store)")
            return got[0]

    def stats(self) -> dict[str, Any]:
        """Counts per kind, per agent, embedding coverage and back-end facts."""
        with self._read() as s:
            counts = {
                k: int(s.scalar(select(func.count()).select_from(row)) or 0)
                for k, row in KIND_ROWS.items()
            }
            agents = dict(
                s.execute(
                    select(ExperienceRow.agent, func.count())
                    .group_by(ExperienceRow.agent)
                    .order_by(ExperienceRow.agent)
                ).all()
            )
            models = dict(
                s.execute(select(VectorRow.model, func.count()).group_by(VectorRow.model)).all()
            )
            provs = dict(
                s.execute(
                    select(DocumentRow.provenance, func.count())
                    .group_by(DocumentRow.provenance)
                    .order_by(DocumentRow.provenance)
                ).all()
            )
        total = sum(counts.values())
        name = self.embedder.name if self.embedder else None
        return {
            "url": self.url,
            "dialect": self.dialect,
            "lexical": "fts5" if self.fts else "like",
            "embedder": name,
            **{f"{k}s" if k != "block" else "blocks": v for k, v in counts.items()},
            "total": total,
            "embedded": int(models.get(name, 0)) if name else 0,
            "vectors_by_model": {str(k): int(v) for k, v in models.items()},
            "experiences_by_agent": {str(k): int(v) for k, v in agents.items()},
            "records_by_provenance": {str(k): int(v) for k, v in provs.items()},
        }

    # -- retrieval ----------------------------------------------------------------------

    def search(
        self,
        query: str,
        k: int = 5,
        *,
        kind: RecordKind = "experience",
        agent: str | None = None,
        tags: Sequence[str] | None = None,
        provenance: Iterable[str] | None = None,
        method: Literal["auto", "embedding", "lexical"] = "auto",
    ) -> list[Hit]:
        """The ``k`` records of ``kind`` most relevant to ``query``, best first.

        Args:
            agent: only records of this agent (a tool's ``author_agent``).
            tags: only records carrying all of these tags.
            provenance: only records of these provenances (e.g. ``memory.provenance.TRUSTED``).
            method: ``auto`` = embedding when an embedder is set, else lexical.
        """
        if kind not in KIND_ROWS:
            raise MemoryStoreError(f"unknown kind {kind!r}; use one of {', '.join(KIND_ROWS)}")
        if k < 1:
            raise MemoryStoreError(f"k must be >= 1, got {k}")
        if not query.strip():
            return []
        if method == "auto":
            method = (
                "embedding" if self.embedder is not None and kind in EMBEDDED_KINDS else "lexical"
            )
        if method == "embedding" and kind not in EMBEDDED_KINDS:
            raise MemoryStoreError(f"{kind} records are searched lexically only (method='lexical')")
        want = frozenset(tags or ())
        provs = _provenances(provenance)
        if method == "embedding":
            if self.embedder is None:
                raise MemoryStoreError("embedding search needs an embedder (this store has none)")
            ranked = self._search_embedding(query, k, kind, agent, want, provs)
        elif method == "lexical":
            ranked = self._search_lexical(query, k, kind, agent, want, provs)
        else:
            raise MemoryStoreError(f"unknown search method {method!r}")
        with self._read() as s:
            recs = {r.id: r for r in self._fetch(s, kind, [rid for rid, _ in ranked])}
        return [Hit(record=recs[rid], score=sc, method=method) for rid, sc in ranked if rid in recs]

    def _version(self) -> int:
        with self._read() as s:
            return int(s.scalar(select(Meta.value).where(Meta.key == "version")) or 0)

    def reindex(self) -> int:
        """Embed every record that has no vector under the current embedder; returns count."""
        if self.embedder is None:
            raise MemoryStoreError("reindex needs an embedder (this store has none)")
        model = self.embedder.name
        done = 0
        while True:
            with self._read() as s:
                todo = s.execute(
                    select(DocumentRow.record_id, DocumentRow.body)
                    .outerjoin(
                        VectorRow,
                        (VectorRow.record_id == DocumentRow.record_id) & (VectorRow.model == model),
                    )
                    .where(VectorRow.seq.is_(None))
                    .where(DocumentRow.kind.in_(sorted(EMBEDDED_KINDS)))
                    .order_by(DocumentRow.seq)
                    .limit(_EMBED_BATCH * 4)
                ).all()
            if not todo:
                return done
            with notice_after(
                SLOW_LOAD_NOTICE_S, f"embedding memory records that have no {model} vectors yet ..."
            ):
                vecs = self._embed([b for _, b in todo])
            assert vecs is not None

            def write(s: Session, todo: Any = todo, vecs: np.ndarray = vecs) -> int:
                n = 0
                for (rid, body), v in zip(todo, vecs, strict=True):
                    # Skip records deleted or rewritten (other text) since we read them.
                    cur = s.scalar(select(DocumentRow.body).where(DocumentRow.record_id == rid))
                    have = s.scalar(
                        select(VectorRow.seq).where(
                            (VectorRow.record_id == rid) & (VectorRow.model == model)
                        )
                    )
                    if cur == body and have is None:
                        s.add(VectorRow(record_id=rid, model=model, dim=len(v), vector=v.tobytes()))
                        n += 1
                return n

            wrote = self._write(write)
            done += wrote
            if wrote == 0:
                return done

    def _refresh_cache(self) -> _VectorCache:
        """The vector cache for the current embedder, brought up to date with the DB."""
        assert self.embedder is not None
        model, dim = self.embedder.name, self.embedder.dim
        with self._cache_lock:
            cache = self._cache
            if cache is None or cache.dim != dim:
                cache = self._cache = _VectorCache(dim)
            version = self._version()
            if cache.version == version:
                return cache
            missing = self.reindex()
            if missing:
                # Normal after edits (a changed text drops its vectors); many means the
                # memory was built without this model.
                _log.info("embedded %d memory records that had no %s vector", missing, model)
                version = self._version()
            cols = (
                VectorRow.seq,
                VectorRow.record_id,
                DocumentRow.kind,
                DocumentRow.agent,
                DocumentRow.tags,
                DocumentRow.provenance,
                VectorRow.vector,
            )
            with self._read() as s:
                total = int(
                    s.scalar(
                        select(func.count()).select_from(VectorRow).where(VectorRow.model == model)
                    )
                    or 0
                )
                new = s.execute(
                    select(*cols)
                    .join(DocumentRow, DocumentRow.record_id == VectorRow.record_id)
                    .where((VectorRow.model == model) & (VectorRow.seq > cache.max_seq))
                    .order_by(VectorRow.seq)
                ).all()
                if cache.n + len(new) != total:
                    # Something was deleted (an edit or a replaced tool): reload everything.
                    cache = self._cache = _VectorCache(dim)
                    new = s.execute(
                        select(*cols)
                        .join(DocumentRow, DocumentRow.record_id == VectorRow.record_id)
                        .where(VectorRow.model == model)
                        .order_by(VectorRow.seq)
                    ).all()
            cache.append([tuple(r) for r in new])  # type: ignore[misc]
            cache.version = version
            return cache

    def _search_embedding(
        self,
        query: str,
        k: int,
        kind: str,
        agent: str | None,
        tags: frozenset[str],
        provs: frozenset[str] | None = None,
    ) -> list[tuple[str, float]]:
        cache = self._refresh_cache()
        vec = self._embed([query])
        assert vec is not None
        if cache.n == 0:
            return []
        scores = cache.buf[: cache.n] @ vec[0]  # n
        mask = cache.kind_arr == kind
        if agent is not None:
            mask &= cache.agent_arr == agent
        if tags:
            mask &= np.fromiter((tags <= t for t in cache.tags), dtype=bool, count=cache.n)
        if provs is not None:
            mask &= np.isin(cache.prov_arr, sorted(provs))
        idx = np.flatnonzero(mask)
        if idx.size == 0:
            return []
        sub = scores[idx]
        top = idx[np.argpartition(-sub, k - 1)[:k]] if idx.size > k else idx
        top = top[np.argsort(-scores[top], kind="stable")]
        return [(cache.ids[i], float(scores[i])) for i in top]

    def _search_lexical(
        self,
        query: str,
        k: int,
        kind: str,
        agent: str | None,
        tags: frozenset[str],
        provs: frozenset[str] | None = None,
    ) -> list[tuple[str, float]]:
        tokens = list(dict.fromkeys(re.findall(r"\w+", query.lower())))
        if not tokens:
            return []
        out: list[tuple[str, float]] = []
        with self._read() as s:
            if self.fts:
                # Quote every token so FTS5 syntax (AND, NEAR, *, :) in a query is just text.
                match = " OR ".join('"' + t.replace('"', '""') + '"' for t in tokens)
                sql = (
                    "SELECT f.record_id, bm25(memory_fts) AS r, d.tags FROM memory_fts f "
                    "JOIN documents d ON d.record_id = f.record_id "
                    "WHERE memory_fts MATCH :q AND f.kind = :kind"
                    + (" AND d.agent = :agent" if agent is not None else "")
                    + (
                        # values come from PROVENANCES (checked), never from the caller's text
                        " AND d.provenance IN (" + ", ".join(f"'{p}'" for p in sorted(provs)) + ")"
                        if provs is not None
                        else ""
                    )
                    + " ORDER BY r"
                    + ("" if tags else " LIMIT :k")
                )
                rows = s.execute(text(sql), {"q": match, "kind": kind, "agent": agent, "k": k})
                for rid, rank, rtags in rows:
                    if tags and not tags <= set(_json_list(rtags)):
                        continue
                    out.append((rid, -float(rank)))
                    if len(out) >= k:
                        break
                return out
            body = func.lower(DocumentRow.body)
            score = sum(
                (case((body.contains(t, autoescape=True), 1), else_=0) for t in tokens),
                literal(0),
            )
            q = (
                select(DocumentRow.record_id, score.label("score"), DocumentRow.tags)
                .where(DocumentRow.kind == kind)
                .where(score > 0)
                .order_by(score.desc(), DocumentRow.seq)
            )
            if agent is not None:
                q = q.where(DocumentRow.agent == agent)
            if provs is not None:
                q = q.where(DocumentRow.provenance.in_(sorted(provs)))
            for rid, sc, rtags in s.execute(q if tags else q.limit(k)):
                if tags and not tags <= set(_json_list(rtags)):
                    continue
                out.append((rid, float(sc)))
                if len(out) >= k:
                    break
        return out

    # -- export / import ----------------------------------------------------------------

    def export_jsonl(self, path: str | Path) -> dict[str, int]:
        """Write every record to a JSONL file (header line, then one record a line).

        Parents come before children, so the file imports in order. Vectors are not
        written: ``import_jsonl`` re-embeds with the importing store's model.
        """
        path = Path(path)
        counts = dict.fromkeys(KIND_ROWS, 0)
        try:
            with path.open("w", encoding="utf-8") as fh:
                header = {
                    "format": JSONL_FORMAT,
                    "exported_at": datetime.now(UTC).isoformat(),
                    "embedder": self.embedder.name if self.embedder else None,
                }
                fh.write(json.dumps(header) + "\n")
                for kind in ("tool", "experience", "candidate", "block"):
                    for rec in self._ordered(kind):
                        line = {"kind": kind, "record": rec.model_dump(mode="json")}
                        fh.write(json.dumps(line, ensure_ascii=False) + "\n")
                        counts[kind] += 1
        except OSError as exc:
            raise MemoryStoreError(f"cannot write {path}: {exc}") from exc
        return counts

    def _ordered(self, kind: str) -> list[Record]:
        """All records of ``kind``; for candidates and blocks parents precede children."""
        with self._read() as s:
            # Insertion order (documents.seq) is already topological: parents must exist
            # before a child can be inserted.
            ids = list(
                s.scalars(
                    select(DocumentRow.record_id)
                    .where(DocumentRow.kind == kind)
                    .order_by(DocumentRow.seq)
                )
            )
            return self._fetch(s, kind, ids)

    def import_jsonl(self, path: str | Path) -> dict[str, int]:
        """Load a JSONL export; ids already present are skipped (idempotent).

        All lines are validated first and the whole file goes in one transaction, so a
        bad file changes nothing. Records are embedded with this store's embedder.
        Returns counts per kind plus ``skipped``.
        """
        path = Path(path)
        recs: list[Record] = []
        try:
            fh = path.open(encoding="utf-8")
        except OSError as exc:
            raise MemoryStoreError(f"cannot read {path}: {exc}") from exc
        with fh:
            try:
                lines = fh.read().splitlines()
            except UnicodeDecodeError as exc:
                raise MemoryStoreError(
                    f"{path}: not a UTF-8 JSONL file (undecodable byte at offset {exc.start})"
                ) from exc
            for n, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    raise MemoryStoreError(f"{path}:{n}: not JSON ({exc.msg})") from exc
                if not isinstance(obj, dict):
                    raise MemoryStoreError(f"{path}:{n}: expected a JSON object")
                if "format" in obj:
                    if obj["format"] != JSONL_FORMAT:
                        raise MemoryStoreError(
                            f"{path}:{n}: unsupported format {obj['format']!r} (want {JSONL_FORMAT})"
                        )
                    continue
                kind = obj.get("kind")
                if kind not in RECORD_TYPES or not isinstance(obj.get("record"), dict):
                    raise MemoryStoreError(
                        f"{path}:{n}: expected {{'kind': one of {list(RECORD_TYPES)}, 'record': {{...}}}}"
                    )
                try:
                    recs.append(RECORD_TYPES[kind].model_validate(obj["record"]))  # type: ignore[arg-type]
                except ValidationError as exc:
                    raise MemoryStoreError(
                        f"{path}:{n}: invalid {kind}: {_first_error(exc)}"
                    ) from exc
        with self._read() as s:
            present: set[str] = set()
            ids = [r.id for r in recs]
            for i in range(0, len(ids), 500):
                present.update(
                    s.scalars(
                        select(DocumentRow.record_id).where(
                            DocumentRow.record_id.in_(ids[i : i + 500])
                        )
                    )
                )
        fresh = [r for r in recs if r.id not in present]
        fresh = _parents_first(fresh)
        vecs = self._embed(_embed_texts(fresh))

        def write(s: Session) -> None:
            for r in fresh:
                if isinstance(r, Tool):
                    clash = s.scalar(select(ToolRow.id).where(ToolRow.name == r.name))
                    if clash is not None:
                        raise MemoryStoreError(
                            f"tool {r.name!r} in {path} clashes with stored tool {clash}"
                        )
            if fresh:
                self._insert_many(s, fresh, vecs)

        self._write(write)
        counts = dict.fromkeys(KIND_ROWS, 0)
        for r in fresh:
            counts[r.kind] += 1
        counts["skipped"] = len(recs) - len(fresh)  # type: ignore[index]
        return counts


def _parents_first(recs: list[Record]) -> list[Record]:
    """Stable order in which every in-file parent precedes its children."""
    import networkx as nx

    g: nx.DiGraph = nx.DiGraph()
    pos = {r.id: i for i, r in enumerate(recs)}
    g.add_nodes_from(pos)
    for r in recs:
        for p in getattr(r, "parent_ids", []):
            if p in pos:
                g.add_edge(p, r.id)
    try:
        order = list(nx.lexicographical_topological_sort(g, key=lambda n: pos[n]))
    except nx.NetworkXUnfeasible as exc:
        raise MemoryStoreError("import file has a parent cycle") from exc
    return [recs[pos[i]] for i in order]


def _expect(rec: Any, cls: type[T]) -> T:
    if not isinstance(rec, cls):
        raise MemoryStoreError(f"expected a {cls.__name__}, got {type(rec).__name__}")
    return rec


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "record"
    return f"{loc}: {err['msg']}"


def _json_list(v: Any) -> list[str]:
    if isinstance(v, str):
        return list(json.loads(v))
    return list(v or [])


__all__ = ["DEFAULT_URL", "JSONL_FORMAT", "Store", "default_url"]
