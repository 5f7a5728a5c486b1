"""The experience-memory store: typed records over SQLAlchemy 2 with retrieval.

SQLite (WAL, busy timeout, foreign keys) by default at ``~/.optiforge/memory.db``
(or env ``OPTIFORGE_MEMORY``); any SQLAlchemy URL works, PostgreSQL included. Every
write is its own transaction, so a crash loses nothing already committed. Retrieval is
brute-force cosine over embeddings cached in numpy (``n x dim``), or lexical: SQLite
FTS5 with bm25 ranking, and a token ``LIKE`` count on other databases.

``Store`` is assembled from one part per concern, each its own module: ``store_base``
(engines, transactions, schema, record rows, any record by id, stats), ``store_lessons``
(experiences, tools, knowledge blocks), ``store_candidates`` (search lineage),
``store_search`` (embedding and lexical retrieval, reindex) and ``store_transfer`` (JSONL
export / import).
"""

from __future__ import annotations

from optiforge.memory.scope import (
    DEFAULT_URL,
    MEMORY_SCOPES,
    PROJECTS_DIR,
    default_url,
    scoped_url,
)
from optiforge.memory.store_base import EMBEDDED_KINDS, JSONL_FORMAT
from optiforge.memory.store_candidates import CandidateRecords
from optiforge.memory.store_lessons import LessonRecords
from optiforge.memory.store_search import SearchIndex
from optiforge.memory.store_transfer import JsonlTransfer

__all__ = [
    "DEFAULT_URL",
    "EMBEDDED_KINDS",
    "JSONL_FORMAT",
    "MEMORY_SCOPES",
    "PROJECTS_DIR",
    "Store",
    "default_url",
    "scoped_url",
]


class Store(LessonRecords, CandidateRecords, SearchIndex, JsonlTransfer):
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
