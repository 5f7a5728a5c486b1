"""Candidates in the store: the lineage of every search (add, update, list, ancestors)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import ValidationError
from sqlalchemy import (
    select,
)
from sqlalchemy.orm import Session

from optiforge.errors import MemoryStoreError
from optiforge.memory._schema import (
    CandidateRow,
)
from optiforge.memory.records import (
    Candidate,
)
from optiforge.memory.store_base import (
    StoreBase,
    expect_record,
    first_error,
    provenance_filter,
    record_from,
)


class CandidateRecords(StoreBase):
    """Candidates in the store: the lineage of every search (add, update, list, ancestors)."""

    # -- candidates ----------------------------------------------------------------

    def add_candidate(self, cand: Candidate) -> str:
        """Store a search candidate; its ``parent_ids`` must already be stored."""
        return self._add_many([expect_record(cand, Candidate)])[0]

    def add_candidates(self, cands: Iterable[Candidate]) -> list[str]:
        """Store many candidates in one transaction (all or none); a parent may be an
        earlier candidate of the same call. Returns their ids."""
        recs = [expect_record(c, Candidate) for c in cands]
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
            old = record_from("candidate", row, self._parents(s, "candidate", cand_id))
            try:
                new = Candidate.model_validate({**old.model_dump(), **fields})
            except ValidationError as exc:
                raise MemoryStoreError(f"invalid candidate update: {first_error(exc)}") from exc
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
        provs = provenance_filter(provenance)
        if provs is not None:
            q = q.where(CandidateRow.provenance.in_(sorted(provs)))
        with self._read() as s:
            rows = list(s.scalars(q.limit(limit)))
            parents = self._parents_many(s, "candidate", [r.id for r in rows])
            return [record_from("candidate", r, parents.get(r.id, [])) for r in rows]  # type: ignore[misc]

    def lineage(self, cand_id: str) -> list[Candidate]:
        """All ancestors of a candidate, nearest first (breadth-first, each once)."""
        return self._ancestors("candidate", cand_id)  # type: ignore[return-value]
