"""Export and import of the store as JSONL (parents before children, ids kept)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ValidationError
from sqlalchemy import (
    select,
)
from sqlalchemy.orm import Session

from optiforge.errors import MemoryStoreError
from optiforge.memory._schema import (
    KIND_ROWS,
    DocumentRow,
    ToolRow,
)
from optiforge.memory.records import (
    RECORD_TYPES,
    Record,
    Tool,
)
from optiforge.memory.store_base import (
    JSONL_FORMAT,
    StoreBase,
    embed_texts,
    first_error,
)


class JsonlTransfer(StoreBase):
    """Export and import of the store as JSONL (parents before children, ids kept)."""

    # -- export / import -----------------------------------------------------------

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
                        f"{path}:{n}: invalid {kind}: {first_error(exc)}"
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
        vecs = self._embed(embed_texts(fresh))

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
