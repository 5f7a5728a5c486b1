"""A pipeline with memory on (its run's own memory.db) vs off (``--memory none``), over seeds.

Runs ``optiforge pipeline run PIPELINE --seed S [--memory none]`` for every seed and arm
(offline unless ``--model``), then prints, per agent node, the mean best score and a 95%
t-interval over the seeds of each arm and the paired difference (on - off). Heavy: wrap
it in the shared lock, e.g.

    python benchmarks/pipeline_memory.py design-card \
        --seeds 5 --out /tmp/pm            # then --table-only to print again

Rows go to OUT/rows.jsonl (one per seed, arm and node); a finished (seed, arm) is not run
again, so an interrupted benchmark continues where it stopped.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats


def t_interval(xs: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95% t-interval (0 for one value)."""
    a = np.asarray(xs, dtype=float)
    if len(a) < 2:
        return float(a.mean()), 0.0
    return float(a.mean()), float(stats.t.ppf(0.975, len(a) - 1) * a.std(ddof=1) / np.sqrt(len(a)))


def run_one(pipeline: str, seed: int, arm: str, model: str, out: Path) -> list[dict[str, Any]]:
    run_dir = out / f"{arm}-{seed}"
    if not (run_dir / "summary.json").is_file():
        cmd = [sys.executable, "-m", "optiforge.cli", "pipeline", "run", pipeline, "--seed",
               str(seed), "--model", model, "--out", str(run_dir)]  # fmt: skip
        if arm == "off":
            cmd += ["--memory", "none"]
        subprocess.run(cmd, check=False, capture_output=True, env=os.environ.copy())
    if not (run_dir / "summary.json").is_file():
        return [{"seed": seed, "arm": arm, "node": "*", "status": "crashed", "score": None}]
    summ = json.loads((run_dir / "summary.json").read_text())
    return [
        {"seed": seed, "arm": arm, "node": nid, "status": r.get("status"),
         "score": r.get("best_score"), "status_reason": r.get("status_reason")}
        for nid, r in summ["nodes"].items()
    ]  # fmt: skip


def table(rows: list[dict[str, Any]]) -> str:
    nodes = list(dict.fromkeys(r["node"] for r in rows))
    lines = ["| node | memory on: mean ± 95% CI | memory off: mean ± 95% CI | on - off (paired) | n |",
             "|---|---|---|---|---|"]  # fmt: skip
    for node in nodes:
        by = {(r["arm"], r["seed"]): r["score"] for r in rows if r["node"] == node}
        seeds = sorted({s for a, s in by if by.get(("on", s)) is not None
                        and by.get(("off", s)) is not None})  # fmt: skip
        if not seeds:
            continue
        on = [float(by[("on", s)]) for s in seeds]
        off = [float(by[("off", s)]) for s in seeds]
        (m1, h1), (m0, h0) = t_interval(on), t_interval(off)
        md, hd = t_interval([a - b for a, b in zip(on, off, strict=True)])
        lines.append(f"| {node} | {m1:.4g} ± {h1:.2g} | {m0:.4g} ± {h0:.2g} | {md:+.4g} ± {hd:.2g} "
                     f"| {len(seeds)} |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pipeline")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--model", default="offline")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--table-only", action="store_true")
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    path = a.out / "rows.jsonl"
    rows = [json.loads(x) for x in path.read_text().splitlines()] if path.is_file() else []
    done = {(r["seed"], r["arm"]) for r in rows}
    if not a.table_only:
        for seed in range(a.seeds):
            for arm in ("on", "off"):
                if (seed, arm) in done:
                    continue
                new = run_one(a.pipeline, seed, arm, a.model, a.out)
                with path.open("a") as f:
                    f.writelines(json.dumps(r) + "\n" for r in new)
                rows += new
                print(f"seed {seed} {arm}: " + ", ".join(
                    f"{r['node']} {r['status']} {r['score']}" for r in new), flush=True)  # fmt: skip
    print(table(rows))


if __name__ == "__main__":
    main()
