"""The ``train`` suite's eval table: the formulator's training plans against AdamW at its
defaults and against every catalogue method tuned by random search (validation split).

For each ``--models`` entry one ``optiforge eval formulator --bench train --split SPLIT
--seeds N --model MODEL`` (``offline``: the heuristic rules; ``local``: the embedded
SmolLM2 model through llama.cpp), then per task and method the held-out score's mean and
95% t-interval over seeds, the paired difference formulator - adamw and formulator - tuned
(a negative difference: the formulator's plan scored lower, i.e. better), and the
normalized gap ``(formulator - tuned) / (adamw - tuned)`` per seed (0: as good as the
tuned reference, 1: no better than the fixed default; large when the default is already
close to tuned), with its median over task-seed pairs and win counts.

    python benchmarks/train_suite_eval.py [--split test] [--seeds 5] [--models offline,local]
        [--out runs/train_suite] [--from DIR ...]

A full run (test split, 5 seeds, offline and local) took 26 minutes on one core with the
merged catalogue (most of it `tuned` on the language model); a later model's eval runs the
formulator only and reads the references from the first one's. The catalogue is read as it is (methods added to it are tuned and offered without change).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from optiforge.evals.stats import mean_ci95

METHODS = ("formulator", "adamw", "tuned")


def run_eval(model: str, split: str, seeds: int, out: Path, baselines: bool = True,
             bench: str = "train", extra: list[str] | None = None) -> Path:  # fmt: skip
    """``baselines=False``: the formulator's rows only (``--baselines ,``); the references
    take no LLM, so a later model's table reads them from the first model's eval.
    ``extra``: more ``optiforge eval`` arguments (``--tasks``, ``--set``)."""
    cmd = [sys.executable, "-m", "optiforge.cli", "eval", "formulator", "--bench", bench,
           "--split", split, "--seeds", str(seeds), "--model", model, "--memory", "none",
           "--out", str(out)]  # fmt: skip
    if not baselines:
        cmd += ["--baselines", ","]
    cmd += extra or []
    # an existing --out is resumed: the eval skips the rows it already has
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})  # fmt: skip
    if proc.returncode not in (0, 1):
        print(proc.stdout[-3000:], proc.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"eval --model {model} exited {proc.returncode}")
    print(f"eval --model {model}: {time.perf_counter() - t0:.0f} s -> {out}", flush=True)
    return out


def _fmt(mean: float, half: float | None) -> str:
    if not math.isfinite(mean):
        return "-"
    return f"{mean:.4g}" + ("" if half is None else f" ± {half:.2g}")


def _rows(eval_dir: Path) -> list[dict[str, Any]]:
    text = (eval_dir / "results.jsonl").read_text()
    return [json.loads(x) for x in text.splitlines() if x.strip()]


def table(eval_dir: Path, reference: Path | None = None, methods: tuple[str, str, str] = METHODS,
          plan_key: str = "optimizer", what: str = "held-out score",
          chosen_label: str = "Optimizers chosen") -> list[str]:  # fmt: skip
    """The markdown table of one eval directory; the references (``methods[1:]``: adamw,
    tuned) missing there are read from ``reference`` (an eval of the same split and seeds).
    ``plan_key``: the plan's field that names the method (``optimizer``; ``rl``: ``method``)."""
    info = json.loads((eval_dir / "eval.json").read_text())
    rows = _rows(eval_dir)
    if reference is not None and reference != eval_dir:
        have = {(r["task"], r["method"], r["seed"]) for r in rows}
        rows += [r for r in _rows(reference) if r["method"] != "formulator"
                 and (r["task"], r["method"], r["seed"]) not in have]  # fmt: skip
    score: dict[tuple[str, str, int], float] = {}
    chosen: dict[str, dict[str, int]] = {}
    failed: dict[str, int] = {}
    for r in rows:
        key = (str(r["task"]), str(r["method"]), int(r["seed"]))
        v = r.get("best_score")
        score[key] = float(v) if isinstance(v, int | float) else math.inf
        if v is None:
            failed[str(r["method"])] = failed.get(str(r["method"]), 0) + 1
        opt = ((r.get("extra") or {}).get("plan") or {}).get(plan_key)
        if opt:
            c = chosen.setdefault(str(r["method"]), {})
            c[opt] = c.get(opt, 0) + 1
    tasks = sorted({k[0] for k in score})
    seeds = sorted({k[2] for k in score})
    model = info["settings"].get("model") or "offline"
    _, default, tuned = methods
    lines = [f"**{info['split']} split, {len(seeds)} seeds, formulator with `--model {model}`** "
             f"({what}, lower is better; mean ± 95% t-interval over seeds)", "",
             f"| task | metric | formulator | {default}{'' if default == 'default' else ' (default)'} | {tuned} (random search) | formulator - {default} | formulator - {tuned} | normalized gap |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    metric = {str(r["task"]): str(r.get("metric", "")) for r in rows}
    gaps_by_seed: dict[int, list[float]] = {}
    for t in tasks:
        cells = []
        for m in methods:
            vals = [score.get((t, m, s), math.inf) for s in seeds]
            fin = [v for v in vals if math.isfinite(v)]
            cells.append(_fmt(*mean_ci95(fin)) + ("" if len(fin) == len(vals) else f" ({len(vals) - len(fin)} failed)"))  # fmt: skip
        diffs = []
        for ref in methods[1:]:
            d = [score[(t, "formulator", s)] - score[(t, ref, s)] for s in seeds
                 if math.isfinite(score.get((t, "formulator", s), math.inf))
                 and math.isfinite(score.get((t, ref, s), math.inf))]  # fmt: skip
            diffs.append(_fmt(*mean_ci95(d)) if d else "-")
        gaps = []
        for s in seeds:
            f, a, b = (score.get((t, m, s), math.inf) for m in methods)
            if all(math.isfinite(x) for x in (f, a, b)) and a - b > 1e-12:
                gaps.append((f - b) / (a - b))
                gaps_by_seed.setdefault(s, []).append((f - b) / (a - b))
        lines.append(f"| {t} | {metric[t]} | {' | '.join(cells)} | {' | '.join(diffs)} | "
                     f"{_fmt(*mean_ci95(gaps)) if gaps else '-'} |")  # fmt: skip
    pairs = [(score[(t, "formulator", s)], score[(t, default, s)], score[(t, tuned, s)])
             for t in tasks for s in seeds if all((t, m, s) in score for m in methods)]  # fmt: skip
    wins = sum(f < a for f, a, _ in pairs)
    ties = sum(f <= b for f, _, b in pairs)
    all_gaps = sorted(g for gs in gaps_by_seed.values() for g in gs)
    median = all_gaps[len(all_gaps) // 2] if all_gaps else math.nan
    lines += ["", f"Over {len(pairs)} task-seed pairs: formulator better than {default} in {wins}, "
              f"at least as good as tuned in {ties}; median normalized gap {median:.3g} "
              "(0: as good as tuned; 1: as the default)."]  # fmt: skip
    lines.append(f"{chosen_label}: " + "; ".join(
        f"{m}: " + ", ".join(f"{k} x{v}" for k, v in sorted(c.items())) for m, c in sorted(chosen.items())))  # fmt: skip
    if failed:
        lines.append("Failed runs (no valid plan): " + ", ".join(f"{m} {n}" for m, n in sorted(failed.items())))  # fmt: skip
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", default="test")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--models", default="offline,local")
    ap.add_argument("--out", type=Path, default=Path("runs/train_suite"))
    ap.add_argument("--from", dest="dirs", type=Path, nargs="*", help="print existing eval dirs")
    args = ap.parse_args()
    models = [m for m in args.models.split(",") if m]
    dirs = args.dirs or [
        run_eval(m, args.split, args.seeds, args.out / f"{args.split}-{m}", baselines=i == 0)
        for i, m in enumerate(models)
    ]
    for d in dirs:
        print("\n".join(table(d, reference=dirs[0])) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
