"""Retrieval from the store: embedding search over the cached vectors, lexical search
(SQLite FTS5 / LIKE), and ``reindex`` (vectors for records stored without them).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

import numpy as np
from sqlalchemy import (
    case,
    func,
    literal,
    select,
    text,
)
from sqlalchemy.orm import Session

from optiforge.errors import MemoryStoreError
from optiforge.memory._schema import (
    KIND_ROWS,
    DocumentRow,
    Meta,
    VectorRow,
)
from optiforge.memory.embeddings import (
    SLOW_LOAD_NOTICE_S,
    notice_after,
)
from optiforge.memory.records import (
    Hit,
    RecordKind,
)
from optiforge.memory.store_base import (
    EMBED_BATCH,
    EMBEDDED_KINDS,
    StoreBase,
    json_list,
    provenance_filter,
)
from optiforge.memory.vector_cache import VectorCache

_log = logging.getLogger(__name__)


class SearchIndex(StoreBase):
    """Retrieval from the store: embedding search over the cached vectors, lexical search"""

    # -- retrieval -----------------------------------------------------------------

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
        provs = provenance_filter(provenance)
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
                    .limit(EMBED_BATCH * 4)
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

    def _refresh_cache(self) -> VectorCache:
        """The vector cache for the current embedder, brought up to date with the DB."""
        assert self.embedder is not None
        model, dim = self.embedder.name, self.embedder.dim
        with self._cache_lock:
            cache = self._cache
            if cache is None or cache.dim != dim:
                cache = self._cache = VectorCache(dim)
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
                    cache = self._cache = VectorCache(dim)
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
                    if tags and not tags <= set(json_list(rtags)):
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
                if tags and not tags <= set(json_list(rtags)):
                    continue
                out.append((rid, float(sc)))
                if len(out) >= k:
                    break
        return out
