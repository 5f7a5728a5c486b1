"""Two processes writing at once; a writer killed with SIGKILL loses nothing committed."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from optiforge.memory import Store

WRITER = textwrap.dedent(
    """
    import os, sys, time
    from optiforge.memory import Candidate, Experience, Store
    url, tag, n, go_file = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    store = Store(url, embedder=None)
    root = store.add_candidate(Candidate(agent=tag, task="race", code="root"))
    print(root, flush=True)
    while go_file != "-" and not os.path.exists(go_file):  # both writers start together
        time.sleep(0.001)
    t0 = time.time()
    for i in range(n):
        if i % 3 == 0:
            rid = store.add_candidate(
                Candidate(agent=tag, task="race", code=f"{tag}{i}", parent_ids=[root])
            )
        else:
            rid = store.add_experience(
                Experience(agent=tag, task_signature=f"race {i}", lesson=f"{tag} lesson {i}")
            )
        store.record_tool_use("shared_counter", i % 2 == 0) if tag != "solo" else None
        print(rid, flush=True)  # only after commit returned
    print(f"T {t0} {time.time()}", file=sys.stderr, flush=True)
    """
)


def _spawn(args: list[str]) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_two_processes_write_concurrently(db_url: str, tmp_path: Path) -> None:
    from optiforge.memory import Tool

    store = Store(db_url, embedder=None)
    store.add_tool(Tool(name="shared_counter"))
    n = 60
    go = tmp_path / "go"
    procs = [_spawn([db_url, tag, str(n), str(go)]) for tag in ("p1", "p2")]
    # Each child prints its first id once its store is open; then release both at once.
    roots = [p.stdout.readline().strip() for p in procs]  # type: ignore[union-attr]
    assert all(roots), [p.stderr.read() for p in procs]  # type: ignore[union-attr]
    go.touch()
    outs = [
        (r + "\n" + o, e)
        for r, (o, e) in zip(roots, [p.communicate(timeout=120) for p in procs], strict=True)
    ]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err[-2000:]
    ids = [line for out, _ in outs for line in out.split()]
    assert len(ids) == 2 * (n + 1) == len(set(ids))
    for rid in ids:
        store.get(rid)
    st = store.stats()
    assert st["experiences"] == 2 * (n - len(range(0, n, 3)))
    assert st["candidates"] == 2 * (1 + len(range(0, n, 3)))
    # Increments from both processes all landed (no lost update).
    tool = store.get_tool("shared_counter")
    assert (tool.usage_count, tool.success_count) == (2 * n, n)
    # The writers really ran at the same time (their write windows overlap).
    spans = [[float(x) for x in e.split("T ")[-1].split()] for _, e in outs]
    assert max(a for a, _ in spans) < min(b for _, b in spans), spans
    for tag in ("p1", "p2"):
        kids = store.candidates(agent=tag)
        assert all(c.parent_ids == [kids[0].id] for c in kids[1:])


def test_sigkill_loses_nothing_committed(db_url: str, tmp_path: Path) -> None:
    Store(db_url, embedder=None).close()  # schema exists before the child races it
    proc = _spawn([db_url, "solo", "100000", "-"])
    assert proc.stdout is not None
    committed: list[str] = []
    deadline = time.monotonic() + 60
    while len(committed) < 150 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        committed.append(line.strip())
    # The child is mid-loop (most likely inside a transaction) when it dies.
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    rest = proc.stdout.read().split()  # ids printed before the kill landed
    assert len(committed) >= 150, proc.stderr.read() if proc.stderr else ""
    store = Store(db_url, embedder=None)
    for rid in committed + rest:
        store.get(rid)
    con = sqlite3.connect(tmp_path / "memory.db")
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    # Nothing torn: every document has its row, every FTS entry its document.
    st = store.stats()
    assert con.execute("SELECT count(*) FROM documents").fetchone()[0] == st["total"]
    assert con.execute("SELECT count(*) FROM memory_fts").fetchone()[0] == st["total"]
    assert st["total"] >= len(committed) + len(rest)
    con.close()


def test_sigkill_inside_open_transaction(db_url: str, tmp_path: Path) -> None:
    """A transaction in flight at SIGKILL vanishes; the one committed before it stays."""
    child = textwrap.dedent(
        """
        import sys, time
        from sqlalchemy.orm import Session
        from optiforge.memory import Experience, Store
        store = Store(sys.argv[1], embedder=None)
        kept = store.add_experience(Experience(agent="c", task_signature="kept", lesson="k"))
        print(kept, flush=True)
        doomed = Experience(agent="c", task_signature="doomed", lesson="d")
        with Session(store._wengine) as s, s.begin():
            store._insert(s, doomed, None)
            s.flush()
            print(doomed.id, flush=True)
            time.sleep(60)
        """
    )
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen(
        [sys.executable, "-c", child, db_url], stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stdout is not None
    kept, doomed = proc.stdout.readline().strip(), proc.stdout.readline().strip()
    assert kept and doomed
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    store = Store(db_url, embedder=None)  # must not wait on the dead writer's lock
    assert store.get(kept).task_signature == "kept"  # type: ignore[union-attr]
    with pytest.raises(Exception, match="unknown memory id"):
        store.get(doomed)
    store.add_experience(store.get(kept).model_copy(update={"id": "exp_after"}))  # type: ignore[arg-type]
    con = sqlite3.connect(tmp_path / "memory.db")
    assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
