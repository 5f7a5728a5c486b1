"""Experiences, tools and knowledge blocks (with their mutation-tree edges) in the store."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import (
    delete,
    select,
    text,
    update,
)
from sqlalchemy.orm import Session

from optiforge.errors import MemoryStoreError
from optiforge.memory._schema import (
    BlockEdge,
    BlockRow,
    DocumentRow,
    ExperienceRow,
    ToolRow,
)
from optiforge.memory.records import (
    Experience,
    KnowledgeBlock,
    Tool,
)
from optiforge.memory.store_base import (
    StoreBase,
    expect_record,
    provenance_filter,
    record_from,
)


class LessonRecords(StoreBase):
    """Experiences, tools and knowledge blocks (with their mutation-tree edges) in the store."""

    # -- experiences ---------------------------------------------------------------

    def add_experience(self, exp: Experience) -> str:
        """Store one experience (own transaction); returns its id."""
        return self._add_many([expect_record(exp, Experience)])[0]

    def add_experiences(self, exps: Iterable[Experience]) -> list[str]:
        """Store many experiences in one transaction (embedded in batches); returns ids."""
        recs = [expect_record(e, Experience) for e in exps]
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
        provs = provenance_filter(provenance)
        if provs is not None:
            q = q.where(ExperienceRow.provenance.in_(sorted(provs)))
        with self._read() as s:
            return [record_from("experience", r) for r in s.scalars(q.limit(limit))]  # type: ignore[misc]

    # -- tools ---------------------------------------------------------------------

    def add_tool(self, tool: Tool, *, replace: bool = False) -> str:
        """Store a tool; a tool of the same name is an error unless ``replace``."""
        tool = expect_record(tool, Tool)
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
            return record_from("tool", row)  # type: ignore[return-value]

    def tools(self) -> list[Tool]:
        """All tools, by name."""
        with self._read() as s:
            rows = s.scalars(select(ToolRow).order_by(ToolRow.name))
            return [record_from("tool", r) for r in rows]  # type: ignore[misc]

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
            return record_from("tool", row)  # type: ignore[return-value]

        return self._write(write)

    # -- knowledge blocks ----------------------------------------------------------

    def add_block(self, block: KnowledgeBlock, parent_ids: Sequence[str] = ()) -> str:
        """Store a knowledge block; ``parent_ids`` (added to ``block.parent_ids``) must exist."""
        block = expect_record(block, KnowledgeBlock)
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
            return [record_from("block", r, parents.get(r.id, [])) for r in rows]  # type: ignore[misc]

    def block_ancestors(self, block_id: str) -> list[KnowledgeBlock]:
        """All ancestors of a block, nearest first."""
        return self._ancestors("block", block_id)  # type: ignore[return-value]
