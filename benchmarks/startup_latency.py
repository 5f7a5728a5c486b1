"""Cold-start costs of one CLI run: peak RSS, run start to first proposal, round 0 to the
first LLM reply, and how long the process lives after its run has finished.

Two runs per repeat and per tree (``--optiforge PATH``, several to compare, interleaved so
machine load hits every tree alike), each ``python -m optiforge.cli run evolve --bench
funcfit/quadratic`` with the default memory store, under ``/usr/bin/time -v`` (its
"Maximum resident set size" is the largest single process of the run's tree):

- ``offline``: ``--budget 100`` (default offline model);
- ``llm``: ``--budget 20 --model openai/instant --api-base`` an instant OpenAI-compatible
  server on 127.0.0.1 (``benchmarks/_instant_llm.py``).

From each run's ``events.jsonl``: ``start->proposal`` (``run_started`` to the first
``proposed``), ``round0->reply`` (round 0's ``round_done`` to the first ``llm_call``),
``longest gap`` (the longest silence between two events: a stall inside the loop) and
``exit lag`` (``run_finished`` to the process's exit: the plot, closing, ...).

    python benchmarks/startup_latency.py --optiforge /path/to/tree [--optiforge OTHER] \
        [--repeats 3] [--only offline|llm]

Prints one row per tree and kind (medians over the repeats, every value in brackets).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _events(run_dir: Path) -> list[dict[str, Any]]:
    path = run_dir / "events.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _first(ev: list[dict[str, Any]], kind: str, **match: Any) -> float | None:
    for e in ev:
        if e.get("kind") == kind and all(e.get(k) == v for k, v in match.items()):
            return float(e["ts"])
    return None


def one_run(
    tree: Path, kind: str, api_base: str | None, work: Path, budget: int
) -> dict[str, float | None]:
    """One CLI run of ``tree``; its numbers (None where the run did not get there)."""
    out = work / f"run-{kind}-{time.monotonic_ns()}"
    cmd = [
        "/usr/bin/time", "-v", sys.executable, "-m", "optiforge.cli", "run", "evolve",
        "--bench", "funcfit/quadratic", "--budget", str(budget), "--out", str(out),
    ]  # fmt: skip
    if kind == "llm":
        assert api_base is not None
        cmd += ["--model", "openai/instant", "--api-base", api_base]
    env = {**os.environ, "PYTHONPATH": str(tree), "OMP_NUM_THREADS": "1"}
    env.setdefault("OPENAI_API_KEY", "instant")
    t0 = time.time()
    p = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True)
    t_end = time.time()
    m = re.search(r"Maximum resident set size \(kbytes\): (\d+)", p.stderr)
    ev = _events(out)
    started = _first(ev, "run_started")
    proposal = _first(ev, "proposed")
    round0 = _first(ev, "round_done", round=0)
    reply = _first(ev, "llm_call")
    finished = _first(ev, "run_finished")
    ts = [float(e["ts"]) for e in ev]
    gaps = [b - a for a, b in zip(ts, ts[1:], strict=False)]
    if p.returncode != 0:
        print(f"  ! {tree} {kind}: exit {p.returncode}: {p.stderr.strip()[-400:]}", flush=True)
    row: dict[str, float | None] = {
        "peak_rss_mb": int(m.group(1)) / 1024 if m else None,
        "wall_s": t_end - t0,
        "start->proposal_s": proposal - started if proposal and started else None,
        "round0->reply_s": reply - round0 if reply and round0 and kind == "llm" else None,
        "longest_gap_s": max(gaps) if gaps else None,
        "exit_lag_s": t_end - finished if finished else None,
    }
    shutil.rmtree(out, ignore_errors=True)
    return row


class InstantServer:
    """``_instant_llm.py`` on a free port of 127.0.0.1."""

    def __enter__(self) -> InstantServer:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "_instant_llm.py"), "--port", "0"],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            raise SystemExit(f"instant LLM server did not start: {line!r}")
        self.api_base = f"http://127.0.0.1:{int(line.split()[1])}/v1"
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--optiforge", type=Path, action="append", required=True,
                    help="a source tree to run (repeat to compare; interleaved)")  # fmt: skip
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", choices=["offline", "llm"], default=None)
    ap.add_argument("--offline-budget", type=int, default=100)
    ap.add_argument("--llm-budget", type=int, default=20)
    args = ap.parse_args()
    kinds = [args.only] if args.only else ["offline", "llm"]
    trees = [t.resolve() for t in args.optiforge]
    rows: dict[tuple[str, str], list[dict[str, float | None]]] = {}
    with InstantServer() as server, tempfile.TemporaryDirectory(prefix="startup-") as tmp:
        work = Path(tmp)
        for rep in range(args.repeats):
            for kind in kinds:
                for tree in trees:
                    budget = args.offline_budget if kind == "offline" else args.llm_budget
                    r = one_run(tree, kind, server.api_base, work, budget)
                    rows.setdefault((str(tree), kind), []).append(r)
                    shown = {k: (None if v is None else round(v, 2)) for k, v in r.items()}
                    print(f"rep {rep} {kind:7s} {tree}: {shown}", flush=True)
    print(f"\nload average at the end: {os.getloadavg()}")
    for (tree, kind), rs in rows.items():
        print(f"\n{tree} · {kind} · {len(rs)} repeats (median [each])")
        for key in rs[0]:
            vals = [r[key] for r in rs if r[key] is not None]
            if not vals:
                continue
            each = ", ".join(f"{v:.2f}" for v in vals)
            print(f"  {key:18s} {statistics.median(vals):9.2f}  [{each}]")


if __name__ == "__main__":
    main()
