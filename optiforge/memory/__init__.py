"""Experience memory shared by agents and runs: typed records, retrieval, JSONL export.

``Store`` (SQLAlchemy 2; SQLite WAL by default, PostgreSQL by URL) holds ``Experience``,
``Candidate``, ``Tool`` and ``KnowledgeBlock`` records and searches them by embedding
(bundled MiniLM, offline) or lexically (SQLite FTS5 / LIKE). Importing this package does
not load the embedding model; that happens on first use.
"""

from optiforge.memory.embeddings import Embedder, HashingEmbedder, MiniLMEmbedder, resolve_embedder
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
from optiforge.memory.store import DEFAULT_URL, Store, default_url

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
