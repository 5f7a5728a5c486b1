"""The bbowp suite's hidden reference numbers: per instance, the best value a long run
finds and the oracle optimizer (the portfolio member with the best mean result on the
human formulation at the instance's budget).

    .venv/bin/python benchmarks/bbowp_reference.py [--seeds 2] [--workers 2] [--long 4]

Writes ``optiforge/evals/suites/bbowp/reference.json`` (hidden truth: the evals package is
never shipped into a sandbox) and prints the table. The black boxes are our own code and
run in-process here (no candidate code runs).
"""

from __future__ import annotations

import argparse
import json
import math
import multiprocessing as mp
import statistics
import time
from pathlib import Path
from typing import Any

OUT = (
    Path(__file__).resolve().parents[1]
    / "optiforge"
    / "evals"
    / "suites"
    / "bbowp"
    / "reference.json"
)
METHODS = ("random", "sobol", "cma", "tpe", "gp")


def _run(job: tuple[str, str, int, int]) -> tuple[str, str, int, float]:
    import warnings

    warnings.filterwarnings("ignore")
    from optiforge.evals.registry import get_benchmark
    from optiforge.solvers.blackbox import SearchSpace, optimize
    from optiforge.solvers.blackbox.problems import BLACK_BOXES

    name, method, seed, budget = job
    bench = get_benchmark("bbowp")
    task = next(t for s in bench.splits for t in bench.tasks(s) if t.name == name)
    space = SearchSpace.model_validate(task.human["space"])
    res = optimize(BLACK_BOXES[task.black_box], space, budget, method=method, seed=seed)
    finite = [v for v in res.values if math.isfinite(v)]
    return name, method, seed, min(finite) if finite else math.inf


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument(
        "--long", type=int, default=4, help="the long run's budget, in instance budgets"
    )
    args = ap.parse_args()
    from optiforge.evals.registry import get_benchmark

    bench = get_benchmark("bbowp")
    tasks = [t for s in bench.splits for t in bench.tasks(s)]
    jobs = [(t.name, m, s, t.budget) for t in tasks for m in METHODS for s in range(args.seeds)]
    jobs += [(t.name, "tpe", 100, args.long * t.budget) for t in tasks]  # the long reference run
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(args.workers) as pool:
        results = pool.map(_run, jobs, chunksize=1)
    ref: dict[str, Any] = {}
    for t in tasks:
        mine = [r for r in results if r[0] == t.name]
        means = {
            m: statistics.mean(v for n, mm, s, v in mine if mm == m and s < 100) for m in METHODS
        }
        best_long = min(v for *_, v in mine)
        ref[t.name] = {"best_value": best_long, "oracle": min(means, key=lambda m: means[m]),
                       "method_means": means, "budget": t.budget, "seeds": args.seeds}  # fmt: skip
    OUT.write_text(json.dumps(ref, indent=1, sort_keys=True) + "\n")
    print("| instance | reference best | oracle | " + " | ".join(METHODS) + " |")
    print("|---|---|---|" + "---|" * len(METHODS))
    for name, r in ref.items():
        cells = " | ".join(f"{r['method_means'][m]:.4g}" for m in METHODS)
        print(f"| {name} | {r['best_value']:.5g} | {r['oracle']} | {cells} |")
    print(f"\n{len(jobs)} runs in {time.perf_counter() - t0:.0f} s; wrote {OUT}")


if __name__ == "__main__":
    main()
