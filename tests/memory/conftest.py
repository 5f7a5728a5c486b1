"""Fixtures for the memory-store tests: fresh SQLite files, never ~/.optiforge."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from optiforge.memory import HashingEmbedder, Store


@pytest.fixture(autouse=True)
def _no_home_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A test that forgets a URL must not touch the developer's real memory.
    monkeypatch.setenv("OPTIFORGE_MEMORY", f"sqlite:///{tmp_path / 'default-memory.db'}")


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'memory.db'}"


@pytest.fixture(params=["lexical", "hashing"])
def store(request: pytest.FixtureRequest, db_url: str) -> Iterator[Store]:
    """A file-backed store without a model (lexical) and with the hashing embedder."""
    emb = HashingEmbedder(256) if request.param == "hashing" else None
    s = Store(db_url, embedder=emb)
    yield s
    s.close()
