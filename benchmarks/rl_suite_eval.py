"""The ``rl`` suite's eval table: the formulator's control plans (the posed problem and an RL
method) against the fixed default (``ppo-lag`` online, ``linear-scalarization`` offline, on
the problem posed as the words state it) and against every applicable catalogue method
tuned by random search on validation episodes.

For each ``--models`` entry one ``optiforge eval formulator --bench rl --split SPLIT --seeds
N --model MODEL --set agent.tune_trials=T`` (``offline``: the heuristic's stated rules;
``local``: the embedded SmolLM2-135M-Instruct through llama.cpp; its eval runs the
formulator only and reads the references from the first model's), on the tasks whose
problem kind has a catalogue method that imports here (the methods of branches not merged
yet are left out, and so are their tasks when nothing else solves them). Then per task and
method the held-out score (``-return + penalty x excess``, lower is better; see
``optiforge/evals/suites/rl/benchmark.py``) with its mean and 95% t-interval over seeds, the
paired differences formulator - default and formulator - tuned, the normalized gap, and a
second table of mean return and constraint excess per method (what the score is made of).

    python benchmarks/rl_suite_eval.py [--split test] [--seeds 3] [--models offline,local]
        [--trials 3] [--out runs/rl_suite] [--from DIR ...]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from train_suite_eval import run_eval, table  # noqa: E402  (the train suite's, shared)

from optiforge.evals.stats import mean_ci95  # noqa: E402

METHODS = ("formulator", "default", "tuned")


def runnable_tasks(split: str) -> tuple[list[str], list[str]]:
    """``(tasks a catalogue method here can solve, the others)``."""
    from optiforge.evals.registry import get_benchmark

    ok, skipped = [], []
    for t in get_benchmark("rl").tasks(split):
        (ok if t.applicable() else skipped).append(t.name)
    return ok, skipped


def parts(eval_dir: Path, reference: Path | None) -> list[str]:
    """Per task and method: mean return and mean constraint excess (95% t-intervals)."""

    def read(d: Path) -> list[dict[str, Any]]:
        return [json.loads(x) for x in (d / "results.jsonl").read_text().splitlines() if x.strip()]

    rows = read(eval_dir)
    if reference is not None and reference != eval_dir:  # the references: the first model's
        have = {(r["task"], r["method"], r["seed"]) for r in rows}
        rows += [r for r in read(reference) if r["method"] != "formulator"
                 and (r["task"], r["method"], r["seed"]) not in have]  # fmt: skip
    seen: dict[tuple[str, str], dict[str, list[float]]] = {}
    for r in rows:
        m = ((r.get("verification") or {}).get("metrics")) or {}
        d = seen.setdefault((str(r["task"]), str(r["method"])), {"return": [], "excess": []})
        for k in ("return", "excess"):
            if isinstance(m.get(k), int | float) and math.isfinite(m[k]):
                d[k].append(float(m[k]))
    lines = ["| task | " + " | ".join(f"{m} return | {m} excess" for m in METHODS) + " |",
             "|---|" + "---|" * (2 * len(METHODS))]  # fmt: skip
    for t in sorted({k[0] for k in seen}):
        cells = []
        for m in METHODS:
            d = seen.get((t, m), {"return": [], "excess": []})
            for k in ("return", "excess"):
                mean, half = mean_ci95(d[k]) if d[k] else (math.nan, None)
                cells.append("-" if not math.isfinite(mean) else f"{mean:.3g}" + ("" if half is None else f" ± {half:.2g}"))  # fmt: skip
        lines.append(f"| {t} | " + " | ".join(cells) + " |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="test")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--models", default="offline,local")
    ap.add_argument("--trials", type=int, default=3, help="agent.tune_trials of the tuned baseline")
    ap.add_argument("--out", type=Path, default=Path("runs/rl_suite"))
    ap.add_argument("--from", dest="dirs", type=Path, nargs="*", help="print existing eval dirs")
    args = ap.parse_args()
    models = [m for m in args.models.split(",") if m]
    tasks, skipped = runnable_tasks(args.split)
    if skipped:
        print(f"left out (no catalogue method for their kind imports here): {', '.join(skipped)}")
    if not tasks and not args.dirs:
        print("no task of this split can run: no catalogue method imports")
        return 1
    extra = ["--tasks", ",".join(tasks), "--set", f"agent.tune_trials={args.trials}"]
    t0 = time.perf_counter()
    dirs = args.dirs or [
        run_eval(
            m,
            args.split,
            args.seeds,
            args.out / f"{args.split}-{m}",
            baselines=i == 0,
            bench="rl",
            extra=extra,
        )  # fmt: skip
        for i, m in enumerate(models)
    ]
    for d in dirs:
        print("\n".join(table(d, reference=dirs[0], methods=METHODS, plan_key="method",
                              what="held-out penalized return", chosen_label="Methods chosen")))  # fmt: skip
        print("\nWhat the score is made of (mean over seeds ± 95% t):\n")
        print("\n".join(parts(d, dirs[0])) + "\n")
    print(f"total {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
