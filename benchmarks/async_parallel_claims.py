"""Asynchronous data + pipeline parallelism with sparse averaging against the synchronous
baseline, on torch.distributed gloo with 4 local processes
(optiforge/solvers/train/async_parallel/).

Run (CPU; the 4 workers share the machine's cores; about 6 minutes for 5 seeds on the shared 2-core machine):

    OMP_NUM_THREADS=1 python benchmarks/async_parallel_claims.py --seeds 5 --out runs/async_parallel

Task: a fixed-context MLP language model (2 pipeline stages, about 33k parameters) on
word tokens of a stochastic grammar generated here; 2 data-parallel replicas of the
2-stage pipeline. Every variant gets the same model initialization, data stream (per
replica, per step), steps, batch and Adam learning-rate schedule per seed. Variants:

- ``sync``: GPipe (2 microbatches, flush every step) + all-reduce of full gradients;
- ``async``: 1F1B pipeline without flush (stage 0 staleness 1) with weight look-ahead, and
  sparse averaging every 4 steps of 10% of each stage's coordinates, EMA correction;
- ablations of ``async``: no averaging (``fraction=0``), too-sparse averaging (1%), no EMA
  correction (the received average applied at once: ``beta=0, gamma=1``); denser
  averaging (25% every 2 steps, all coordinates every 4 steps): the bytes/loss trade-off;
- deeper asynchrony: 4 and 8 minibatches in flight (staleness 3 and 7) with and without
  look-ahead.

Measured: held-out cross-entropy of each replica's model (nats/token, mean of the two
replicas), bytes sent by all ranks (pipeline and data-parallel, deterministic), the
staleness histogram of stage 0, wall time of the training loop (the machine is shared: a
rough ratio only). Intervals: 95% Student t over seeds of the per-seed value and of the
per-seed difference against ``sync`` (paired: same initialization and data).

Writes OUT/summary.json, OUT/summary.md and OUT/curves.png.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from scipy import stats

from optiforge.solvers.train.async_parallel import Config, RunResult, run

VARIANTS: dict[str, dict[str, Any]] = {
    "sync": {"mode": "sync"},
    "async": {},
    "async, no averaging": {"fraction": 0.0},
    "async, too sparse (1%)": {"fraction": 0.01},
    "async, no EMA correction": {"beta": 0.0, "gamma": 1.0},
    "async, 25% every 2 steps": {"fraction": 0.25, "avg_every": 2},
    "async, all coordinates every 4 steps": {"fraction": 1.0},
    "async, 4 in flight": {"in_flight": 4},
    "async, 4 in flight, no look-ahead": {"in_flight": 4, "lookahead": False},
    "async, 8 in flight": {"in_flight": 8},
    "async, 8 in flight, no look-ahead": {"in_flight": 8, "lookahead": False},
}


REFERENCE = {
    "async, 4 in flight, no look-ahead": "async, 4 in flight",
    "async, 8 in flight, no look-ahead": "async, 8 in flight",
}
"""The variant an ablation is paired with (``async`` when not listed)."""


def t_interval(xs: list[float]) -> tuple[float, float, float]:
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, math.nan, math.nan
    h = stats.t.ppf(0.975, len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
    return m, m - h, m + h


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--lr", type=float, default=1e-2)
    ap.add_argument("--out", type=Path, default=Path("runs/async_parallel"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    base = Config(steps=args.steps, lr=args.lr)
    per: dict[str, list[RunResult]] = {k: [] for k in VARIANTS}
    t0 = time.time()
    for seed in range(args.seeds):
        jobs = [replace(base, seed=seed, data_seed=seed, **kw) for kw in VARIANTS.values()]
        for name, res in zip(VARIANTS, run(jobs, timeout_s=900), strict=True):
            per[name].append(res)
        print(f"seed {seed} done ({time.time() - t0:.0f} s)", flush=True)

    sync = per["sync"]
    rows = []
    summary: dict[str, Any] = {"config": asdict(base), "seeds": args.seeds, "variants": {}}
    for name, rs in per.items():
        val = [r.val_mean for r in rs]
        diff = [r.val_mean - s.val_mean for r, s in zip(rs, sync, strict=True)]
        ref = REFERENCE.get(name, "async")
        diff_ref = [r.val_mean - s.val_mean for r, s in zip(rs, per[ref], strict=True)]
        st0 = rs[0].staleness[0]
        mean_st = sum(k * v for k, v in st0.items()) / sum(st0.values())
        row = {
            "val": t_interval(val),
            "diff_vs_sync": t_interval(diff),
            "reference": ref,
            "diff_vs_reference": t_interval(diff_ref),
            "bytes_pipeline": rs[0].bytes_pipeline,
            "bytes_dp": rs[0].bytes_dp,
            "bytes_total": rs[0].bytes_total,
            "dp_factor": sync[0].bytes_dp / rs[0].bytes_dp if rs[0].bytes_dp else math.inf,
            "total_factor": sync[0].bytes_total / rs[0].bytes_total,
            "staleness_stage0": st0,
            "staleness_stage1": rs[0].staleness[1],
            "mean_staleness_stage0": mean_st,
            "dp_delay": rs[0].dp_delay,
            "wall_s": statistics.median(r.wall_s for r in rs),
            "bytes_same_every_seed": len({(r.bytes_pipeline, r.bytes_dp) for r in rs}) == 1,
            "per_seed_val": val,
        }
        summary["variants"][name] = row
        rows.append((name, row))

    def fmt(ci: tuple[float, float, float], sign: bool = False) -> str:
        m, lo, hi = ci
        f = "{:+.4f}" if sign else "{:.4f}"
        return f"{f.format(m)} [{f.format(lo)}, {f.format(hi)}]"

    lines = [
        f"{args.seeds} seeds, {args.steps} steps, batch 32 per replica, Adam lr {args.lr} (cosine to 10%); 4 gloo processes",  # fmt: skip
        "",
        "| variant | held-out loss | vs sync (paired) | vs its reference (paired) | DP bytes | total bytes | DP bytes factor | total factor | stage-0 staleness (gap: updates) | wall s |",  # fmt: skip
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, row in rows:
        lines.append(
            f"| {name} | {fmt(row['val'])} | {fmt(row['diff_vs_sync'], True)} | "
            + (
                f"{fmt(row['diff_vs_reference'], True)} vs {row['reference']}"
                if name not in ("sync", "async")
                else ""
            )  # fmt: skip
            + f" | {row['bytes_dp']:,} | {row['bytes_total']:,} | "  # fmt: skip
            f"{row['dp_factor']:.1f}x | {row['total_factor']:.2f}x | {row['staleness_stage0']} | {row['wall_s']:.1f} |"  # fmt: skip
        )
    lines.append("")
    lines.append(f"data-parallel exchange delay (steps: count) of async: {per['async'][0].dp_delay}; stage 1 staleness: {per['async'][0].staleness[1]}")  # fmt: skip
    text = "\n".join(lines)
    print(text)
    (args.out / "summary.md").write_text(text + "\n")
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4))
        for name in ("sync", "async", "async, no averaging", "async, 8 in flight"):
            curve = [statistics.fmean(c) for c in zip(*(r.curve for r in per[name]), strict=True)]
            k = 20
            smooth = [statistics.fmean(curve[max(0, i - k) : i + 1]) for i in range(len(curve))]
            ax.plot(smooth, label=name)
        ax.set_xlabel("step")
        ax.set_ylabel("training loss (mean over seeds, smoothed)")
        ax.legend()
        fig.tight_layout()
        fig.savefig(args.out / "curves.png", dpi=100)
    except ImportError:
        pass


if __name__ == "__main__":
    main()
