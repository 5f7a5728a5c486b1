"""EPB's distilled portfolio on every nco heldout task (the shifts included), beside the
baselines and the teacher, over seeds, with ablations.

The portfolio an ``epb`` run returns does not depend on the task it was launched on: the
agent only sees teacher trajectories on uniform TSP-20 training instances
(``NCOTask.teacher_trajectories``) and its own practice instances. So each method runs
once per seed (on the dev task), and the harness's ``evaluate`` re-measures the returned
candidate, in the sandbox, on each heldout task: one run per seed instead of one per
(task, seed). The teacher's row is its greedy single-start tour from city 0 (the tours
the portfolio is distilled from).

    .venv/bin/python benchmarks/epb_transfer.py [--seeds 5] [--budget 8] [--workers 2]
        [--methods epb,epb-noguard,best-single,seed-portfolio] [--model offline|scripted|local]
        [--out /work/evals/epb-transfer]

Methods: ``epb`` (default options), ``epb-noguard`` (edits judged on divergence alone),
``epb-noboost`` (block II off), the agent's baselines. ``--model scripted`` gives every
``epb*`` method the scripted rewrite of ``benchmarks/epb_scripted.py``; ``--model local``
the embedded SmolLM2. Writes ``rows.jsonl`` (resumable: finished (method, seed) pairs are
skipped) and prints a markdown table of the mean gap (%) ± 95% t-interval over seeds.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

VARIANTS: dict[str, tuple[str, dict[str, Any]]] = {
    "epb": ("epb", {}),
    "epb-noguard": ("epb", {"tour_guard": False}),
    "epb-noboost": ("epb", {"boost": False}),
}


def _one(method: str, seed: int, budget: int, model: str) -> dict[str, Any]:
    from optiforge.config import RunSettings
    from optiforge.evals.registry import resolve_task
    from optiforge.evals.suites.nco import NCOBenchmark
    from optiforge.harness.runner import run_task

    llm = None
    agent_method, options = VARIANTS.get(method, ("epb", {}))
    is_agent = method in VARIANTS
    label = model if is_agent else "offline"
    if is_agent and model == "scripted":
        import sys

        sys.path.insert(0, str(Path(__file__).parent))
        from epb_scripted import REWRITE  # type: ignore[import-not-found]

        from optiforge.testing import FunctionLLM

        llm = FunctionLLM(lambda m, t, s: REWRITE)
    settings = RunSettings(seed=seed, budget=budget, memory="none", agent=options,
                           model="offline" if label == "scripted" else label)  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        s = run_task("epb", resolve_task("nco/tsp20"), settings, Path(tmp) / "run",
                     method=agent_method if is_agent else method, llm=llm,
                     with_baseline=False)  # fmt: skip
        path = Path(tmp) / "run" / str(s.best_path or "best/candidate.json")
        candidate = json.loads(path.read_text()) if path.exists() else None
    row: dict[str, Any] = {"method": method, "seed": seed, "model": label, "budget": budget,
                           "wall_s": s.wall_s, "portfolio": s.extra.get("portfolio"),
                           "accepted": s.extra.get("accepted"), "gaps": {}}  # fmt: skip
    for task in NCOBenchmark().tasks("heldout"):
        score = task.evaluate(candidate) if candidate is not None else None
        row["gaps"][task.name] = score.value if score is not None and score.passed else math.inf
        if score is not None and score.passed:
            row.setdefault("teacher_gap", {})[task.name] = score.metrics["gap_to_teacher_pct"]
            row.setdefault("stages", {})[task.name] = score.details.get("stages")
    return row


def _teacher() -> dict[str, float]:
    import numpy as np

    from optiforge.evals.suites.nco import NCOBenchmark
    from optiforge.solvers.nco.tsp import tour_length

    out = {}
    for task in NCOBenchmark().tasks("heldout"):
        gaps = [100 * (tour_length(x, t) / ref - 1) for x, t, ref in
                zip(task.instances, task.teacher_tours, task.reference, strict=True)]  # fmt: skip
        out[task.name] = float(np.mean(gaps))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budget", type=int, default=8)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--methods", default="epb,epb-noguard,best-single,seed-portfolio")
    ap.add_argument("--model", default="offline", choices=["offline", "scripted", "local"])
    ap.add_argument("--out", default="runs/epb-transfer")
    ap.add_argument("--table-only", action="store_true", help="print the table from stored rows")
    args = ap.parse_args()

    from optiforge.evals.stats import mean_ci95

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows_path = out / "rows.jsonl"
    rows = (
        [json.loads(line) for line in rows_path.read_text().splitlines()]
        if rows_path.exists()
        else []
    )
    done = {(r["method"], r["seed"], r["model"], r["budget"]) for r in rows}
    methods = args.methods.split(",")
    jobs = []
    for m in methods:
        label = args.model if m in VARIANTS else "offline"
        jobs += [(m, s) for s in range(args.seeds) if (m, s, label, args.budget) not in done]
    if args.table_only:
        jobs = []
    print(f"{len(jobs)} runs to do ({len(rows)} stored in {rows_path})", flush=True)
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        futures = [pool.submit(_one, m, s, args.budget, args.model) for m, s in jobs]
        for fut in futures:
            row = fut.result()
            rows.append(row)
            with rows_path.open("a") as f:
                f.write(json.dumps(row) + "\n")
            gaps = ", ".join(f"{k} {v:.1f}" for k, v in row["gaps"].items())
            print(f"{row['method']} seed {row['seed']} ({row['wall_s']:.0f} s): {gaps}", flush=True)
    teacher = _teacher()
    tasks = list(teacher)
    labels = sorted({(r["method"], r["model"]) for r in rows if r["budget"] == args.budget
                     and r["method"] in methods}, key=lambda ml: (methods.index(ml[0]), ml[1]))  # fmt: skip
    head = " | ".join(f"{m}" + (f" ({lab})" if lab != "offline" else "") for m, lab in labels)
    print(f"\nMean gap to the reference (%) ± 95% t-interval over seeds, budget {args.budget}\n")
    print(f"| task | {head} | teacher (greedy, 1 start) |")
    print("|---" * (len(labels) + 2) + "|")
    for t in [*tasks, "mean"]:
        cells = []
        for m, lab in labels:
            per_seed = [(sum(r["gaps"].values()) / len(r["gaps"])) if t == "mean" else r["gaps"][t]
                        for r in rows if r["method"] == m and r["model"] == lab and r["budget"] == args.budget]  # fmt: skip
            mean, half = mean_ci95(per_seed)
            cells.append(f"{mean:.1f} ± {half:.1f}" if half is not None else f"{mean:.1f}")
        tv = sum(teacher.values()) / len(teacher) if t == "mean" else teacher[t]
        print(f"| {t} | {' | '.join(cells)} | {tv:.1f} |")


if __name__ == "__main__":
    main()
