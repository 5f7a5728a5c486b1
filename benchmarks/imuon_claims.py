"""iMuon's claims at full size (optiforge/solvers/train/imuon/).

Run (CPU, one core, about 5 minutes):

    OMP_NUM_THREADS=1 python benchmarks/imuon_claims.py --seeds 5 --out runs/imuon_claims

A. Low-rank matrix sensing, deterministic (full gradients): 40 x 30, rank 4, 1120 Gaussian
   measurements, truth singular values 1 ... 1/10, spectral initialization ``W0``. The factor
   split of ``W0`` is ``L = U0 S0^1/2 B``, ``R = V0 S0^1/2 B^-T`` with the ``4 x 4`` mixing
   ``B`` conditioned ``kappa`` in {1, 10, 100, 1000}. Methods: ``imuon`` (spectral norm,
   ``scale="dual"``: steepest descent in the intrinsic norm, started from ``P_r(L R^T)``),
   ``muon-factors`` (Muon on ``L``, ``R``, same scale), geoopt's ``RiemannianSGD`` and
   ``RiemannianAdam`` on our ``FixedRank`` manifold (no split: started from ``W0``). Each
   method's step size is tuned per ``kappa`` on a separate seed (grid; the fewest steps to
   1e-8, then the lowest final error). Reported over seeds: steps to a relative error of
   1e-8 (runs that never reach it count as ``steps``; how many reached it) and the final
   ``log10`` relative error.
B. The same, stochastic: batches of 64 measurements, momentum 0.5 (transported), the same
   dual scaling, constant lr (RSGD with momentum 0.5, RAdam). B': Muon's recipe, momentum
   0.9, normalized steps (``scale="lmo"``), lr decaying linearly to 0 (RSGD momentum 0.9 and
   RAdam with the same decay). The measurements are noiseless, so stochastic gradients
   vanish at the solution (interpolation) and the dual-scaled runs converge linearly.
C. Subspace learning on Grassmann: top-5 eigenspace of a 100 x 100 covariance (top
   eigenvalues 15 ... 1.5, the rest in [0, 1]); deterministic (``imuon`` dual-scaled vs
   RSGD vs RAdam) and stochastic (batches of 32 samples, momentum, linear decay); the
   largest principal angle at the end.
D. Staying on the manifold: the largest ``|U^T U - I|``, ``|V^T V - I|`` of iMuon's carried
   factors over every run of A and B and of 2000 float32 steps, and the smallest singular
   value (rank exactly r).

Intervals: 95% Student t over seeds. Writes OUT/summary.json, OUT/summary.md and
OUT/curves.png (relative error vs step, A and B, seed 0, kappa = 1 and 1000).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy import stats

from optiforge.solvers.train.imuon import IMuon
from optiforge.solvers.train.imuon.problems import (
    Run,
    Sensing,
    make_pca,
    make_sensing,
    run_factor_muon,
    run_geoopt,
    run_imuon,
    run_pca,
    steps_to,
)

KAPPAS = (1.0, 10.0, 100.0, 1000.0)
TOL = 1e-8
TUNE_SEED = 1000


def ci(xs: list[float]) -> tuple[float, float, float]:
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, m, m
    h = stats.t.ppf(0.975, len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
    return m, m - h, m + h


def fmt(xs: list[float], digits: int = 1) -> str:
    m, lo, hi = ci(xs)
    return f"{m:.{digits}f} [{lo:.{digits}f}, {hi:.{digits}f}]"


def sensing(seed: int) -> Sensing:
    return make_sensing(seed, m=40, n=30, rank=4, oversample=4.0, cond=10.0)


def _w(p: Sensing, kappa: float, seed: int) -> torch.Tensor:
    left, right = p.split(kappa, seed)
    return left @ right.T


def score(errs: list[float], steps: int) -> tuple[int, float]:
    s = steps_to(errs, TOL)
    return (steps + 1 if s is None else s), (math.log10(errs[-1]) if math.isfinite(errs[-1]) and errs[-1] > 0 else 99.0)  # fmt: skip


def tune(make: Callable[[float, Sensing], Run], grid: np.ndarray, steps: int) -> float:
    p = sensing(TUNE_SEED)
    scored = [(score(make(float(lr), p).errs, steps), float(lr)) for lr in grid]
    return min(scored)[1]


def part_a(seeds: int, steps: int, recipe: str, log: Callable[[str], None]) -> dict[str, Any]:
    """``recipe``: ``det`` (full gradients, dual-scaled), ``sto`` (batches of 64, momentum 0.5,
    dual-scaled, constant lr) or ``sto-lmo`` (batches of 64, momentum 0.9, normalized steps,
    lr decaying linearly to 0)."""
    kw: dict[str, Any] = {
        "det": {},
        "sto": dict(momentum=0.5, batch=64),
        "sto-lmo": dict(momentum=0.9, batch=64, decay=True),
    }[recipe]
    im_scale = "lmo" if recipe == "sto-lmo" else "dual"
    methods: dict[str, tuple[np.ndarray, Callable[[float, Sensing, float, int], Run], bool]] = {
        "imuon": (
            np.geomspace(3e-4, 0.3, 16) if recipe == "sto-lmo" else np.geomspace(0.005, 0.2, 13),
            lambda lr, p, k, s: run_imuon(
                p, lr, steps, w_init=_w(p, k, s), scale=im_scale, seed=s, **kw
            ),
            True,
        ),  # fmt: skip
        "muon-factors": (
            np.geomspace(1e-4, 1.0, 17),
            lambda lr, p, k, s: run_factor_muon(
                p, lr, steps, kappa=k, split_seed=s, scale=im_scale, seed=s, **kw
            ),
            True,
        ),  # fmt: skip
        "geoopt RSGD": (
            np.geomspace(0.01, 3.0, 11),
            lambda lr, p, k, s: run_geoopt(p, lr, steps, method="rsgd", seed=s, **kw),
            False,
        ),  # fmt: skip
        "geoopt RAdam": (
            np.geomspace(1e-3, 1.0, 11),
            lambda lr, p, k, s: run_geoopt(
                p,
                lr,
                steps,
                method="radam",
                seed=s,
                **{k2: v for k2, v in kw.items() if k2 != "momentum"},
            ),
            False,
        ),  # fmt: skip
    }
    out: dict[str, Any] = {}
    curves: dict[str, list[float]] = {}
    orth = 0.0
    for name, (grid, make, split_dependent) in methods.items():
        for kappa in KAPPAS if split_dependent else (1.0,):
            lr = tune(
                lambda lr, p, make=make, kappa=kappa: make(lr, p, kappa, TUNE_SEED), grid, steps
            )  # type: ignore[misc]
            st, fe = [], []
            for seed in range(seeds):
                r = make(lr, sensing(seed), kappa, seed)
                s, e = score(r.errs, steps)
                st.append(float(s))
                fe.append(e)
                if isinstance(r.opt, IMuon):
                    u, sv, v = r.opt.factors(r.opt.param_groups[0]["params"][0])
                    eye = torch.eye(u.shape[1], dtype=u.dtype)
                    orth = max(orth, float((u.T @ u - eye).abs().max()), float((v.T @ v - eye).abs().max()))  # fmt: skip
                if seed == 0 and kappa in (1.0, 1000.0):
                    curves[f"{name} kappa={kappa:g}"] = r.errs
            key = name if not split_dependent else f"{name} kappa={kappa:g}"
            reached = sum(s <= steps for s in st)
            out[key] = dict(lr=lr, steps_to_tol=st, log10_final=fe, reached=reached)
            kap = f"{kappa:g}" if split_dependent else "any (no split)"
            log(f"| {name} | {kap} | {lr:.3g} | {fmt(st, 0)} ({reached}/{seeds}) | {fmt(fe, 2)} |")
    out["_curves"] = curves
    out["_orthonormality_error"] = orth
    return out


def part_c(seeds: int, steps: int, stochastic: bool, log: Callable[[str], None]) -> dict[str, Any]:
    kw: dict[str, Any] = dict(batch=32, decay=True) if stochastic else {}
    grids = {
        "imuon": np.geomspace(0.003, 0.3, 9) if stochastic else np.geomspace(0.005, 0.1, 9),
        "geoopt RSGD": np.geomspace(0.003, 1.0, 11),
        "geoopt RAdam": np.geomspace(1e-3, 1.0, 11),
    }
    out: dict[str, Any] = {}
    for name, grid in grids.items():
        method = {"imuon": "imuon", "geoopt RSGD": "rsgd", "geoopt RAdam": "radam"}[name]
        extra: dict[str, Any] = {}
        if method != "radam" and stochastic:
            extra["momentum"] = 0.9
        if method == "imuon":
            extra["scale"] = "lmo" if stochastic else "dual"

        def final(
            lr: float, seed: int, method: str = method, extra: dict[str, Any] = extra
        ) -> float:
            a, _ = run_pca(make_pca(seed, n=100, cond=10.0), lr, steps, method=method, seed=seed, **kw, **extra)  # fmt: skip
            return math.log10(max(a[-1], 1e-16))

        lr = min((final(float(v), TUNE_SEED), float(v)) for v in grid)[1]
        fe = [final(lr, s) for s in range(seeds)]
        out[name] = dict(lr=lr, log10_angle=fe)
        log(f"| {name} | {lr:.3g} | {fmt(fe, 2)} |")
    return out


def part_d(steps: int) -> dict[str, float]:
    """2000 float32 stochastic iMuon steps on a 200 x 150 rank-8 point."""
    import geoopt

    from optiforge.solvers.train.imuon import FixedRank

    g = torch.Generator().manual_seed(0)
    man = FixedRank((200, 150), 8)
    x = geoopt.ManifoldParameter(man.random(dtype=torch.float32), manifold=man)
    opt = IMuon([x], lr=0.02, momentum=0.9)
    target = man.random(dtype=torch.float32)
    for _ in range(steps):
        opt.zero_grad()
        ((x - target - 0.3 * torch.randn(200, 150, generator=g)) ** 2).sum().backward()
        opt.step()
    u, s, v = opt.factors(x)
    eye = torch.eye(8)
    return dict(
        orthonormality_error_f32=max(
            float((u.T @ u - eye).abs().max()), float((v.T @ v - eye).abs().max())
        ),  # fmt: skip
        sigma_min_f32=float(s.min()),
        rank_f32=int(torch.linalg.matrix_rank(x.detach())),
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--out", type=Path, default=Path("runs/imuon_claims"))
    args = ap.parse_args()
    torch.set_default_dtype(torch.float64)
    args.out.mkdir(parents=True, exist_ok=True)
    lines: list[str] = []

    def log(s: str) -> None:
        print(s, flush=True)
        lines.append(s)

    t0 = time.process_time()
    summary: dict[str, Any] = {}
    head = "| method | factor split kappa | lr (tuned) | steps to 1e-8 | log10 final rel. error |\n|---|---|---|---|---|"  # fmt: skip
    log(f"\n## A. matrix sensing, deterministic, {args.steps} steps, {args.seeds} seeds\n\n{head}")
    summary["A"] = part_a(args.seeds, args.steps, "det", log)
    log(f"\n## B. matrix sensing, stochastic (batch 64, momentum 0.5, dual-scaled), {2 * args.steps} steps\n\n{head}")  # fmt: skip
    summary["B"] = part_a(args.seeds, 2 * args.steps, "sto", log)
    log(f"\n## B'. the same, momentum 0.9, normalized steps, lr decaying linearly to 0, {2 * args.steps} steps\n\n{head}")  # fmt: skip
    summary["B_lmo"] = part_a(args.seeds, 2 * args.steps, "sto-lmo", log)
    head_c = "| method | lr (tuned) | log10 largest principal angle |\n|---|---|---|"
    log(f"\n## C. Grassmann top-5 PCA (100 x 100), deterministic, {args.steps} steps\n\n{head_c}")
    summary["C_det"] = part_c(args.seeds, args.steps, False, log)
    log(f"\n## C'. the same, stochastic (batch 32), {2 * args.steps} steps\n\n{head_c}")
    summary["C_sto"] = part_c(args.seeds, 2 * args.steps, True, log)
    summary["D"] = part_d(2000)
    summary["D"]["orthonormality_error_f64_A_B"] = max(summary[k]["_orthonormality_error"] for k in ("A", "B", "B_lmo"))  # fmt: skip
    log(f"\n## D. on the manifold\n\n{json.dumps(summary['D'])}")
    log(f"\nCPU seconds: {time.process_time() - t0:.0f}")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for ax, part in zip(axes, ("A", "B"), strict=True):
        for name, errs in summary[part]["_curves"].items():
            ax.semilogy([max(e, 1e-16) for e in errs], label=name)
        ax.set_xlabel("step")
        ax.set_ylabel("relative error")
        ax.set_title({"A": "deterministic", "B": "stochastic"}[part])
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.out / "curves.png", dpi=120)
    for part in ("A", "B", "B_lmo"):
        summary[part].pop("_curves")
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    (args.out / "summary.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
