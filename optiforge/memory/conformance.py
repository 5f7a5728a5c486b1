"""A conformance battery that every memory ``Store`` back end must pass.

Run it against SQLite, PostgreSQL or any other URL::

    results = run_conformance(lambda: Store(url, embedder=None))
    assert_conformance(results)

Each check uses fresh ids, so it also runs against a store that already holds data.
``make_store`` must return an *empty* store only for ``export_import_round_trip``'s
target; it is called once for the subject store and once for the import target.
"""

from __future__ import annotations

import functools
import tempfile
import traceback
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from optiforge.errors import MemoryStoreError
from optiforge.memory.records import Candidate, Experience, KnowledgeBlock, Record, Tool
from optiforge.memory.store import Store


class CheckResult(BaseModel):
    """Outcome of one conformance check."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    passed: bool
    detail: str = ""
    known_failure: bool = False


def _tag() -> str:
    return uuid.uuid4().hex[:12]


def _check(cond: bool, msg: str) -> None:
    if not cond:
        raise AssertionError(msg)


def check_round_trip(store: Store) -> None:
    """Each record kind reads back equal to what was written."""
    t = _tag()
    recs: list[Record] = [
        Experience(
            agent=f"agent{t}",
            task_signature=f"sig {t}",
            trajectory_summary="tried A then B",
            outcome="success",
            score=0.25,
            lesson="B beats A",
            tags=["x", t],
        ),
        Candidate(agent="a", task=f"task{t}", code="print(1)", config={"n": [1, 2]}, score=2.0),
        Tool(
            name=f"tool_{t}",
            description="d",
            json_schema={"type": "object", "properties": {"n": {"type": "integer"}}},
            code="def f(n): return n",
            tests="assert f(1) == 1",
            author_agent="builder",
        ),
        KnowledgeBlock(agent="a", title=f"block {t}", content="if slow: tile", metrics={"m": 1.0}),
    ]
    store.add_experience(recs[0])  # type: ignore[arg-type]
    store.add_candidate(recs[1])  # type: ignore[arg-type]
    store.add_tool(recs[2])  # type: ignore[arg-type]
    store.add_block(recs[3])  # type: ignore[arg-type]
    for r in recs:
        got = store.get(r.id)
        _check(got == r, f"{r.kind} round trip differs: wrote {r!r}, read {got!r}")
    _check(store.get_tool(f"tool_{t}") == recs[2], "get_tool differs from what was written")


def check_lineage(store: Store) -> None:
    """Candidate lineage and block mutation edges are kept, in order."""
    t = _tag()
    a = store.add_candidate(Candidate(agent="a", task=t, code="a"))
    b = store.add_candidate(Candidate(agent="a", task=t, code="b", parent_ids=[a]))
    c = store.add_candidate(Candidate(agent="a", task=t, code="c", parent_ids=[a]))
    d = store.add_candidate(Candidate(agent="a", task=t, code="d", parent_ids=[c, b]))
    got = [x.id for x in store.lineage(d)]
    _check(got == [c, b, a], f"lineage({d}) = {got}, expected {[c, b, a]}")
    _check(store.get(d).parent_ids == [c, b], "parent order not kept")  # type: ignore[union-attr]
    store.update_candidate(b, status="evaluated", score=3.0, metrics={"ms": 1.5})
    upd = store.get(b)
    _check(
        upd.status == "evaluated" and upd.score == 3.0 and upd.code == "b",  # type: ignore[union-attr]
        f"update_candidate lost data: {upd!r}",
    )
    ev = [x.id for x in store.candidates(task=t, status="evaluated")]
    _check(ev == [b], f"candidates(status='evaluated') = {ev}")
    try:
        store.add_candidate(Candidate(agent="a", task=t, code="e", parent_ids=["cand_missing"]))
    except MemoryStoreError:
        pass
    else:
        raise AssertionError("a candidate with an unknown parent was accepted")
    p = store.add_block(KnowledgeBlock(agent="a", title="p", content="p"))
    k1 = store.add_block(KnowledgeBlock(agent="a", title="k1", content="k1"), parent_ids=[p])
    k2 = store.add_block(KnowledgeBlock(agent="a", title="k2", content="k2"), parent_ids=[p])
    kids = [x.id for x in store.block_children(p)]
    _check(kids == [k1, k2], f"block_children = {kids}, expected {[k1, k2]}")


def check_tool_use(store: Store) -> None:
    """Tool usage counters add up."""
    name = f"counter_{_tag()}"
    store.add_tool(Tool(name=name))
    for ok in (True, False, True):
        store.record_tool_use(name, ok)
    tool = store.get_tool(name)
    _check((tool.usage_count, tool.success_count) == (3, 2), f"counts {tool!r}")


def check_search_exact(store: Store) -> None:
    """Searching with a record's own distinctive text returns it first (each method)."""
    t = _tag()
    word = f"zq{t}"
    for i in range(5):
        store.add_experience(Experience(agent="a", task_signature=f"other task {i}", lesson="x"))
    target = Experience(
        agent="seeker", task_signature=f"{word} sparse cholesky", lesson=f"reorder with {word}"
    )
    store.add_experience(target)
    methods = ["lexical"] + (["embedding"] if store.embedder is not None else [])
    for m in methods:
        hits = store.search(f"{word} sparse cholesky", k=3, method=m)  # type: ignore[arg-type]
        _check(bool(hits) and hits[0].record.id == target.id, f"{m} search missed: {hits!r}")
        hits = store.search(f"{word}", k=3, agent="seeker", method=m)  # type: ignore[arg-type]
        _check(bool(hits) and hits[0].record.id == target.id, f"{m} agent filter missed")


