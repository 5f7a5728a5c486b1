"""Same numbers before and after a refactor: every agent on its suite's dev split, offline.

Runs ``optiforge eval AGENT --split dev --model offline`` for every registered agent
(fixed seeds, tasks and budgets, baselines included) and ``optiforge saddle tune``
(AutoSaddler, offline proposer, simulated terminal agent), then writes one JSON of
``{agent: {task/seed/runner: value}}``. Run it on two checkouts and compare::

    PYTHONPATH=/path/to/old python benchmarks/agent_parity.py --out old.json
    python benchmarks/agent_parity.py --out new.json
    python benchmarks/agent_parity.py --compare old.json new.json

Numbers are compared exactly (offline runs are deterministic for a seed); a difference
is printed per row. Takes about 15 minutes on 2 cores (``--agents`` picks some).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# agent -> (suite, tasks, budget): small enough to finish in minutes, big enough to search
PLAN: dict[str, tuple[str, str, int]] = {
    "evolve": ("funcfit", "quadratic,sine", 12),
    "kernel-discovery": ("hdbo", "levy4_in_25,branin2_in_100", 30),
    "hawkeye": ("kernelarena", "t2t_add,torch_softmax", 6),
    "autorem": ("autoro", "autoro-dev-d1-0000-s0,autoro-dev-d3-0002-s0,autoro-dev-d5-0004-s0", 0),
    "agent-cbo": ("cbo", "toy_graph,independent", 0),
    "epb": ("nco", "tsp20", 6),
    "knowevo": ("protein", "thermostability-a,solubility-a", 24),
    "smith": ("procedural", "train-families", 9),
    "formulator": ("bbowp", "logreg-wine,pressure-vessel", 0),
    "terminal": ("saddle", "fix-median-bug,dedupe-events", 0),
    "autosaddler": ("saddle", "", 0),  # `saddle tune`, not `eval` (see _saddle_tune)
}
SADDLE_TUNE = ["--iterations", "2", "--batch", "2", "--runs", "1", "--val-tasks", "2", "--val-runs", "1"]


def _saddle_rows(out: Path) -> dict[str, str]:
    """AutoSaddler's rounds (``rounds.jsonl``): each round's accepted/rejected verdict and rewards."""
    rows: dict[str, str] = {}
    for i, line in enumerate((out / "rounds.jsonl").read_text().splitlines()):
        if line.strip():
            r = json.loads(line)
            keep = {k: v for k, v in sorted(r.items()) if not k.endswith(("_s", "time", "at"))}
            rows[f"round{i}"] = json.dumps(keep, sort_keys=True)[:400]
    return rows


def _rows(eval_dir: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in (eval_dir / "results.jsonl").read_text().splitlines():
        if not line.strip():
            continue
        r = json.loads(line)
        key = f"{r['task']}/{r['seed']}/{r['method']}"
        if "error" in r:
            out[key] = f"error: {r['error']}"[:200]
        else:  # the verified score, the agent's own claim, and the evaluations it spent
            out[key] = (
                f"{r.get('best_score')!r} claimed={r.get('claimed_score')!r} n={r.get('n_evaluations')}"
            )
    return out


def run(out: Path, agents: list[str], seeds: int) -> None:
    results: dict[str, dict[str, str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for agent in agents:
            suite, tasks, budget = PLAN[agent]
            # `python -m optiforge.cli`, not the console script: an older checkout on
            # PYTHONPATH may lack the entry point the installed script names
            cmd = ["eval", agent, "--bench", suite, "--split", "dev"]
            cmd += ["--seeds", str(seeds), "--model", "offline", "--memory", "none"]
            cmd += ["--out", str(Path(tmp) / agent)]
            if agent == "autosaddler":
                cmd = ["saddle", "tune", "--out", str(Path(tmp) / agent), *SADDLE_TUNE]
            if tasks:
                cmd += ["--tasks", tasks]
            if budget:
                cmd += ["--budget", str(budget)]
            t0 = time.perf_counter()
            env = {**os.environ, "OMP_NUM_THREADS": "1"}
            proc = subprocess.run(
                [sys.executable, "-m", "optiforge.cli", *cmd],
                capture_output=True,
                text=True,
                env=env,
            )
            dt = time.perf_counter() - t0
            if proc.returncode not in (0, 1):
                print(proc.stdout[-2000:], proc.stderr[-2000:], file=sys.stderr)
                raise SystemExit(f"{agent}: eval exited {proc.returncode}")
            rows = _saddle_rows if agent == "autosaddler" else _rows
            results[agent] = rows(Path(tmp) / agent)
            print(f"{agent:18s} {len(results[agent]):3d} rows  {dt:6.1f} s", flush=True)
    out.write_text(json.dumps(results, indent=1, sort_keys=True))
    print(f"wrote {out}")


def compare(old: Path, new: Path) -> int:
    a, b = json.loads(old.read_text()), json.loads(new.read_text())
    bad = 0
    print(f"{'agent':18s} {'rows':>5s} {'same':>5s}")
    left_out = sorted(set(a) - set(b))
    if left_out:  # a run of some agents (--agents) is compared on those
        print(f"(not in {new.name}, not compared: {', '.join(left_out)})")
    for agent in sorted(b):
        ra, rb = a.get(agent, {}), b.get(agent, {})
        keys = sorted(set(ra) | set(rb))
        same = [k for k in keys if k in ra and k in rb and ra[k] == rb[k]]
        print(f"{agent:18s} {len(keys):5d} {len(same):5d}")
        for k in keys:
            if k not in same:
                bad += 1
                print(f"  differs: {k}: {ra.get(k, 'missing')} -> {rb.get(k, 'missing')}")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("agent_parity.json"))
    ap.add_argument("--agents", default=",".join(PLAN))
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"))
    args = ap.parse_args()
    if args.compare:
        return compare(*args.compare)
    run(args.out, args.agents.split(","), args.seeds)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
