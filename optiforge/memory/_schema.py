"""SQLAlchemy ORM rows behind the memory store (portable types: SQLite and PostgreSQL).

Every record also owns one ``documents`` row (its search text plus filter columns);
``documents.record_id`` is unique, so ids are unique across all four kinds. Vectors live
in ``vectors`` keyed by ``(record_id, model)``, so memories embedded by different models
coexist; ``vectors.seq`` only grows, which lets a reader's cache detect appends cheaply.
On SQLite an FTS5 table ``memory_fts`` mirrors ``documents.body`` (created in ``store``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    Float,
    ForeignKey,
    Integer,
    LargeBinary,
    String,
    Text,
    UniqueConstraint,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

ID = String(128)


class Base(DeclarativeBase):
    """Declarative base of the memory schema."""


class Meta(Base):
    """Key/integer pairs; ``version`` is bumped by every write transaction."""

    __tablename__ = "memory_meta"
    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[int] = mapped_column(Integer, nullable=False)


SCHEMA_VERSION = 2
"""Version of this schema, kept in ``memory_meta`` under ``schema``. 1: no provenance
columns (before issue 39); 2: a ``provenance`` column on every record table and on
``documents``. ``store`` upgrades an older database in place when it opens it."""

PROVENANCE_TABLES = ("experiences", "candidates", "tools", "knowledge_blocks", "documents")
"""Tables that carry a ``provenance`` column since schema version 2."""


def _provenance() -> Mapped[str]:
    # server_default: rows of a version-1 database read as "unknown" (untrusted) after the
    # ALTER TABLE that adds the column.
    return mapped_column(String(16), nullable=False, server_default="unknown")


class ExperienceRow(Base):
    __tablename__ = "experiences"
    id: Mapped[str] = mapped_column(ID, primary_key=True)
    agent: Mapped[str] = mapped_column(String(200), index=True)
    task_signature: Mapped[str] = mapped_column(Text)
    trajectory_summary: Mapped[str] = mapped_column(Text)
    outcome: Mapped[str] = mapped_column(Text)
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    lesson: Mapped[str] = mapped_column(Text)
    tags: Mapped[list[str]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    provenance: Mapped[str] = _provenance()


class CandidateRow(Base):
    __tablename__ = "candidates"
    id: Mapped[str] = mapped_column(ID, primary_key=True)
    agent: Mapped[str] = mapped_column(String(200), index=True)
    task: Mapped[str] = mapped_column(Text, index=True)
    code: Mapped[str | None] = mapped_column(Text, nullable=True)
    config: Mapped[dict[str, Any] | None] = mapped_column(JSON(none_as_null=True), nullable=True)
    metrics: Mapped[dict[str, float]] = mapped_column(JSON)
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    status: Mapped[str] = mapped_column(String(32), index=True)
    tags: Mapped[list[str]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    provenance: Mapped[str] = _provenance()


class CandidateEdge(Base):
    """``parent_id`` -> ``child_id``; ``pos`` keeps the parent order given by the caller."""

    __tablename__ = "candidate_edges"
    child_id: Mapped[str] = mapped_column(
        ID, ForeignKey("candidates.id", ondelete="CASCADE"), primary_key=True
    )
    parent_id: Mapped[str] = mapped_column(
        ID, ForeignKey("candidates.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    pos: Mapped[int] = mapped_column(Integer)


class ToolRow(Base):
    __tablename__ = "tools"
    id: Mapped[str] = mapped_column(ID, primary_key=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    description: Mapped[str] = mapped_column(Text)
    json_schema: Mapped[dict[str, Any]] = mapped_column(JSON)
    code: Mapped[str] = mapped_column(Text)
    tests: Mapped[str] = mapped_column(Text)
    usage_count: Mapped[int] = mapped_column(Integer)
    success_count: Mapped[int] = mapped_column(Integer)
    author_agent: Mapped[str | None] = mapped_column(String(200), nullable=True)
    tags: Mapped[list[str]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    provenance: Mapped[str] = _provenance()


class BlockRow(Base):
    __tablename__ = "knowledge_blocks"
    id: Mapped[str] = mapped_column(ID, primary_key=True)
    agent: Mapped[str] = mapped_column(String(200), index=True)
    title: Mapped[str] = mapped_column(Text)
    content: Mapped[str] = mapped_column(Text)
    description: Mapped[str] = mapped_column(Text)
    score: Mapped[float | None] = mapped_column(Float, nullable=True)
    metrics: Mapped[dict[str, float]] = mapped_column(JSON)
    tags: Mapped[list[str]] = mapped_column(JSON)
    created_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), index=True)
    provenance: Mapped[str] = _provenance()


class BlockEdge(Base):
    """Mutation edge ``parent_id`` -> ``child_id`` between knowledge blocks."""

    __tablename__ = "block_edges"
    child_id: Mapped[str] = mapped_column(
        ID, ForeignKey("knowledge_blocks.id", ondelete="CASCADE"), primary_key=True
    )
    parent_id: Mapped[str] = mapped_column(
        ID, ForeignKey("knowledge_blocks.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    pos: Mapped[int] = mapped_column(Integer)


class DocumentRow(Base):
    """Search text and filter columns of one record (any kind)."""

    __tablename__ = "documents"
    __table_args__ = {"sqlite_autoincrement": True}
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    record_id: Mapped[str] = mapped_column(ID, unique=True)
    kind: Mapped[str] = mapped_column(String(16), index=True)
    agent: Mapped[str | None] = mapped_column(String(200), nullable=True)
    tags: Mapped[list[str]] = mapped_column(JSON)
    body: Mapped[str] = mapped_column(Text)
    provenance: Mapped[str] = _provenance()


class VectorRow(Base):
    """One embedding (float32 bytes) of a document under one model."""

    __tablename__ = "vectors"
    # AUTOINCREMENT: SQLite would otherwise reuse the seq of a deleted last row, and the
    # readers' caches rely on seq only growing.
    __table_args__ = (UniqueConstraint("record_id", "model"), {"sqlite_autoincrement": True})
    seq: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    record_id: Mapped[str] = mapped_column(
        ID, ForeignKey("documents.record_id", ondelete="CASCADE")
    )
    model: Mapped[str] = mapped_column(String(200), index=True)
    dim: Mapped[int] = mapped_column(Integer)
    vector: Mapped[bytes] = mapped_column(LargeBinary)


KIND_ROWS: dict[str, type[Base]] = {
    "experience": ExperienceRow,
    "candidate": CandidateRow,
    "tool": ToolRow,
    "block": BlockRow,
}
