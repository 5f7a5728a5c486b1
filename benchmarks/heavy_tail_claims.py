"""SGD / stochastic mirror descent under heavy-tailed noise (issue 44, item 3): fitted
log-log slopes of the mean error against the horizon T, for several tail exponents p,
against the exponents of our derivation (``optiforge/solvers/train/heavy_tail.py``).

    python benchmarks/heavy_tail_claims.py                 # full size, a few CPU-minutes
    python benchmarks/heavy_tail_claims.py --quick         # smaller
    python benchmarks/heavy_tail_claims.py --part nonconvex --out runs/heavy_tail

Each row: a problem, a method, p; the noise has tail index p + 0.1 and E|xi_i|^p = 1;
R independent runs per horizon T (vectorised: one (R, d) parameter), a fresh seed per T.
``slope``: least-squares slope of log E[error] over log T with a 95% percentile
bootstrap interval (runs resampled at each T); ``median``: the same fit on the median run;
``last pair``: the slope of the mean between the two largest T (does the fit approach
``pred`` as T grows?); ``pred``: the predicted exponent. Problems (``heavy_tail_problems.py``): ``simplex``
(||x - x*||_1 on the simplex, entropic SMD), ``unbounded`` (||x - x*||_1 on R^8, no
projection: power map psi = 1/q sum |x_i|^q with q = p/(p-1), the 1/2||x||_q^2 map,
Euclidean SGD, clipped SGD), ``nonconvex`` (a smooth Lipschitz nonconvex robust fit,
error sqrt of the mean over t of ||grad f(w_t)||^2: SGD, clipped SGD with the minimax
schedule, SGD with the schedule tuned for p = 2, SGD with a constant step not scaled with T).
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass, field
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from optiforge.solvers.train.heavy_tail import predicted_exponent  # noqa: E402
from optiforge.solvers.train.heavy_tail_problems import (  # noqa: E402
    BatchProblem,
    L1Unbounded,
    RippleRegression,
    SimplexL1,
    fit_slope,
    run,
    slope_with_interval,
)

torch.set_num_threads(1)
PS = [1.25, 1.5, 1.75, 2.0]


@dataclass
class Part:
    name: str
    problem: BatchProblem
    horizons: list[int]
    runs: int
    methods: dict[str, dict[str, Any]]
    clipped_pred: set[str] = field(default_factory=set)


def parts(quick: bool) -> list[Part]:
    k = 2 if quick else 1
    return [
        Part(
            "simplex",
            SimplexL1(),
            [128, 512, 2048] if quick else [128, 512, 2048, 8192],
            2000 // k,
            {
                "entropic, eta=lr T^(-1/p)": {"map": "entropic", "lr": 0.5},
                "entropic, eta_t=lr t^(-1/p)": {
                    "map": "entropic",
                    "lr": 0.5,
                    "schedule": "decreasing",
                },
                "entropic, constant lr (not scaled)": {
                    "map": "entropic",
                    "lr": 0.5,
                    "schedule": "constant",
                },
            },
        ),
        Part(
            "unbounded",
            L1Unbounded(),
            [256, 1024, 4096],
            4000 // k,
            {
                "power map q=p/(p-1)": {"map": "power", "lr": 4.0},
                "pnorm map 1/2||x||_q^2": {"map": "pnorm", "lr": 4.0},
                "euclidean (SGD)": {"map": "euclidean", "lr": 4.0},
                "clipped SGD": {"method": "clipped", "lr": 4.0, "clip": 1.0},
            },
        ),
        Part(
            "nonconvex",
            RippleRegression(n=4),
            [256, 1024, 4096] if quick else [256, 1024, 4096, 16384],
            1000 // k,
            {
                "SGD, eta=lr T^(-1/p)": {"lr": 0.15, "ref_horizon": 256},
                "clipped SGD (minimax schedule)": {
                    "method": "clipped",
                    "lr": 0.15,
                    "clip": 2.0,
                    "ref_horizon": 256,
                },
                "SGD, schedule for p=2": {"lr": 0.15, "ref_horizon": 256, "schedule_p": 2.0},
                "SGD, constant lr (not scaled)": {"lr": 0.15, "schedule": "constant"},
            },
            clipped_pred={"clipped SGD (minimax schedule)"},
        ),
    ]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--part", choices=["simplex", "unbounded", "nonconvex"], default=None)
    ap.add_argument("--out", default="runs/heavy_tail")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    results: dict[tuple[str, str, float], tuple[list[int], list[float]]] = {}
    t_start = time.time()
    for part in parts(args.quick):
        if args.part and part.name != args.part:
            continue
        sq = part.problem.setting == "nonconvex"
        print(f"\n## {part.name}: T = {part.horizons}, {part.runs} runs per T")
        cols = "method | p | pred | slope of mean [95% bootstrap] | last pair | slope of median | mean error at T_max"
        print(f"| {cols} |\n" + "|---" * 7 + "|")
        for mname, cfg in part.methods.items():
            for p in PS:
                errs = [run(part.problem, p=p, horizon=t, runs=part.runs, seed=1000 * i + 17, **cfg)
                        for i, t in enumerate(part.horizons)]  # fmt: skip
                s, lo, hi = slope_with_interval(part.horizons, errs, sqrt=sq, boot=1000)
                pw = 0.5 if sq else 1.0
                med = fit_slope(part.horizons, [float(e.median()) ** pw for e in errs])
                means = [float(e.mean()) ** pw for e in errs]
                pred = predicted_exponent(
                    p, part.problem.setting, clipped=mname in part.clipped_pred
                )
                results[(part.name, mname, p)] = (part.horizons, means)
                last = fit_slope(part.horizons[-2:], means[-2:])
                print(f"| {mname} | {p} | {pred:.3f} | {s:.3f} [{lo:.3f}, {hi:.3f}] | {last:.3f} | {med:.3f} | {means[-1]:.4g} |",
                      flush=True)  # fmt: skip
    print(f"\n(total {time.time() - t_start:.0f} s)")
    plot(results, args.out)


def plot(results: dict[tuple[str, str, float], tuple[list[int], list[float]]], out: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # pragma: no cover
        return
    names = sorted({k[0] for k in results})
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 4), squeeze=False)
    colors = dict(zip(PS, ["tab:red", "tab:orange", "tab:green", "tab:blue"], strict=True))
    styles = ["-", "--", ":", "-."]
    for ax, name in zip(axes[0], names, strict=True):
        methods = list(dict.fromkeys(m for (pn, m, _p) in results if pn == name))
        for (pn, m, p), (ts, ms) in results.items():
            if pn == name:  # colour: p; line style: method
                ax.loglog(
                    ts,
                    ms,
                    styles[methods.index(m) % 4],
                    color=colors[p],
                    marker="o",
                    ms=3,
                    label=f"{m}, p={p}",
                )
        ax.set_title(name)
        ax.set_xlabel("T")
        ax.legend(fontsize=5)
    fig.tight_layout()
    path = os.path.join(out, "heavy_tail_slopes.png")
    fig.savefig(path, dpi=120)
    print(f"plot: {path}")


if __name__ == "__main__":
    main()
