"""The memory store's foundation: engines and transactions, schema, inserting records with
their documents and vectors, graph helpers, reading any record back.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Self, TypeVar

import numpy as np
from pydantic import ValidationError
from sqlalchemy import (
    Engine,
    create_engine,
    delete,
    event,
    func,
    insert,
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
    CandidateEdge,
    DocumentRow,
    ExperienceRow,
    Meta,
    VectorRow,
)
from optiforge.memory.embeddings import (
    Embedder,
    EmbedderChoice,
    resolve_embedder,
)
from optiforge.memory.provenance import PROVENANCES
from optiforge.memory.records import (
    RECORD_TYPES,
    Record,
    Tool,
)
from optiforge.memory.scope import (
    default_url,
)
from optiforge.memory.vector_cache import VectorCache

T = TypeVar("T")


JSONL_FORMAT = "optiforge-memory/1"

LOCK_RETRY_S = 60.0

EMBED_BATCH = 256


def provenance_filter(provenance: Iterable[str] | None) -> frozenset[str] | None:
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


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


def is_locked(exc: OperationalError) -> bool:
    msg = str(exc.orig).lower() if exc.orig is not None else str(exc).lower()
    return "locked" in msg or "busy" in msg


def agent_of(rec: Record) -> str | None:
    return rec.author_agent if isinstance(rec, Tool) else rec.agent


def row_from(rec: Record) -> Any:
    data = rec.model_dump(exclude={"kind", "parent_ids"})
    return KIND_ROWS[rec.kind](**data)


def record_from(kind: str, row: Any, parent_ids: list[str] | None = None) -> Record:
    cls = RECORD_TYPES[kind]
    data = {c.key: getattr(row, c.key) for c in row.__table__.columns}
    if kind in ("candidate", "block"):
        data["parent_ids"] = parent_ids or []
    return cls.model_validate(data)  # type: ignore[return-value]


EDGES: dict[str, type[CandidateEdge] | type[BlockEdge]] = {
    "candidate": CandidateEdge,
    "block": BlockEdge,
}

EMBEDDED_KINDS = frozenset({"experience", "tool", "block"})

"""Kinds that get vectors. Candidates (code/config of every search point, thousands per
run) are searched lexically only: embedding each one would dominate a search loop's cost,
and MiniLM sentence vectors say little about code."""


def embed_texts(recs: Sequence[Record]) -> list[str]:
    return [r.search_text() for r in recs if r.kind in EMBEDDED_KINDS]


def expect_record(rec: Any, cls: type[T]) -> T:
    if not isinstance(rec, cls):
        raise MemoryStoreError(f"expected a {cls.__name__}, got {type(rec).__name__}")
    return rec


def first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    loc = ".".join(str(p) for p in err["loc"]) or "record"
    return f"{loc}: {err['msg']}"


def json_list(v: Any) -> list[str]:
    if isinstance(v, str):
        return list(json.loads(v))
    return list(v or [])


class StoreBase:
    """The store's engines, transactions, schema and record rows: what every part of ``Store``
    builds on (``Store`` adds the typed records, retrieval and JSONL transfer)."""

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
        self._cache: VectorCache | None = None
        self._cache_lock = threading.Lock()
        self._init_schema()

    # -- engines and transactions --------------------------------------------------

    def _make_engines(self, url: str) -> tuple[Engine, Engine]:
        try:
            u = make_url(url)
        except ArgumentError as exc:
            raise MemoryStoreError(f"bad memory URL {url!r}: {one_line(exc)}") from exc
        if u.get_backend_name() != "sqlite":
            try:
                eng = create_engine(u, pool_pre_ping=True)
            except (ImportError, SQLAlchemyError) as exc:
                raise MemoryStoreError(f"cannot open memory {u!r}: {one_line(exc)}") from exc
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
        deadline = time.monotonic() + LOCK_RETRY_S
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
                if is_locked(exc) and time.monotonic() < deadline:
                    time.sleep(delay)
                    delay = min(delay * 2, 0.5)
                    continue
                raise MemoryStoreError(f"memory write failed: {one_line(exc)}") from exc
            except IntegrityError as exc:
                raise MemoryStoreError(
                    f"memory write rejected: {one_line(exc.orig or exc)}"
                ) from exc
            except SQLAlchemyError as exc:
                raise MemoryStoreError(f"memory write failed: {one_line(exc)}") from exc

    @contextmanager
    def _read(self) -> Any:
        try:
            with Session(self._rengine) as s, s.begin():
                yield s
        except OperationalError as exc:
            raise MemoryStoreError(f"memory read failed: {one_line(exc)}") from exc

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

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- documents (search text) ---------------------------------------------------

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
            self.embedder.embed(texts[i : i + EMBED_BATCH])
            for i in range(0, len(texts), EMBED_BATCH)
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
            .values(agent=agent_of(rec), tags=rec.tags, body=rec.search_text())
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
            if kind in EDGES:
                self._check_parents(s, kind, group, batch_pos)
        # Rows of a kind before its edges: edges point at rows (foreign keys).
        for kind, group in by_kind.items():
            row_t = KIND_ROWS[kind]
            s.execute(
                insert(row_t),
                [r.model_dump(exclude={"kind", "parent_ids"}) for r in group],
            )
            if kind in EDGES:
                edges = [
                    {"child_id": r.id, "parent_id": p, "pos": j}
                    for r in group
                    for j, p in enumerate(r.parent_ids)  # type: ignore[union-attr]
                ]
                if edges:
                    s.execute(insert(EDGES[kind]), edges)
        docs = [
            {
                "record_id": r.id,
                "kind": r.kind,
                "agent": agent_of(r),
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
        vecs = self._embed_on_write(embed_texts(recs))
        self._write(lambda s: self._insert_many(s, recs, vecs))
        return [r.id for r in recs]

    # -- graph helpers -------------------------------------------------------------

    @staticmethod
    def _parents(s: Session, kind: str, rid: str) -> list[str]:
        edge = EDGES[kind]
        q = select(edge.parent_id).where(edge.child_id == rid).order_by(edge.pos)
        return list(s.scalars(q))

    @staticmethod
    def _parents_many(s: Session, kind: str, ids: Sequence[str]) -> dict[str, list[str]]:
        edge = EDGES[kind]
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
        parents = self._parents_many(s, kind, list(rows)) if kind in EDGES else {}
        return [record_from(kind, rows[i], parents.get(i, [])) for i in ids if i in rows]

    # -- any record ----------------------------------------------------------------

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
