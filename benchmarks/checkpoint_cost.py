"""Checkpoint cost of the shared search loop against run length (200 vs 3000 evaluations).

The proposer and the evaluator are instant (Gaussian steps on the toy bowl, no executor),
so what a run spends beyond its in-memory twin is the durable part: LangGraph's SQLite
checkpointer after every node. For each length the search runs twice in this process,
with a run directory (checkpointing on, the time inside the checkpointer's ``put`` and
``put_writes`` summed) and without one; printed per length: checkpoint ms per evaluation
(time in the checkpointer, and wall minus the in-memory run), the checkpoint DB's size
and its last checkpoint's size, then the ratios of the longest length to the shortest.
A graph state that grows with the run makes the per-evaluation cost grow with it (and
the DB quadratically); one of bounded size keeps both ratios near 1 and ~15.

    python benchmarks/checkpoint_cost.py [--sizes 200,3000] [--batch 4]
"""

from __future__ import annotations

import argparse
import sqlite3
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from optiforge.agents.kit import RunContext, SearchConfig, run_search
from optiforge.testing.toy_search import GaussianProposer, ToyProblem


class _Timed:
    """Sums the seconds spent in ``SqliteSaver.put`` and ``put_writes`` while active."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.calls = 0
        self._saved: dict[str, Callable[..., Any]] = {}

    def __enter__(self) -> _Timed:
        from langgraph.checkpoint.sqlite import SqliteSaver

        for name in ("put", "put_writes"):
            orig = getattr(SqliteSaver, name)
            self._saved[name] = orig

            def timed(*a: Any, _orig: Callable[..., Any] = orig, **kw: Any) -> Any:
                t = time.perf_counter()
                try:
                    return _orig(*a, **kw)
                finally:
                    self.seconds += time.perf_counter() - t
                    self.calls += 1

            setattr(SqliteSaver, name, timed)
        return self

    def __exit__(self, *exc: object) -> None:
        from langgraph.checkpoint.sqlite import SqliteSaver

        for name, orig in self._saved.items():
            setattr(SqliteSaver, name, orig)


def _search(n_eval: int, batch: int, run_dir: Path | None) -> float:
    ctx = RunContext(run_dir=run_dir, seed=0)
    # patience/duplicates never stop it early: the run spends exactly n_eval evaluations
    cfg = SearchConfig(
        max_evaluations=n_eval, max_rounds=10 * n_eval, proposals_per_round=batch,
        population_size=8, max_duplicate_rounds=n_eval,
    )  # fmt: skip
    t = time.perf_counter()
    res = run_search(ToyProblem(), GaussianProposer(), ctx, cfg)
    dt = time.perf_counter() - t
    assert res.n_evaluations == n_eval, res.stop_reason
    return dt


def measure(n_eval: int, batch: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as d:
        run_dir = Path(d) / "run"
        with _Timed() as timed:
            wall = _search(n_eval, batch, run_dir)
        db = run_dir / "checkpoints.sqlite"
        size = sum(p.stat().st_size for p in run_dir.glob("checkpoints.sqlite*"))
        with sqlite3.connect(db) as conn:
            (last,) = conn.execute(
                "SELECT length(checkpoint) FROM checkpoints ORDER BY rowid DESC LIMIT 1"
            ).fetchone()
        conn.close()
    bare = _search(n_eval, batch, None)
    return {
        "put_ms": 1000 * timed.seconds / n_eval,
        "extra_ms": 1000 * (wall - bare) / n_eval,
        "wall_s": wall,
        "bare_s": bare,
        "db_mb": size / 2**20,
        "last_kb": last / 1024,
        "puts": timed.calls,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="200,3000", help="evaluations per run, comma-separated")
    ap.add_argument("--batch", type=int, default=4, help="proposals per round")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    rows = {n: measure(n, args.batch) for n in sizes}
    print(
        "| evaluations | checkpointer ms/eval | wall - in-memory ms/eval | wall s | "
        "in-memory s | DB MiB | last checkpoint KiB | puts |\n|---|---|---|---|---|---|---|---|"
    )
    for n, r in rows.items():
        print(
            f"| {n} | {r['put_ms']:.3f} | {r['extra_ms']:.3f} | {r['wall_s']:.2f} | "
            f"{r['bare_s']:.2f} | {r['db_mb']:.1f} | {r['last_kb']:.1f} | {r['puts']:.0f} |"
        )
    lo, hi = rows[min(sizes)], rows[max(sizes)]
    print(
        f"\nratio {max(sizes)}/{min(sizes)}: checkpointer ms/eval "
        f"{hi['put_ms'] / lo['put_ms']:.2f}x, DB size {hi['db_mb'] / lo['db_mb']:.1f}x "
        f"(evaluations {max(sizes) / min(sizes):.0f}x)"
    )


if __name__ == "__main__":
    main()
