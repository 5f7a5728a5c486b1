"""The claims of rank-one tensor recovery on the Segre manifold (issue 45, item 2), measured.

Methods (``optiforge.solvers.structured.segre``): RGN and RGD (Cauchy step) on the Segre
manifold, projected gradient (ambient Cauchy step + rank-one HOSVD), ALS (ours for
regression, tensorly's ``parafac(rank=1)`` for tensor PCA).

1. Scalar-on-tensor regression, y_i = <A_i, X*> + sigma eps_i, A_i iid N(0, 1/m) entries,
   |X*| = 1, local start (truth + a random tensor of 1.5x its norm, retracted: error ~0.3): fitted order and linear rate
   noise free; iterations to 1.1x the statistical floor at each sigma; the floor against sigma.
2. RGN's linear phase: its rate toward the estimate X_hat after the quadratic phase, vs sigma.
3. Spectral start (no knowledge of X*): fraction of seeds that reach the floor.
4. Tensor PCA, T = lam u (x) v (x) w + sigma Z: the same measures (RGD and projected gradient
   at a fixed step 0.5, since their Cauchy step is 1 there and RGD is then RGN).

Seeds 0..S-1, 95% t-intervals. Plots (error per iteration, log scale) under --out.

    python benchmarks/segre_claims.py --out runs/segre            # ~2 min on one core
    python benchmarks/segre_claims.py --quick
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from optiforge.evals.stats import mean_ci95
from optiforge.solvers.structured.segre import (
    fit_linear_rate,
    fit_order,
    gaussian_measurements,
    perturb,
    random_rank_one,
    solve_rank_one,
    spectral_init,
)

METHODS = ("rgn", "rgd", "als", "pgd")
START = 1.5  # relative size of the perturbation of X* (then retracted): start error ~0.3
ITERS = {"rgn": 20, "rgd": 300, "als": 300, "pgd": 1000}


def ci(xs: list[float] | np.ndarray, fmt: str = "{:.3g}") -> str:
    m, h = mean_ci95([float(v) for v in xs])
    return fmt.format(m) + (f" [{fmt.format(m - h)}, {fmt.format(m + h)}]" if h is not None else "")


def iters_to(errors: np.ndarray, target: float) -> int | None:
    idx = np.flatnonzero(errors <= target)
    return int(idx[0]) if idx.size else None


def safe(f, *args: object) -> float:  # type: ignore[no-untyped-def]
    try:
        return float(f(*args))
    except Exception:
        return float("nan")


def regression(
    shape: tuple[int, ...], m: int, seeds: int, sigmas: list[float], curves: dict
) -> None:  # type: ignore[type-arg]
    d = 1 + sum(n - 1 for n in shape)
    print(
        f"\n## Regression, shape {shape} (N={int(np.prod(shape))}, d={d}), m={m}, {seeds} seeds, local start"
    )
    rows: dict[str, dict[str, list[float]]] = {k: {} for k in METHODS}
    floors: dict[float, list[float]] = {s: [] for s in sigmas}
    per_iter_ms: dict[str, list[float]] = {k: [] for k in METHODS}
    rgn_rates: dict[float, list[float]] = {s: [] for s in (1e-3, 1e-2, 3e-2)}
    spectral_ok: dict[str, int] = dict.fromkeys(METHODS, 0)
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        x = random_rank_one(shape, 1.0, rng)
        a, y0 = gaussian_measurements(x, m, 0.0, rng)
        z = rng.standard_normal(m)
        x0 = perturb(x, START, rng)
        for meth in METHODS:
            t0 = time.perf_counter()
            e = solve_rank_one(y0, a, method=meth, x0=x0, n_iter=ITERS[meth], truth=x).errors  # type: ignore[arg-type]
            per_iter_ms[meth].append(1e3 * (time.perf_counter() - t0) / ITERS[meth])
            rows[meth].setdefault("order", []).append(safe(fit_order, e, 1e-14, 0.9))
            rows[meth].setdefault("rate", []).append(
                float("nan") if meth == "rgn" else safe(fit_linear_rate, e, 1e-10, 1e-2)
            )
            if seed == 0:
                curves[f"regression sigma=0 {meth}"] = e
        for s in sigmas:
            y = y0 + s * z
            fl = solve_rank_one(y, a, method="rgn", x0=x0, n_iter=40, truth=x).errors[-1]
            floors[s].append(fl)
            for meth in METHODS:
                e = solve_rank_one(y, a, method=meth, x0=x0, n_iter=ITERS[meth], truth=x).errors  # type: ignore[arg-type]
                it = iters_to(e, 1.1 * fl)
                rows[meth].setdefault(f"it{s:g}", []).append(float("nan") if it is None else it)
                if seed == 0 and s == sigmas[len(sigmas) // 2]:
                    curves[f"regression sigma={s:g} {meth}"] = e
        for s in rgn_rates:
            y = y0 + s * z
            xhat = solve_rank_one(y, a, method="rgn", x0=x0, n_iter=80).x
            e = solve_rank_one(y, a, method="rgn", x0=x0, n_iter=30, truth=xhat).errors
            rgn_rates[s].append(safe(fit_linear_rate, e, 1e-12, 1e-3))
            if seed == 0:
                curves[f"RGN |X_t - X_hat| sigma={s:g}"] = e
        # spectral start, sigma = the middle value
        s = sigmas[len(sigmas) // 2]
        y = y0 + s * z
        xs = spectral_init(y, a)
        for meth in METHODS:
            e = solve_rank_one(y, a, method=meth, x0=xs, n_iter=ITERS[meth], truth=x).errors  # type: ignore[arg-type]
            spectral_ok[meth] += int(e[-1] <= 1.1 * floors[s][-1])
    head = " | ".join(f"iters to 1.1x floor, sigma={s:g}" for s in sigmas)
    print(
        f"| method | order p (noise free) | linear rate (noise free) | {head} | ms/iter | spectral start reaches floor |"
    )
    print("|---" * (5 + len(sigmas)) + "|")
    for meth in METHODS:
        r = rows[meth]
        rate = "n/a (quadratic)" if meth == "rgn" else ci(r["rate"])
        its = " | ".join(
            ci(r[f"it{s:g}"], "{:.1f}")
            + ("" if np.all(np.isfinite(r[f"it{s:g}"])) else " (some never)")
            for s in sigmas
        )
        print(
            f"| {meth} | {ci(r['order'], '{:.2f}')} | {rate} | {its} | {ci(per_iter_ms[meth], '{:.2f}')} | "
            f"{spectral_ok[meth]}/{seeds} |"
        )
    print(
        "\n| sigma | floor (relative error of X_hat) | floor / sigma | floor / (sigma sqrt(d)) (LS on the d-dim tangent space: ~1) |"
    )
    print("|---|---|---|---|")
    for s in sigmas:
        f = np.array(floors[s])
        print(f"| {s:g} | {ci(f)} | {ci(f / s)} | {ci(f / (s * np.sqrt(d)))} |")
    print("\n| sigma | RGN linear-phase rate toward X_hat (after the quadratic phase) |")
    print("|---|---|")
    for s, v in rgn_rates.items():
        print(f"| {s:g} | {ci(v)} |")


def pca(shape: tuple[int, ...], lam: float, seeds: int, sigmas: list[float], curves: dict) -> None:  # type: ignore[type-arg]
    print(
        f"\n## Tensor PCA, shape {shape}, lam={lam:g}, {seeds} seeds, local start; RGD/PGD step 0.5"
    )
    steps: dict[str, float | str] = {"rgn": "cauchy", "rgd": 0.5, "als": "cauchy", "pgd": 0.5}
    its: dict[str, dict[float, list[float]]] = {k: {s: [] for s in sigmas} for k in METHODS}
    order: dict[str, list[float]] = {k: [] for k in METHODS}
    floors: dict[float, list[float]] = {s: [] for s in sigmas}
    for seed in range(seeds):
        rng = np.random.default_rng(1000 + seed)
        x = random_rank_one(shape, lam, rng)
        z = rng.standard_normal(shape)
        x0 = perturb(x, START, rng)
        for meth in METHODS:
            e = solve_rank_one(
                x.full(), None, method=meth, x0=x0, n_iter=100, step=steps[meth], truth=x
            ).errors  # type: ignore[arg-type]
            order[meth].append(safe(fit_order, e, 1e-14, 0.9))
            if seed == 0:
                curves[f"pca sigma=0 {meth}"] = e
        for s in sigmas:
            t = x.full() + s * z
            fl = solve_rank_one(t, None, method="rgn", x0=x0, n_iter=30, truth=x).errors[-1]
            floors[s].append(fl)
            for meth in METHODS:
                e = solve_rank_one(
                    t, None, method=meth, x0=x0, n_iter=100, step=steps[meth], truth=x
                ).errors  # type: ignore[arg-type]
                it = iters_to(e, 1.1 * fl)
                its[meth][s].append(float("nan") if it is None else it)
    head = " | ".join(f"iters to floor, sigma={s:g}" for s in sigmas)
    print(f"| method | order p (noise free; ALS exact in 1 sweep) | {head} |")
    print("|---" * (2 + len(sigmas)) + "|")
    for meth in METHODS:
        print(
            f"| {meth} | {ci(order[meth], '{:.2f}')} | "
            + " | ".join(ci(its[meth][s], "{:.1f}") for s in sigmas)
            + " |"
        )
    print("\n| sigma | floor / lam | floor / sigma |")
    print("|---|---|---|")
    for s in sigmas:
        f = np.array(floors[s])
        print(f"| {s:g} | {ci(f)} | {ci(f * lam / s)} |")


def plot(curves: dict[str, np.ndarray], out: Path) -> None:  # type: ignore[type-arg]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = sorted({k.rsplit(" ", 1)[0] for k in curves})
    fig, axes = plt.subplots(1, len(groups), figsize=(5 * len(groups), 4))
    for ax, g in zip(np.atleast_1d(axes), groups, strict=True):
        for k, e in curves.items():
            if k.rsplit(" ", 1)[0] == g:
                ax.semilogy(np.maximum(e[:60], 1e-16), label=k.rsplit(" ", 1)[1], marker=".")
        ax.set_title(g)
        ax.set_xlabel("iteration")
        ax.set_ylabel("|X_t - X*| / |X*|")
        ax.legend()
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "segre_error_per_iteration.png", dpi=110)
    print(f"\nplot: {out / 'segre_error_per_iteration.png'}")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    seeds = 3 if args.quick else args.seeds
    t0 = time.time()
    curves: dict[str, np.ndarray] = {}  # type: ignore[type-arg]
    regression((8, 8, 8), 120, seeds, [1e-4, 1e-3, 1e-2], curves)
    if not args.quick:
        regression((10, 10, 10), 150, seeds, [1e-4, 1e-3, 1e-2], {})
    pca((20, 20, 20), 1.0, seeds, [1e-3, 1e-2], curves)
    if args.out is not None:
        plot(curves, args.out)
    print(f"\n(total {time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
