"""Weak-AICN boosting claims: monotone where plain Newton boosting oscillates, the rate
against gradient-regularized Newton boosting, test accuracy against LightGBM.

    OMP_NUM_THREADS=1 python benchmarks/weak_aicn_claims.py [--seeds 10] [--out DIR]

Prints three tables (95% t-intervals over seeds); with --out, a PNG of the trap's loss curves.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
from scipy import stats
from sklearn.datasets import load_breast_cancer, make_classification
from sklearn.model_selection import train_test_split

from optiforge.solvers.structured.weak_aicn import (
    WeakAICNBooster,
    newton_coordinate_descent,
    newton_trap_dataset,
)


def ci(x: list[float] | np.ndarray) -> str:
    a = np.asarray(x, dtype=float)
    m = float(np.mean(a))
    if len(a) < 2:
        return f"{m:.4g}"
    h = float(stats.t.ppf(0.975, len(a) - 1) * np.std(a, ddof=1) / math.sqrt(len(a)))
    return f"{m:.4g} ± {h:.2g}"


def increases(h: list[float]) -> int:
    return int(np.sum(np.diff(np.asarray(h)) > 1e-12))


VARIANTS: dict[str, dict[str, object]] = {
    "newton (plain, step 1)": {"step": "newton"},
    "weak-AICN adaptive L0=1": {"step": "aicn"},
    "weak-AICN fixed L=1": {"step": "aicn", "adaptive": False, "L": 1.0},
    "weak-AICN fixed L=10": {"step": "aicn", "adaptive": False, "L": 10.0},
    "gradreg L=0.01": {"step": "gradreg", "L": 0.01},
    "gradreg L=0.1": {"step": "gradreg", "L": 0.1},
    "gradreg L=1": {"step": "gradreg", "L": 1.0},
}


def trap(seeds: int, out: Path | None) -> None:
    print("\n## 1. Newton trap (nearly separable, stumps, 30 rounds)")
    print("| method | monotone runs | max loss / initial (median) | final loss (median) |")
    print("|---|---|---|---|")
    curves: dict[str, list[float]] = {}
    for name, kw in VARIANTS.items():
        mono, ratio, final = 0, [], []
        for s in range(seeds):
            X, y = newton_trap_dataset(s, n_per_class=60 + 20 * (s % 5), n_pairs=1 + s % 2)
            h = WeakAICNBooster(n_rounds=30, max_depth=1, **kw).fit(X, y).loss_history_  # type: ignore[arg-type]
            mono += increases(h) == 0
            ratio.append(max(h) / h[0])
            final.append(h[-1])
            if s == 0:
                curves[name] = h
        print(f"| {name} | {mono}/{seeds} | {np.median(ratio):.3g} | {np.median(final):.3g} |")
    # the coordinate special case: coordinates = the trap's region indicators
    print("\nNewton coordinate descent, coordinates [x0 > 0, x0 <= 0, x1 > 2], greedy, 30 iters:")
    for step in ("newton", "aicn"):
        mono, ratio, final = 0, [], []
        for s in range(seeds):
            X, y = newton_trap_dataset(s, n_per_class=60 + 20 * (s % 5), n_pairs=1 + s % 2)
            Z = np.c_[X[:, 0] > 0, X[:, 0] <= 0, X[:, 1] > 2].astype(float)
            res = newton_coordinate_descent(Z, y, step=step, iters=30)  # type: ignore[arg-type]
            mono += increases(res.loss_history) == 0
            ratio.append(max(res.loss_history) / res.loss_history[0])
            final.append(res.loss_history[-1])
        print(
            f"  {step}: monotone {mono}/{seeds}, max/initial median {np.median(ratio):.3g}, "
            f"final loss median {np.median(final):.3g}"
        )
    if out is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for name, h in curves.items():
            ax.semilogy(h, label=name)
        ax.set_xlabel("round")
        ax.set_ylabel("train logistic loss")
        ax.set_title("Newton trap, seed 0")
        ax.legend(fontsize=7)
        fig.tight_layout()
        out.mkdir(parents=True, exist_ok=True)
        fig.savefig(out / "weak_aicn_trap.png", dpi=120)
        print(f"plot: {out / 'weak_aicn_trap.png'}")


def rate(seeds: int) -> None:
    print("\n## 2. Rate: train loss after k rounds (make_classification n=400 d=10, depth 3)")
    rounds = (10, 30, 100)
    names = ["weak-AICN adaptive L0=1", "gradreg L=0.01", "gradreg L=0.1", "gradreg L=1"]
    names.append("newton (plain, step 1)")
    hist: dict[str, list[list[float]]] = {n: [] for n in names}
    for s in range(seeds):
        X, y = make_classification(n_samples=400, n_features=10, n_informative=5, random_state=s)
        for n in names:
            h = WeakAICNBooster(n_rounds=max(rounds), max_depth=3, **VARIANTS[n]).fit(X, y)  # type: ignore[arg-type]
            hist[n].append([h.loss_history_[k] for k in rounds])
    print("| method | " + " | ".join(f"loss @ {k}" for k in rounds) + " |")
    print("|---|" + "---|" * len(rounds))
    for n in names:
        a = np.asarray(hist[n])
        print(f"| {n} | " + " | ".join(ci(a[:, i]) for i in range(len(rounds))) + " |")
    best = np.min(np.stack([np.asarray(hist[n]) for n in names[1:4]]), axis=0)
    ratio = np.log10(np.asarray(hist[names[0]]) / best)
    print(
        "paired log10(AICN / best-L gradreg): "
        + ", ".join(f"@{k}: {ci(ratio[:, i])}" for i, k in enumerate(rounds))
        + "  (< 0: AICN lower)"
    )


def accuracy(seeds: int) -> None:
    import lightgbm as lgb

    print("\n## 3. Test accuracy at 100 rounds, 8-leaf trees (70/30 stratified splits)")
    sets = {
        "breast_cancer": load_breast_cancer(return_X_y=True),
        "make_classification n=2000 d=20": make_classification(
            n_samples=2000, n_features=20, n_informative=8, flip_y=0.05, random_state=0
        ),
    }
    print(
        "| data | LightGBM (lr 0.1) | weak-AICN lr 1 | weak-AICN lr 0.3 | newton lr 0.3 |"
        " AICN lr 0.3 - LightGBM (paired) |"
    )
    print("|---|---|---|---|---|---|")
    for dname, (X, y) in sets.items():
        acc: dict[str, list[float]] = {k: [] for k in ("lgb", "a1", "a03", "n03")}
        for s in range(seeds):
            Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=s, stratify=y)
            m = lgb.LGBMClassifier(n_estimators=100, num_leaves=8, verbose=-1, random_state=s)
            acc["lgb"].append(float(np.mean(m.fit(Xtr, ytr).predict(Xte) == yte)))
            for key, kw in (
                ("a1", {"learning_rate": 1.0}),
                ("a03", {"learning_rate": 0.3}),
                ("n03", {"learning_rate": 0.3, "step": "newton"}),
            ):
                b = WeakAICNBooster(n_rounds=100, max_depth=3, random_state=s, **kw)  # type: ignore[arg-type]
                acc[key].append(float(np.mean(b.fit(Xtr, ytr).predict(Xte) == yte)))
        diff = np.asarray(acc["a03"]) - np.asarray(acc["lgb"])
        print(
            f"| {dname} | {ci(acc['lgb'])} | {ci(acc['a1'])} | {ci(acc['a03'])} | "
            f"{ci(acc['n03'])} | {ci(diff)} |"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--seeds", type=int, default=10)
    p.add_argument("--out", type=Path, default=None)
    args = p.parse_args()
    trap(args.seeds, args.out)
    rate(args.seeds)
    accuracy(args.seeds)


if __name__ == "__main__":
    main()