def check_export_import(store: Store, target: Store) -> None:
    """Export then import into another store reproduces every record; re-import is a no-op."""
    t = _tag()
    a = store.add_candidate(Candidate(agent="a", task=t, code="a"))
    store.add_candidate(Candidate(agent="a", task=t, code="b", parent_ids=[a]))
    store.add_experience(Experience(agent="a", task_signature=t, lesson="l", tags=[t]))
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "memory.jsonl"
        out = store.export_jsonl(path)
        got = target.import_jsonl(path)
        again = target.import_jsonl(path)
    _check(sum(got[k] for k in out) + got["skipped"] == sum(out.values()), f"counts {got}")
    _check(sum(again[k] for k in out) == 0, f"re-import added records: {again}")
    for kind in ("experience", "candidate", "tool", "block"):
        src = {r.id: r for r in store._ordered(kind)}
        dst = {r.id: r for r in target._ordered(kind)}
        differ = [i for i in src if dst.get(i) != src[i]]
        _check(not differ, f"{len(differ)} {kind}s differ after import, e.g. {differ[:1]}")


def check_provenance(store: Store) -> None:
    """Provenance reads back, and every way of listing or searching filters by it."""
    t = _tag()
    ids = {
        prov: store.add_experience(
            Experience(agent=f"p{t}", task_signature=t, lesson=f"lesson {t}", tags=[t],
                       provenance=prov)  # type: ignore[arg-type]
        )
        for prov in ("measured", "agent", "candidate", "unknown")
    }  # fmt: skip
    for prov, rid in ids.items():
        _check(store.get(rid).provenance == prov, f"{rid} read back with another provenance")
    trusted = {ids["measured"], ids["agent"]}
    listed = {e.id for e in store.experiences(agent=f"p{t}", provenance=["measured", "agent"])}
    _check(listed == trusted, f"experiences(provenance=trusted) gave {sorted(listed)}")
    hits = store.search(f"lesson {t}", 10, tags=[t], provenance=["measured", "agent"])
    got = {h.record.id for h in hits}
    _check(got == trusted, f"search(provenance=trusted) gave {sorted(got)}")


CHECKS: dict[str, Callable[[Store], None]] = {
    "round_trip": check_round_trip,
    "provenance": check_provenance,
    "lineage": check_lineage,
    "tool_use": check_tool_use,
    "search_exact": check_search_exact,
}


def run_conformance(
    make_store: Callable[[], Store], *, known_failures: Iterable[str] = ()
) -> list[CheckResult]:
    """Run every check on ``make_store()``; ``export_import`` imports into a second one."""
    known = set(known_failures)
    results: list[CheckResult] = []
    store = make_store()
    try:
        plan: list[tuple[str, Callable[[], None]]] = [
            (n, functools.partial(f, store)) for n, f in CHECKS.items()
        ]

        def exp_imp() -> None:
            target = make_store()
            try:
                check_export_import(store, target)
            finally:
                target.close()

        plan.append(("export_import", exp_imp))
        for name, fn in plan:
            try:
                fn()
                results.append(CheckResult(name=name, passed=True, known_failure=name in known))
            except Exception as exc:  # noqa: BLE001 - a battery reports every failure
                detail = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"
                results.append(
                    CheckResult(name=name, passed=False, detail=detail, known_failure=name in known)
                )
    finally:
        store.close()
    return results


def assert_conformance(results: list[CheckResult]) -> None:
    """Raise ``MemoryStoreError`` naming every unexpected failure (or unexpected pass)."""
    bad = [r for r in results if not r.passed and not r.known_failure]
    fixed = [r.name for r in results if r.passed and r.known_failure]
    if bad or fixed:
        parts = [f"{r.name}: {r.detail.splitlines()[0]}" for r in bad]
        parts += [f"{n}: passed but listed as a known failure" for n in fixed]
        raise MemoryStoreError("memory conformance failed: " + "; ".join(parts))
