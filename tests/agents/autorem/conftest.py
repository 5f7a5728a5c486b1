"""Fixtures for the AutoREM tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from optiforge.memory import Store


@pytest.fixture
def lexical_store(tmp_path: Path) -> Iterator[Store]:
    """A file-backed store without the embedding model (lexical retrieval; fast)."""
    store = Store(f"sqlite:///{tmp_path / 'mem.db'}", embedder=None)
    yield store
    store.close()
