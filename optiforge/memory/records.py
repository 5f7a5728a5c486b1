"""Typed memory records: the pydantic models at the store's boundary.

Every record has a string ``id`` (a kind prefix plus uuid4 hex, e.g. ``exp_3f2a...``,
unless the caller supplies one) and a timezone-aware ``created_at`` (UTC). The store
keeps them as SQLAlchemy rows inside; nothing outside ``optiforge.memory`` sees a row.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from optiforge.memory.provenance import Provenance

RecordKind = Literal["experience", "candidate", "tool", "block"]
"""The four record kinds; ``kind`` arguments and JSONL lines use these names."""

CandidateStatus = Literal["pending", "running", "evaluated", "failed", "accepted", "rejected"]
"""Life cycle of a search candidate."""

ID_PREFIX: dict[str, str] = {
    "experience": "exp_",
    "candidate": "cand_",
    "tool": "tool_",
    "block": "kb_",
}

RecordId = Annotated[str, Field(min_length=1, max_length=128, pattern=r"^[A-Za-z0-9_.:\-]+$")]


def new_id(kind: str) -> str:
    """A fresh id for a record of ``kind`` (prefix + uuid4 hex)."""
    return ID_PREFIX[kind] + uuid.uuid4().hex


def _utcnow() -> datetime:
    return datetime.now(UTC)


class _Record(BaseModel):
    """Fields and behaviour shared by every record."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    created_at: datetime = Field(default_factory=_utcnow)
    """When the record was made (UTC); naive datetimes are taken as UTC."""
    provenance: Provenance = "unknown"
    """Where the record's text came from (``memory.provenance``). ``unknown`` (the default,
    and what records stored before provenance existed read as) is treated as untrusted:
    a writer must say ``measured`` or ``agent`` for its text to reach a prompt unquoted."""

    @field_validator("created_at")
    @classmethod
    def _aware(cls, v: datetime) -> datetime:
        # SQLite drops tzinfo; normalising here keeps round trips equal.
        return v.replace(tzinfo=UTC) if v.tzinfo is None else v.astimezone(UTC)

    @field_validator("tags", check_fields=False)
    @classmethod
    def _tags(cls, v: list[str]) -> list[str]:
        return _clean_tags(v)

    def search_text(self) -> str:
        """The text that retrieval (embedding and lexical) indexes for this record."""
        raise NotImplementedError


def _clean_tags(tags: list[str]) -> list[str]:
    # Tags are compared exactly in filters, so strip and de-duplicate, keeping order.
    out: list[str] = []
    for t in tags:
        t = t.strip()
        if not t:
            raise ValueError("tags must be non-empty strings")
        if t not in out:
            out.append(t)
    return out


class Experience(_Record):
    """What an agent learned on one task: signature, trajectory summary, outcome, lesson."""

    kind: Literal["experience"] = "experience"
    id: RecordId = Field(default_factory=lambda: new_id("experience"))
    agent: str = Field(min_length=1)
    """Name of the agent that had the experience (e.g. ``kernel_optimizer``)."""
    task_signature: str = Field(min_length=1)
    """A short description identifying the task (problem class, shapes, constraints)."""
    trajectory_summary: str = ""
    """What was tried, in order, condensed."""
    outcome: str = ""
    """How it ended (e.g. ``success: 1.8x speedup`` or ``failure: wrong results``)."""
    score: float | None = None
    """Optional numeric outcome on the task's own scale."""
    lesson: str = ""
    """The reusable lesson, phrased for a future run."""
    tags: list[str] = Field(default_factory=list)

    def search_text(self) -> str:
        return "\n".join(
            [self.task_signature, self.trajectory_summary, self.outcome, self.lesson, *self.tags]
        )


class Candidate(_Record):
    """One point of a search: code or config, its parents, metrics, score and status."""

    kind: Literal["candidate"] = "candidate"
    id: RecordId = Field(default_factory=lambda: new_id("candidate"))
    agent: str = Field(min_length=1)
    task: str = Field(min_length=1)
    """Task signature or id the candidate was proposed for."""
    code: str | None = None
    config: dict[str, Any] | None = None
    parent_ids: list[RecordId] = Field(default_factory=list)
    """Candidates this one was derived from (must already be in the store)."""
    metrics: dict[str, float] = Field(default_factory=dict)
    score: float | None = None
    status: CandidateStatus = "pending"
    tags: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _has_payload(self) -> Candidate:
        if self.code is None and self.config is None:
            raise ValueError("a Candidate needs code or config (or both)")
        if self.id in self.parent_ids:
            raise ValueError("a Candidate cannot be its own parent")
        return self

    def search_text(self) -> str:
        import json

        cfg = json.dumps(self.config, sort_keys=True) if self.config is not None else ""
        return "\n".join([self.task, self.status, self.code or "", cfg, *self.tags])


class Tool(_Record):
    """A tool an agent built: name, JSON schema of its arguments, code, tests, usage stats."""

    kind: Literal["tool"] = "tool"
    id: RecordId = Field(default_factory=lambda: new_id("tool"))
    name: str = Field(min_length=1, max_length=200, pattern=r"^[A-Za-z_][A-Za-z0-9_.\-]*$")
    """Unique name (function-calling identifier)."""
    description: str = ""
    json_schema: dict[str, Any] = Field(default_factory=dict)
    """JSON schema of the tool's arguments."""
    code: str = ""
    tests: str = ""
    usage_count: int = Field(default=0, ge=0)
    success_count: int = Field(default=0, ge=0)
    author_agent: str | None = None
    tags: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _counts(self) -> Tool:
        if self.success_count > self.usage_count:
            raise ValueError("success_count cannot exceed usage_count")
        return self

    def search_text(self) -> str:
        return "\n".join([self.name, self.description, *self.tags])


class KnowledgeBlock(_Record):
    """Executable expertise (code, prompt or rule) with parent/child mutation edges."""

    kind: Literal["block"] = "block"
    id: RecordId = Field(default_factory=lambda: new_id("block"))
    agent: str = Field(min_length=1)
    title: str = Field(min_length=1)
    content: str = Field(min_length=1)
    """The executable expertise itself."""
    description: str = ""
    parent_ids: list[RecordId] = Field(default_factory=list)
    """Blocks this one was mutated from (must already be in the store)."""
    score: float | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _not_own_parent(self) -> KnowledgeBlock:
        if self.id in self.parent_ids:
            raise ValueError("a KnowledgeBlock cannot be its own parent")
        return self

    def search_text(self) -> str:
        return "\n".join([self.title, self.description, self.content, *self.tags])


Record = Experience | Candidate | Tool | KnowledgeBlock
"""Any memory record."""

RECORD_TYPES: dict[str, type[_Record]] = {
    "experience": Experience,
    "candidate": Candidate,
    "tool": Tool,
    "block": KnowledgeBlock,
}


class Hit(BaseModel):
    """One search result."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    record: Experience | Candidate | Tool | KnowledgeBlock = Field(discriminator="kind")
    score: float
    """Cosine similarity for ``embedding``; negated bm25 (higher is better) for ``lexical``."""
    method: Literal["embedding", "lexical"]
