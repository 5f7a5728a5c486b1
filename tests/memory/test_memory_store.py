"""Store contract: records, lineage, tools, blocks, search, export/import, errors."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from optiforge.errors import MemoryStoreError
from optiforge.memory import (
    Candidate,
    Experience,
    HashingEmbedder,
    KnowledgeBlock,
    Store,
    Tool,
)
from optiforge.memory.conformance import assert_conformance, run_conformance


def _exp(**kw: object) -> Experience:
    base: dict[str, object] = {"agent": "a", "task_signature": "sig", "lesson": "l"}
    base.update(kw)
    return Experience(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize("emb", [None, 256])
def test_conformance_sqlite_file_and_memory(tmp_path: Path, emb: int | None) -> None:
    n = iter(range(100))

    def make_file() -> Store:
        e = HashingEmbedder(emb) if emb else None
        return Store(f"sqlite:///{tmp_path / f'm{next(n)}.db'}", embedder=e)

    assert_conformance(run_conformance(make_file))
    assert_conformance(
        run_conformance(lambda: Store("sqlite://", embedder=HashingEmbedder(emb) if emb else None))
    )


def test_conformance_detects_a_broken_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The battery must be able to fail: break lineage ordering and expect a report.
    monkeypatch.setattr(Store, "lineage", lambda self, cid: [])
    results = run_conformance(lambda: Store("sqlite://", embedder=None))
    failed = {r.name for r in results if not r.passed}
    assert failed == {"lineage"}
    with pytest.raises(MemoryStoreError, match="lineage"):
        assert_conformance(results)
    assert_conformance(
        run_conformance(lambda: Store("sqlite://", embedder=None), known_failures=["lineage"])
    )


def test_sqlite_pragmas(db_url: str) -> None:
    s = Store(db_url, embedder=None)
    with s._wengine.connect() as c:
        assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert c.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
        assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() == 30000
    assert s.fts


def test_default_url_from_env_and_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    s = Store(embedder=None)
    assert s.url.endswith("default-memory.db")
    monkeypatch.delenv("OPTIFORGE_MEMORY")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    s = Store(embedder=None)
    s.add_experience(_exp())
    assert (tmp_path / "home" / ".optiforge" / "memory.db").is_file()


def test_persists_across_instances(db_url: str) -> None:
    a = Store(db_url, embedder=None)
    e = _exp(tags=["t1", "t1 ", "t2"])
    assert e.tags == ["t1", "t2"]
    a.add_experience(e)
    a.close()
    b = Store(db_url, embedder=None)
    assert b.get(e.id) == e
    assert b.experiences(agent="a") == [e]
    assert b.stats()["experiences"] == 1


def test_errors_are_one_line_memory_errors(store: Store) -> None:
    e = store.add_experience(_exp())
    with pytest.raises(MemoryStoreError, match="unknown memory id 'nope'"):
        store.get("nope")
    assert store.find("nope") is None  # absence without an exception
    assert store.find(e) == store.get(e)
    with pytest.raises(MemoryStoreError, match="already exists"):
        store.add_experience(_exp(id=e))
    with pytest.raises(MemoryStoreError, match="already exists"):
        # ids are unique across kinds too
        store.add_candidate(Candidate(id=e, agent="a", task="t", code="x"))
    with pytest.raises(MemoryStoreError, match="unknown parent"):
        store.add_candidate(Candidate(agent="a", task="t", code="x", parent_ids=["cand_x"]))
    with pytest.raises(MemoryStoreError, match="expected a Experience"):
        store.add_experience(Candidate(agent="a", task="t", code="x"))  # type: ignore[arg-type]
    with pytest.raises(MemoryStoreError, match="unknown tool"):
        store.record_tool_use("ghost", True)
    with pytest.raises(MemoryStoreError, match="unknown kind"):
        store.search("x", kind="nope")  # type: ignore[arg-type]
    # A failed write leaves nothing behind (its transaction rolled back).
    assert store.stats()["total"] == 1


def test_record_validation() -> None:
    with pytest.raises(ValidationError, match="code or config"):
        Candidate(agent="a", task="t")
    with pytest.raises(ValidationError, match="success_count"):
        Tool(name="t", usage_count=1, success_count=2)
    with pytest.raises(ValidationError):
        Experience(agent="a", task_signature="s", bogus=1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        Tool(name="has space")


def test_lineage_of_a_diamond_and_updates(store: Store) -> None:
    root = store.add_candidate(Candidate(agent="a", task="t", code="r"))
    left = store.add_candidate(Candidate(agent="a", task="t", code="l", parent_ids=[root]))
    right = store.add_candidate(Candidate(agent="a", task="t", code="r2", parent_ids=[root]))
    leaf = store.add_candidate(
        Candidate(agent="b", task="t", config={"x": 1}, parent_ids=[left, right])
    )
    assert [c.id for c in store.lineage(leaf)] == [left, right, root]
    assert store.lineage(root) == []
    with pytest.raises(MemoryStoreError, match="unknown candidate"):
        store.lineage("cand_none")
    got = store.update_candidate(leaf, status="accepted", score=0.5, metrics={"ms": 2.0})
    assert (got.status, got.score, got.config, got.parent_ids) == (
        "accepted",
        0.5,
        {"x": 1},
        [left, right],
    )
    assert store.get(leaf) == got
    with pytest.raises(MemoryStoreError, match="cannot update candidate field"):
        store.update_candidate(leaf, parent_ids=[])
    with pytest.raises(MemoryStoreError, match="invalid candidate update: status"):
        store.update_candidate(leaf, status="great")
    assert [c.id for c in store.candidates(agent="a")] == [root, left, right]
    assert [c.id for c in store.candidates(status="accepted")] == [leaf]


def test_tools(store: Store) -> None:
    t = Tool(name="roofline", description="roofline model estimate", author_agent="builder")
    store.add_tool(t)
    with pytest.raises(MemoryStoreError, match="already exists"):
        store.add_tool(Tool(name="roofline"))
    for ok in (True, True, False):
        store.record_tool_use("roofline", ok)
    got = store.get_tool("roofline")
    assert (got.usage_count, got.success_count) == (3, 2)
    t2 = Tool(name="roofline", description="roofline v2 with cache levels", code="def f(): ...")
    store.add_tool(t2, replace=True)
    assert store.get_tool("roofline") == t2
    assert [x.name for x in store.tools()] == ["roofline"]
    with pytest.raises(MemoryStoreError, match="unknown memory id"):
        store.get(t.id)
    hits = store.search("cache levels roofline", kind="tool", k=2)
    assert [h.record.id for h in hits] == [t2.id]


def test_blocks_mutation_tree(store: Store) -> None:
    p = store.add_block(KnowledgeBlock(agent="evo", title="base", content="tile=32"))
    c1 = store.add_block(KnowledgeBlock(agent="evo", title="m1", content="tile=64"), parent_ids=[p])
    c2 = store.add_block(
        KnowledgeBlock(agent="evo", title="m2", content="tile=128", parent_ids=[p])
    )
    g = store.add_block(KnowledgeBlock(agent="evo", title="x", content="mix"), parent_ids=[c1, c2])
    assert [b.id for b in store.block_children(p)] == [c1, c2]
    assert [b.id for b in store.block_children(c1)] == [g]
    assert [b.id for b in store.block_ancestors(g)] == [c1, c2, p]
    assert store.get(g).parent_ids == [c1, c2]  # type: ignore[union-attr]


def test_search_filters_and_ranking(store: Store) -> None:
    a = store.add_experience(
        _exp(
            agent="k",
            task_signature="softmax fp16",
            lesson="online softmax avoids two passes",
            tags=["gpu", "fusion"],
        )
    )
    b = store.add_experience(
        _exp(
            agent="h",
            task_signature="softmax fp32",
            lesson="online softmax avoids two passes",
            tags=["gpu"],
        )
    )
    store.add_experience(
        _exp(agent="k", task_signature="lu pivoting", lesson="partial pivoting is stable")
    )
    for method in ["lexical"] + (["embedding"] if store.embedder else []):
        hits = store.search("online softmax", k=5, method=method)  # type: ignore[arg-type]
        assert {h.record.id for h in hits[:2]} == {a, b}
        assert all(h.method == method for h in hits)
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        assert [h.record.id for h in store.search("online softmax", agent="h", method=method)] == [
            b
        ]  # type: ignore[arg-type]
        tagged = store.search("online softmax", tags=["fusion"], method=method)  # type: ignore[arg-type]
        assert [h.record.id for h in tagged] == [a]
    if method == "embedding":
        # Candidates are never embedded (see memory.store.EMBEDDED_KINDS).
        with pytest.raises(MemoryStoreError, match="lexically only"):
            store.search("softmax", kind="candidate", method=method)  # type: ignore[arg-type]
    else:
        assert store.search("softmax", kind="candidate", method=method) == []  # type: ignore[arg-type]
    # FTS5 operators and punctuation in a query are plain text, not syntax errors.
    assert store.search('softmax AND "NEAR(* :', k=2, method="lexical")
    assert store.search("!!!", method="lexical") == []


def test_like_fallback_when_no_fts(db_url: str) -> None:
    s = Store(db_url, embedder=None)
    s.fts = False  # the path other dialects take
    a = s.add_experience(_exp(lesson="vectorize loads with 128-bit accesses", tags=["gpu"]))
    s.add_experience(_exp(lesson="unroll the inner loop"))
    hits = s.search("vectorize 128-bit loads", k=2)
    assert hits[0].record.id == a and hits[0].score == 4.0  # four query tokens matched
    assert [h.record.id for h in s.search("vectorize", tags=["gpu"])] == [a]
    assert s.search("vectorize", tags=["cpu"]) == []


def test_embedding_scores_match_brute_force(db_url: str) -> None:
    emb = HashingEmbedder(128)
    s = Store(db_url, embedder=emb)
    recs = [
        _exp(lesson=f"lesson number {i} about tile {i % 7} and warp {i % 3}") for i in range(60)
    ]
    s.add_experiences(recs)
    q = "tile 3 warp 1"
    hits = s.search(q, k=7)
    # Independent: cosine from the embedder directly, ranked with a full sort.
    mat = emb.embed([r.search_text() for r in recs])
    cos = mat @ emb.embed([q])[0]
    order = np.argsort(-cos, kind="stable")[:7]
    np.testing.assert_allclose([h.score for h in hits], cos[order], rtol=1e-5)
    assert {h.record.id for h in hits} >= {recs[i].id for i in order if cos[i] > cos[order[-1]]}


def test_cache_sees_other_writers_and_edits(db_url: str) -> None:
    emb = HashingEmbedder(256)
    reader = Store(db_url, embedder=emb)
    writer = Store(db_url, embedder=emb)
    writer.add_experience(_exp(lesson="alpha beta"))
    assert len(reader.search("alpha", k=5)) == 1
    # Another process's new record reaches the reader's vector cache.
    e2 = writer.add_experience(_exp(lesson="epsilon zeta"))
    top = reader.search("epsilon zeta", k=1)[0]
    want = float(emb.embed([top.record.search_text()])[0] @ emb.embed(["epsilon zeta"])[0])
    assert top.record.id == e2
    assert top.score == pytest.approx(want, rel=1e-5) and want > 0.2
    # Candidates are searched lexically (never embedded); an edit is visible at once.
    c = writer.add_candidate(Candidate(agent="a", task="t", code="gamma delta"))
    assert reader.search("gamma", kind="candidate")[0].record.id == c
    writer.update_candidate(c, code="epsilon zeta")
    top_c = reader.search("epsilon zeta", kind="candidate", k=1)[0]
    assert (
        top_c.record.id == c and top_c.record.code == "epsilon zeta" and top_c.method == "lexical"
    )
    assert reader.stats()["embedded"] == 2


def test_export_import_carries_memory_to_another_model(tmp_path: Path) -> None:
    src = Store(f"sqlite:///{tmp_path / 'a.db'}", embedder=HashingEmbedder(256))
    e = src.add_experience(_exp(lesson="prefer cholesky over lu for spd systems", tags=["linalg"]))
    c0 = src.add_candidate(Candidate(agent="a", task="t", code="v0"))
    c1 = src.add_candidate(Candidate(agent="a", task="t", code="v1", parent_ids=[c0]))
    src.add_tool(Tool(name="timer", json_schema={"type": "object"}))
    src.add_block(KnowledgeBlock(agent="a", title="b", content="c"))
    path = tmp_path / "mem.jsonl"
    assert src.export_jsonl(path) == {"experience": 1, "candidate": 2, "tool": 1, "block": 1}
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["format"] == "optiforge-memory/1"
    assert len(lines) == 6
    # Reverse the records: the importer must still put parents first.
    path.write_text("\n".join([lines[0], *reversed(lines[1:])]) + "\n")
    dst = Store(f"sqlite:///{tmp_path / 'b.db'}", embedder=HashingEmbedder(512))
    assert dst.import_jsonl(path)["skipped"] == 0
    assert dst.import_jsonl(path) == {
        "experience": 0,
        "candidate": 0,
        "tool": 0,
        "block": 0,
        "skipped": 5,
    }
    assert dst.lineage(c1)[0].id == c0
    # experience, tool and block get vectors; the two candidates are lexical only
    assert dst.stats()["vectors_by_model"] == {"hashing-bow-512": 3}
    assert dst.search("cholesky spd", k=1)[0].record.id == e
    assert dst.get(e) == src.get(e)


def test_import_errors_name_the_line_and_change_nothing(tmp_path: Path) -> None:
    s = Store(f"sqlite:///{tmp_path / 'a.db'}", embedder=None)
    good = json.dumps({"kind": "experience", "record": _exp().model_dump(mode="json")})
    p = tmp_path / "bad.jsonl"
    p.write_text(good + "\n{not json\n")
    with pytest.raises(MemoryStoreError, match=r"bad.jsonl:2: not JSON"):
        s.import_jsonl(p)
    p.write_text(good + "\n" + json.dumps({"kind": "experience", "record": {"agent": "a"}}) + "\n")
    with pytest.raises(MemoryStoreError, match=r":2: invalid experience: task_signature"):
        s.import_jsonl(p)
    p.write_text(
        json.dumps(
            {
                "kind": "candidate",
                "record": Candidate(
                    agent="a", task="t", code="x", parent_ids=["cand_gone"]
                ).model_dump(mode="json"),
            }
        )
        + "\n"
    )
    with pytest.raises(MemoryStoreError, match="unknown parent"):
        s.import_jsonl(p)
    with pytest.raises(MemoryStoreError, match="cannot read"):
        s.import_jsonl(tmp_path / "missing.jsonl")
    assert s.stats()["total"] == 0


def test_integrity_after_writes(db_url: str, tmp_path: Path) -> None:
    s = Store(db_url, embedder=None)
    s.add_experiences([_exp(lesson=f"l{i}") for i in range(20)])
    s.close()
    con = sqlite3.connect(tmp_path / "memory.db")
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # FTS mirrors documents one to one.
    assert con.execute("SELECT count(*) FROM memory_fts").fetchone()[0] == 20
