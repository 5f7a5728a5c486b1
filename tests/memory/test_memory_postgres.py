"""The conformance battery on a real PostgreSQL (only with OPTIFORGE_TEST_POSTGRES_URL)."""

from __future__ import annotations

import os
import uuid

import pytest
from sqlalchemy import create_engine, text

from optiforge.memory import HashingEmbedder, Store
from optiforge.memory.conformance import assert_conformance, run_conformance

PG_URL = os.environ.get("OPTIFORGE_TEST_POSTGRES_URL")
pytestmark = pytest.mark.skipif(
    not PG_URL, reason="set OPTIFORGE_TEST_POSTGRES_URL (postgresql+psycopg://...) to run"
)


def _fresh_schema_url(base: str) -> str:
    """A URL whose connections use a new, empty schema (tests never share tables)."""
    schema = "optiforge_test_" + uuid.uuid4().hex[:10]
    eng = create_engine(base)
    with eng.begin() as c:
        c.execute(text(f'CREATE SCHEMA "{schema}"'))
    eng.dispose()
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}options=-csearch_path%3D{schema}"


@pytest.mark.parametrize("emb", [None, 256])
def test_conformance_postgres(emb: int | None) -> None:
    assert PG_URL is not None
    make = lambda: Store(  # noqa: E731
        _fresh_schema_url(PG_URL), embedder=HashingEmbedder(emb) if emb else None
    )
    assert_conformance(run_conformance(make))


def test_postgres_lexical_like_fallback() -> None:
    assert PG_URL is not None
    s = Store(_fresh_schema_url(PG_URL), embedder=None)
    assert s.dialect == "postgresql" and not s.fts
    from optiforge.memory import Experience

    a = s.add_experience(Experience(agent="a", task_signature="lu", lesson="partial pivoting"))
    s.add_experience(Experience(agent="a", task_signature="qr", lesson="householder"))
    assert s.search("pivoting", k=2)[0].record.id == a
