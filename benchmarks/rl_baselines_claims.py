"""The constrained-RL baselines' claims (optiforge/solvers/rl/baselines.py): CPO, PCPO
and Lagrangian PPO end nearer their episode-cost budget than their unconstrained twins
(TRPO, PPO: the same code with the constraint dropped), at a return that pays for it.

Run (CPU, one core; about 9 minutes with the defaults):

    OMP_NUM_THREADS=1 python benchmarks/rl_baselines_claims.py --out runs/rl_baselines

Tasks:

- ``hazard``: ``point-hazards:groups=1,horizon=50,layout_seed=5`` (both hazards of the
  group sit on the straight line from start to goal), budget 0.5 contact steps per
  episode, ``--hazard-steps`` environment steps (500 a iteration), ``--seeds`` seeds.
- ``hazard2``: ``point-hazards:groups=2,horizon=50,layout_seed=5``, two hazard groups
  each with a hazard on the path (two coupled constraints: CPO's multi-constraint dual,
  PCPO's projection onto the intersection), budget 0.5 each, ``--hazard-steps`` steps,
  ``--seeds2`` seeds.
- ``cheetah``: ``HalfCheetah-v5+velocity:<v>`` (Safety-Gymnasium's velocity cost with a
  lower threshold ``--cheetah-vel`` so that a short run reaches it), budget
  ``--cheetah-limit`` over-speed steps per 1000-step episode, ``--cheetah-steps`` steps
  (2000 a iteration), ``--cheetah-seeds`` seeds. A short run: far from a trained cheetah.

Scored on 20 fresh episodes per run (``api.evaluate``, seeds the methods never drew):
mean return, mean episode cost per constraint, share of episodes over a budget.
Intervals: 95% Student t over seeds; the paired column is, per seed, ``sum_i |cost_i -
d_i|`` of the twin minus that of the method (> 0: the method ends nearer the budgets). Writes OUT/summary.json, OUT/summary.md
and OUT/curves_<task>.png (return and cost per iteration, mean over seeds with the 95%
band, the budget dashed).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy import stats

from optiforge.solvers.rl import baselines as bl
from optiforge.solvers.rl.api import ControlProblem, evaluate

METHODS: dict[str, bl.RLMethod] = {
    "cpo": bl.CPO,
    "pcpo": bl.PCPO,
    "trpo": bl.TRPO,
    "ppo-lag": bl.PPO_LAG,
    "ppo": bl.PPO,
}
TWIN = {"cpo": "trpo", "pcpo": "trpo", "ppo-lag": "ppo"}


def t_interval(xs: list[float]) -> tuple[float, float]:
    """Mean and 95% Student-t half-width (nan with one value)."""
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, math.nan
    return m, float(stats.t.ppf(0.975, len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs)))


def fmt(xs: list[float]) -> str:
    m, h = t_interval(xs)
    return f"{m:.2f} ± {h:.2f}"


def run_task(name: str, problem: ControlProblem, seeds: int, spi: int) -> dict[str, Any]:
    out: dict[str, Any] = {"problem": problem.env, "limits": list(problem.limits),
                           "budget": problem.budget, "methods": {}}  # fmt: skip
    for mname, method in METHODS.items():
        rows = []
        for s in range(seeds):
            t0 = time.process_time()
            res = method.run(problem, seed=s, steps_per_iter=spi)
            ev = evaluate(problem, res.policy, episodes=20)
            rows.append({"seed": s, "return": ev["return"], "cost": ev["cost"],
                         "violation": ev["violation"], "cpu_s": time.process_time() - t0,
                         "curve": res.curve})  # fmt: skip
            print(f"{name} {mname} seed {s}: return {ev['return']:.2f} cost {ev['cost']}"
                  f" ({rows[-1]['cpu_s']:.1f} s)", flush=True)  # fmt: skip
        out["methods"][mname] = rows
    return out


def table(task: dict[str, Any]) -> list[str]:
    d = np.asarray(task["limits"])
    lines = [f"### {task['problem']} (budgets {d.tolist()} per episode, {task['budget']} steps)", "",
             "| method | return | episode cost | over budget | nearer the budget than the twin "
             "(paired) | CPU s/run |", "|---|---|---|---|---|---|"]  # fmt: skip
    ms = task["methods"]
    for name, rows in ms.items():
        paired = "—"
        if name in TWIN:
            tw = ms[TWIN[name]]
            diff = [float(np.abs(np.asarray(b["cost"]) - d).sum() - np.abs(np.asarray(a["cost"]) - d).sum())
                    for a, b in zip(rows, tw, strict=True)]  # fmt: skip
            paired = f"{fmt(diff)} vs {TWIN[name]}"
        lines.append(f"| {name} | {fmt([r['return'] for r in rows])} | "
                     f"{' / '.join(fmt([r['cost'][i] for r in rows]) for i in range(len(d)))} | "
                     f"{fmt([r['violation'] for r in rows])} | "
                     f"{paired} | {statistics.fmean(r['cpu_s'] for r in rows):.1f} |")  # fmt: skip
    return [*lines, ""]


def plot(task: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nc = len(task["limits"])
    keys = ("return", *(f"cost_{i}" for i in range(nc)))
    fig, axes = plt.subplots(1, 1 + nc, figsize=(5 * (1 + nc), 3.6))
    for name, rows in task["methods"].items():
        steps = np.array([r["step"] for r in rows[0]["curve"]])
        for ax, key in zip(axes, keys, strict=True):
            y = np.array([[r[key] for r in run["curve"]] for run in rows], dtype=float)
            m = np.nanmean(y, 0)
            n = y.shape[0]
            h = (stats.t.ppf(0.975, n - 1) * np.nanstd(y, 0, ddof=1) / np.sqrt(n)
                 if n > 1 else np.zeros_like(m))  # fmt: skip
            ls = "--" if name in ("trpo", "ppo") else "-"
            ax.plot(steps, m, ls, label=name)
            ax.fill_between(steps, m - h, m + h, alpha=0.15)
    axes[0].set_title("episode return")
    for i in range(nc):
        axes[1 + i].axhline(task["limits"][i], color="k", ls=":", label="budget")
        axes[1 + i].set_title(f"episode cost {i}")
    for ax in axes:
        ax.set_xlabel("environment steps")
    axes[1].legend(fontsize=8)
    fig.suptitle(task["problem"])
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=Path("runs/rl_baselines"))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--hazard-steps", type=int, default=10_000)
    ap.add_argument("--seeds2", type=int, default=3)
    ap.add_argument("--cheetah-seeds", type=int, default=3)
    ap.add_argument("--cheetah-steps", type=int, default=20_000)
    ap.add_argument("--cheetah-vel", type=float, default=0.5)
    ap.add_argument("--cheetah-limit", type=float, default=100.0)
    ap.add_argument("--skip-cheetah", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    tasks = {"hazard": run_task("hazard", ControlProblem(
        "hazard", "cmdp", "reach the goal, rarely touch a hazard",
        "point-hazards:groups=1,horizon=50,layout_seed=5", limits=(0.5,),
        budget=args.hazard_steps), args.seeds, 500)}  # fmt: skip
    if args.seeds2 > 0:
        tasks["hazard2"] = run_task("hazard2", ControlProblem(
            "hazard2", "cmdp", "reach the goal, rarely touch either hazard group",
            "point-hazards:groups=2,horizon=50,layout_seed=5", limits=(0.5, 0.5),
            budget=args.hazard_steps), args.seeds2, 500)  # fmt: skip
    if not args.skip_cheetah:
        tasks["cheetah"] = run_task("cheetah", ControlProblem(
            "cheetah", "cmdp", "run forward, rarely over the speed limit",
            f"HalfCheetah-v5+velocity:{args.cheetah_vel}", limits=(args.cheetah_limit,),
            budget=args.cheetah_steps), args.cheetah_seeds, 2000)  # fmt: skip
    wall = time.time() - t0
    md = ["# Constrained-RL baselines", "",
          f"`python benchmarks/rl_baselines_claims.py` ({vars(args)}), wall {wall:.0f} s.", ""]  # fmt: skip
    for name, task in tasks.items():
        md += table(task)
        plot(task, args.out / f"curves_{name}.png")
    (args.out / "summary.md").write_text("\n".join(md))
    (args.out / "summary.json").write_text(json.dumps(
        {"args": {k: str(v) for k, v in vars(args).items()}, "wall_s": wall, "tasks": tasks}))  # fmt: skip
    print("\n".join(md))


if __name__ == "__main__":
    main()
