"""EPB against the teacher and its baselines on TSP-20 dev, TSP-20 heldout and clustered
TSP-50: mean optimality gap (%) and gap to the teacher (%) with a 95% t-interval over seeds.

Each seeded method runs once per seed on ``nco/tsp20`` (the agent sees only teacher
trajectories on uniform TSP-20 training instances, whatever the task) and its portfolio is
re-measured, in the sandbox, on each of the three tasks. Methods:

- ``epb:offline`` (the offline proposer: template feedback, flat blends),
  ``epb:scripted`` (``optiforge.testing.epb``: a scripted LLM that reads the failure cases,
  writes the critique and the programs it prescribes), ``epb:scripted-template`` (the same
  rewriter under the template gradient: the stand-in), ``epb:local`` (the embedded
  SmolLM2-135M; use a small ``--local-budget``);
- ``best-single``, ``seed-portfolio`` (the agent's baselines, router fitted);
- deterministic rows (no seed): ``teacher`` (greedy, one start from city 0: the tours the
  portfolio is distilled from), ``nearest-neighbour`` and ``farthest-insertion`` (from city 0).

    .venv/bin/python benchmarks/epb_teacher.py --seeds 5 --budget 8 \\
        [--methods epb:offline,epb:scripted,best-single,seed-portfolio] [--agent '{"train_tours": 24}']
        [--out runs/epb-teacher] [--table-only]

Writes ``rows.jsonl`` (resumable: finished (method, seed, budget) rows are skipped) and
prints the markdown table.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import tempfile
from pathlib import Path
from typing import Any

TASKS = ("tsp20", "tsp20-heldout", "tsp50-clustered")


@functools.cache
def _tasks() -> list[Any]:
    """The three tasks (cached: their references and teacher tours are computed once)."""
    from optiforge.evals.registry import resolve_task

    return [resolve_task(f"nco/{t}") for t in TASKS]


def _one(method: str, seed: int, budget: int, agent: dict[str, Any]) -> dict[str, Any]:
    from optiforge.config import RunSettings
    from optiforge.evals.registry import resolve_task
    from optiforge.harness.runner import run_task

    llm, options, model = None, dict(agent), "offline"
    name = method.split(":")[0]
    if method.startswith("epb:"):
        model = method.split(":")[1]
        if model.startswith("scripted"):
            from optiforge.testing.epb import epb_llm

            llm = epb_llm()
            if model == "scripted-template":
                options["gradient"] = "template"
    settings = RunSettings(seed=seed, budget=budget, memory="none", agent=options if name == "epb" else {},
                           model="scripted" if llm is not None else model)  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        s = run_task("epb", resolve_task("nco/tsp20"), settings, Path(tmp) / "run",
                     method=name, llm=llm, with_baseline=False)  # fmt: skip
        path = Path(tmp) / "run" / str(s.best_path or "best/candidate.json")
        candidate = json.loads(path.read_text()) if path.exists() else None
    extra = s.extra
    row: dict[str, Any] = {"method": method, "seed": seed, "budget": budget, "agent": agent,
                           "status": s.status, "wall_s": s.wall_s,
                           "portfolio": extra.get("portfolio"), "accepted": extra.get("accepted"),
                           "llm_calls": s.llm_calls, "gap": {}, "teacher_gap": {},
                           "agreement": {}}  # fmt: skip
    for task in _tasks():
        score = task.evaluate(candidate) if candidate is not None else None
        ok = score is not None and score.passed
        row["gap"][task.name] = score.value if ok and score is not None else math.inf
        if ok and score is not None:
            row["teacher_gap"][task.name] = score.metrics["gap_to_teacher_pct"]
            row["agreement"][task.name] = score.metrics["agreement"]
    return row


def _fixed() -> dict[str, dict[str, tuple[float, float]]]:
    """Deterministic rows: ``{method: {task: (gap %, gap to teacher %)}}``."""
    import numpy as np

    from optiforge.solvers.nco.tsp import farthest_insertion, nearest_neighbour, tour_length

    out: dict[str, dict[str, tuple[float, float]]] = {}
    for task in _tasks():
        makers = {"teacher": lambda x, i, t=task: t.teacher_tours[i],
                  "nearest-neighbour": lambda x, i: nearest_neighbour(x),
                  "farthest-insertion": lambda x, i: farthest_insertion(x)}  # fmt: skip
        for m, make in makers.items():
            gaps, tgaps = [], []
            for i, (x, ref, tt) in enumerate(
                zip(task.instances, task.reference, task.teacher_tours, strict=True)
            ):
                length = tour_length(x, make(x, i))
                gaps.append(100 * (length / ref - 1))
                tgaps.append(100 * (length / tour_length(x, tt) - 1))
            out.setdefault(m, {})[task.name] = (float(np.mean(gaps)), float(np.mean(tgaps)))
    return out


def table(rows: list[dict[str, Any]], methods: list[str], budgets: dict[str, int]) -> str:
    """The markdown table: per task, each method's mean gap ± 95% t-interval (and its gap
    to the teacher)."""
    from optiforge.evals.stats import mean_ci95

    fixed = _fixed()
    lines = ["| method | budget | seeds | " + " | ".join(f"{t} gap % (to teacher %)" for t in TASKS) + " |",
             "|---|---|---|" + "---|" * len(TASKS)]  # fmt: skip
    for m in methods:
        mine = [r for r in rows if r["method"] == m and r["budget"] == budgets.get(m, r["budget"])]
        if not mine:
            continue
        cells = []
        for t in TASKS:
            g, gh = mean_ci95([r["gap"][t] for r in mine])
            tg, th = mean_ci95([r["teacher_gap"].get(t, math.inf) for r in mine])
            cells.append(f"{g:.2f} ± {gh or 0:.2f} ({tg:+.2f} ± {th or 0:.2f})")
        lines.append(f"| {m} | {mine[0]['budget']} | {len(mine)} | " + " | ".join(cells) + " |")
    for m, per in fixed.items():
        cells = [f"{per[t][0]:.2f} ({per[t][1]:+.2f})" for t in TASKS]
        lines.append(f"| {m} | - | deterministic | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--budget", type=int, default=8)
    ap.add_argument("--local-budget", type=int, default=4, help="the budget of epb:local")
    ap.add_argument("--methods", default="epb:offline,epb:scripted,best-single,seed-portfolio")
    ap.add_argument("--agent", default="{}", help="EPB options (JSON) for every epb method")
    ap.add_argument("--out", default="runs/epb-teacher")
    ap.add_argument("--table-only", action="store_true", help="print the table from stored rows")
    args = ap.parse_args()

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows_path = out / "rows.jsonl"
    rows = [json.loads(x) for x in rows_path.read_text().splitlines()] if rows_path.exists() else []
    methods = args.methods.split(",")
    budgets = {m: (args.local_budget if m == "epb:local" else args.budget) for m in methods}
    agent = json.loads(args.agent)
    done = {(r["method"], r["seed"], r["budget"]) for r in rows}
    jobs = [] if args.table_only else [
        (m, s) for s in range(args.seeds) for m in methods if (m, s, budgets[m]) not in done
    ]  # fmt: skip
    print(f"{len(jobs)} runs to do ({len(rows)} stored in {rows_path})", flush=True)
    for m, s in jobs:
        row = _one(m, s, budgets[m], agent)
        rows.append(row)
        with rows_path.open("a") as f:
            f.write(json.dumps(row) + "\n")
        gaps = ", ".join(f"{k} {v:.2f}" for k, v in row["gap"].items())
        print(f"{m} seed {s} ({row['wall_s']:.0f} s, {row['status']}): {gaps}", flush=True)
    print(f"\nMean gap to the reference (%) ± 95% t-interval over seeds; in brackets the gap "
          f"to the teacher's greedy tour (%). EPB options: {agent or 'defaults'}\n")  # fmt: skip
    print(table(rows, methods, budgets))


if __name__ == "__main__":
    main()
