"""Nullspace-perturbation matrix completion: the claims at benchmark size
(optiforge/solvers/structured/nullspace_mc.py).

Run (CPU, one core, about 5 minutes):

    OMP_NUM_THREADS=1 python benchmarks/nullspace_mc_claims.py --seeds 5 --out runs/nullspace_mc

A. Error vs eps: 30 x 30, rank 2, p = 0.5, incoherent (coherence 0) and coherent
   (coherence 1: row/column weights i^-1), eps in {0.1, 0.03, 0.01, 0.003, 0.001}, k = r,
   4000 steps; per seed the slope of log(rel. error) on log(eps); mean slope and its 95%
   t-interval over seeds.
B. Success-rate curves (success: relative Frobenius error < 2e-2) over the sampling rate
   p in {0.2, 0.3, 0.4, 0.5, 0.6} and rank r in {1, 2, 3}, 30 x 30, coherent (coherence 1)
   by default, 8000 steps each. Methods:
     nullspace       ours: surrogate with eps = 1e-3, k = r, small init (alpha = 1e-3)
     nullspace-k3r   ours over-parameterized: k = 3 r, alpha = 1e-5
     smallinit-eps0  ablation: the same solver with eps = 0 (the completion loss itself)
     plain-gd        factorized GD on the completion loss, k = r, random init at M's scale
   Success rate per cell with a 95% t-interval over seeds.

Writes OUT/summary.json, OUT/summary.md and OUT/success.png (success rate vs p, one panel
per rank).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from optiforge.solvers.structured.nullspace_mc import (
    complete,
    make_problem,
    plain_factorized_gd,
    rel_error,
)

SUCCESS = 2e-2
N = 30


def tint(xs: list[float]) -> tuple[float, float]:
    """Mean and 95% Student-t half-width."""
    a = np.asarray(xs, dtype=float)
    if len(a) < 2:
        return float(a.mean()), math.nan
    h = float(stats.t.ppf(0.975, len(a) - 1) * a.std(ddof=1) / math.sqrt(len(a)))
    return float(a.mean()), h


Method = Callable[[np.ndarray, np.ndarray, int, int], np.ndarray]

METHODS: dict[str, Method] = {
    "nullspace": lambda M, mk, r, s: complete(M, mk, r, eps=1e-3, max_iter=8000, seed=s).X,
    "nullspace-k3r": lambda M, mk, r, s: (
        complete(M, mk, r, eps=1e-3, k=3 * r, alpha=1e-5, max_iter=8000, seed=s).X
    ),
    "smallinit-eps0": lambda M, mk, r, s: complete(M, mk, r, eps=0.0, max_iter=8000, seed=s).X,
    "plain-gd": lambda M, mk, r, s: plain_factorized_gd(M, mk, r, max_iter=8000, seed=s).X,
}


def part_a(seeds: int) -> dict[str, Any]:
    epss = np.array([0.1, 0.03, 0.01, 0.003, 0.001])
    out: dict[str, Any] = {}
    for coh in (0.0, 1.0):
        slopes, errs_all = [], []
        for s in range(seeds):
            M, mask = make_problem(N, N, 2, 0.5, coherence=coh, seed=s)
            errs = [
                rel_error(complete(M, mask, 2, eps=float(e), max_iter=4000, seed=s).X, M)
                for e in epss
            ]
            errs_all.append(errs)
            slopes.append(float(np.polyfit(np.log(epss), np.log(errs), 1)[0]))
        m, h = tint(slopes)
        med = np.median(np.array(errs_all), axis=0).tolist()
        out[f"coherence={coh}"] = {
            "eps": epss.tolist(),
            "median_rel_error": med,
            "slopes": slopes,
            "slope_mean": m,
            "slope_ci95": h,
        }
        print(
            f"A coherence={coh}: slope {m:.3f} +- {h:.3f}; median err by eps "
            + ", ".join(f"{e:g}:{v:.2e}" for e, v in zip(epss, med, strict=True)),
            flush=True,
        )
    return out


def part_b(seeds: int, coherence: float) -> dict[str, Any]:
    ps = [0.2, 0.3, 0.4, 0.5, 0.6]
    ranks = [1, 2, 3]
    res: dict[str, Any] = {}
    for r in ranks:
        for p in ps:
            cell: dict[str, list[float]] = {k: [] for k in METHODS}
            for s in range(seeds):
                M, mask = make_problem(N, N, r, p, coherence=coherence, seed=1000 * r + s)
                for name, f in METHODS.items():
                    cell[name].append(float(rel_error(f(M, mask, r, s), M) < SUCCESS))
            res[f"r={r},p={p}"] = {k: tint(v) for k, v in cell.items()}
            print(
                f"B r={r} p={p}: " + "  ".join(f"{k} {tint(v)[0]:.2f}" for k, v in cell.items()),
                flush=True,
            )
    return {"ps": ps, "ranks": ranks, "coherence": coherence, "cells": res}


def write(out: Path, a: dict[str, Any], b: dict[str, Any], seeds: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps({"A": a, "B": b, "seeds": seeds}, indent=1))
    lines = [
        f"# nullspace_mc claims ({seeds} seeds, 95% t-intervals)",
        "",
        "## A. error vs eps (30x30, rank 2, p=0.5)",
        "",
        "| coherence | slope | median rel. error at eps = 0.1 ... 0.001 |",
        "|---|---|---|",
    ]
    for k, v in a.items():
        lines.append(
            f"| {k} | {v['slope_mean']:.3f} +- {v['slope_ci95']:.3f} | "
            + ", ".join(f"{x:.2e}" for x in v["median_rel_error"])
            + " |"
        )
    lines += [
        "",
        f"## B. success rate (err < {SUCCESS}), coherence {b['coherence']}",
        "",
        "| r | p | " + " | ".join(METHODS) + " |",
        "|---|---|" + "---|" * len(METHODS),
    ]
    for r in b["ranks"]:
        for p in b["ps"]:
            c = b["cells"][f"r={r},p={p}"]
            lines.append(
                f"| {r} | {p} | "
                + " | ".join(f"{c[k][0]:.2f} +- {c[k][1]:.2f}" for k in METHODS)
                + " |"
            )
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, len(b["ranks"]), figsize=(4 * len(b["ranks"]), 3.2), sharey=True)
    for ax, r in zip(np.atleast_1d(axes), b["ranks"], strict=True):
        for k in METHODS:
            ys = [b["cells"][f"r={r},p={p}"][k][0] for p in b["ps"]]
            dashed = k == "smallinit-eps0"  # drawn dashed: it coincides with nullspace
            ax.plot(b["ps"], ys, marker="x" if dashed else "o", ls="--" if dashed else "-", label=k)
        ax.set_title(f"rank {r}, coherence {b['coherence']}")
        ax.set_xlabel("sampling rate p")
    np.atleast_1d(axes)[0].set_ylabel(f"success rate (err < {SUCCESS})")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "success.png", dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--coherence", type=float, default=1.0)
    ap.add_argument("--out", type=Path, default=Path("runs/nullspace_mc"))
    args = ap.parse_args()
    a = part_a(args.seeds)
    b = part_b(args.seeds, args.coherence)
    write(args.out, a, b, args.seeds)


if __name__ == "__main__":
    main()
