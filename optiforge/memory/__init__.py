"""Experience memory shared by agents and runs: typed records, retrieval, JSONL export.

``Store`` (SQLAlchemy 2; SQLite WAL by default, PostgreSQL by URL) holds ``Experience``,
``Candidate``, ``Tool`` and ``KnowledgeBlock`` records and searches them by embedding
(bundled MiniLM, offline) or lexically (SQLite FTS5 / LIKE). Importing this package does
not load the embedding model; that happens on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from optiforge.memory.embeddings import (
        Embedder,
        HashingEmbedder,
        MiniLMEmbedder,
        resolve_embedder,
    )
    from optiforge.memory.records import (
        Candidate,
        CandidateStatus,
        Experience,
        Hit,
        KnowledgeBlock,
        Record,
        RecordKind,
        Tool,
        new_id,
    )
    from optiforge.memory.scope import DEFAULT_URL, default_url
    from optiforge.memory.store import Store

_WHERE = {
    **dict.fromkeys(
        ("Embedder", "HashingEmbedder", "MiniLMEmbedder", "resolve_embedder"), "embeddings"
    ),
    **dict.fromkeys(
        (
            "Candidate",
            "CandidateStatus",
            "Experience",
            "Hit",
            "KnowledgeBlock",
            "Record",
            "RecordKind",
            "Tool",
            "new_id",
        ),
        "records",
    ),
    **dict.fromkeys(("DEFAULT_URL", "default_url"), "scope"),
    "Store": "store",
}


def __getattr__(name: str) -> Any:
    """Names are loaded on first use: ``optiforge.memory.scope`` (what a run with
    ``--memory none`` needs) must not import SQLAlchemy through this package."""
    if name in _WHERE:
        return getattr(importlib.import_module(f"optiforge.memory.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'optiforge.memory' has no attribute {name!r}")


__all__ = [
    "DEFAULT_URL",
    "Candidate",
    "CandidateStatus",
    "Embedder",
    "Experience",
    "HashingEmbedder",
    "Hit",
    "KnowledgeBlock",
    "MiniLMEmbedder",
    "Record",
    "RecordKind",
    "Store",
    "Tool",
    "default_url",
    "new_id",
    "resolve_embedder",
]
