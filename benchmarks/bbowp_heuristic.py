"""The offline heuristic formulator against the fixed default formulation on bbowp.

    .venv/bin/python benchmarks/bbowp_heuristic.py \
        [--splits dev,heldout] [--seeds 5] [--tasks a,b] [--workers 2] [--out results.jsonl]

For every instance and seed both formulations (``formulator.heuristic`` and
``BBOWPTask.default_formulation``: every knob, full ranges, linear scales, GP-BO) are run
by ``Task.evaluate`` (the harness's re-measurement: the whole optimization in the sandbox,
the optimizer's seed the run's). Per split it prints, over seeds (each seed's mean over
the split's instances; mean and 95% t-interval over the seeds):

- ``win rate``: the share of instances where the heuristic's best value is lower than the
  default's of the same seed (a tie counts one half);
- ``scaled regret``: ``(best - reference best) / (random search's mean on the human
  formulation - reference best)`` (``reference.json``; 0: the long run's best, 1: as good
  as random search on the human space), clipped to [0, 5] so one blown-up instance cannot
  carry a mean; for each method.

Rows are appended to ``--out`` (JSONL) and a rerun skips rows already there with the same
formulation (``form``: a hash of it), so it resumes and re-runs only what changed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import multiprocessing
import statistics
from pathlib import Path
from typing import Any


def scaled_regret(value: float, task: str, ref: dict[str, Any]) -> float | None:
    """``(value - best) / (random's mean - best)``, clipped to [0, 5] (None without a reference)."""
    r = ref.get(task)
    if not r:
        return None
    best, rnd = float(r["best_value"]), float(r["method_means"]["random"])
    if not math.isfinite(value):
        return 5.0
    if rnd <= best:
        return None
    return min(5.0, max(0.0, (value - best) / (rnd - best)))


def _forms(task: Any) -> dict[str, dict[str, Any]]:
    from optiforge.agents.formulator.heuristic import heuristic_formulation

    heuristic = heuristic_formulation(task)
    heuristic.pop("rationale")
    return {"heuristic": heuristic, "default": task.default_formulation()}


def _digest(form: dict[str, Any]) -> str:
    return hashlib.sha1(json.dumps(form, sort_keys=True).encode()).hexdigest()[:12]


def _run_one(job: tuple[str, str, int, str, dict[str, Any]]) -> dict[str, Any]:
    """One formulation of one instance at one seed, run by ``Task.evaluate`` (sandboxed)."""
    from optiforge.evals.registry import get_benchmark

    name, split, seed, method, form = job
    task = next(t for t in get_benchmark("bbowp").tasks(split) if t.name == name)
    s = task.evaluate(form, seed=seed)
    return {"split": split, "task": name, "seed": seed, "method": method, "form": _digest(form),
            "value": s.value if s.passed else None, "optimizer": form["method"],
            "sandbox_s": s.metrics.get("sandbox_s")}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--splits", default="dev,heldout")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--tasks", default="")
    ap.add_argument("--out", default="bbowp_heuristic.jsonl")
    ap.add_argument("--workers", type=int, default=2, help="runs in parallel (processes)")
    args = ap.parse_args()

    from optiforge.evals.registry import get_benchmark
    from optiforge.evals.stats import mean_ci95
    from optiforge.evals.suites.bbowp import reference

    bench, ref = get_benchmark("bbowp"), reference()
    out = Path(args.out)
    done = {(r["task"], r["seed"], r["method"]): r for r in
            (json.loads(x) for x in out.read_text().splitlines() if x.strip())} if out.exists() else {}  # fmt: skip
    splits = {
        split: [t for t in bench.tasks(split) if not args.tasks or t.name in args.tasks.split(",")]
        for split in args.splits.split(",")
    }
    # seed-major: a run cut short still has every instance at the seeds it finished
    jobs = [(task, split, seed) for seed in range(args.seeds) for split, tasks in splits.items()
            for task in tasks]  # fmt: skip
    todo = [(t, sp, seed, m, f) for t, sp, seed in jobs for m, f in _forms(t).items()
            if done.get((t.name, seed, m), {}).get("form") != _digest(f)]  # fmt: skip
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(args.workers) as pool:
        for row in pool.imap(_run_one, [(t.name, sp, seed, m, f) for t, sp, seed, m, f in todo]):
            done[(row["task"], row["seed"], row["method"])] = row
            with out.open("a") as fh:
                fh.write(json.dumps(row) + "\n")
            print(json.dumps(row), flush=True)
    for split, tasks in splits.items():

        def val(t: str, seed: int, m: str) -> float:
            v = done.get((t, seed, m), {}).get("value")
            return math.inf if v is None else float(v)

        names = [t.name for t in tasks]
        wins, regs = [], {"heuristic": [], "default": []}  # type: ignore[var-annotated]
        for seed in range(args.seeds):
            w = []
            for t in names:
                h, d = val(t, seed, "heuristic"), val(t, seed, "default")
                w.append(1.0 if h < d else 0.5 if h == d else 0.0)
            wins.append(statistics.mean(w))
            for m, lst in regs.items():
                rs = [scaled_regret(val(t, seed, m), t, ref) for t in names]
                lst.append(statistics.mean(r for r in rs if r is not None))
        print(
            f"\n## {split} ({len(names)} instances, {args.seeds} seeds; mean ± 95% t-interval over seeds)"
        )
        print("| metric | heuristic | default |\n|---|---|---|")
        wm, wh = mean_ci95(wins)
        print(f"| win rate vs default | {wm:.3f} ± {wh or 0:.3f} | - |")
        cells = []
        for m in ("heuristic", "default"):
            mm, hh = mean_ci95(regs[m])
            cells.append(f"{mm:.3f} ± {hh or 0:.3f}")
        print(f"| scaled regret | {cells[0]} | {cells[1]} |")
        diffs = [a - b for a, b in zip(regs["heuristic"], regs["default"], strict=True)]
        dm, dh = mean_ci95(diffs)
        print(f"| paired regret difference (heuristic - default) | {dm:.3f} ± {dh or 0:.3f} | |")
        print(
            "\n| instance | heuristic optimizer | heuristic mean | default mean | heuristic wins |"
        )
        print("|---|---|---|---|---|")
        for t in names:
            hv = [val(t, s, "heuristic") for s in range(args.seeds)]
            dv = [val(t, s, "default") for s in range(args.seeds)]
            opt = done.get((t, 0, "heuristic"), {}).get("optimizer", "?")
            nw = sum(a < b for a, b in zip(hv, dv, strict=True))
            print(
                f"| {t} | {opt} | {statistics.mean(hv):.4g} | {statistics.mean(dv):.4g} | {nw}/{args.seeds} |"
            )


if __name__ == "__main__":
    main()
