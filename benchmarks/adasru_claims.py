"""AdaSRU claims: source-free unlearning vs retraining, gradient ascent and remaining-data methods.

For each seed: implicit feedback from a latent-factor Bernoulli model, a matrix-factorization
recommender trained with Adam, a deletion request (all training positives of a fraction of
users). Every ascent method runs until its membership AUC (forgotten positives vs held-out
positives of the same users) falls to the retrained model's (equal forgetting); the table
gives forgetting (MIA AUC, mean score of the forgotten interactions) and utility (held-out
AUC / recall@10 of the remaining users) there, with 95% t-intervals over seeds and paired
differences against AdaSRU.

    python benchmarks/adasru_claims.py --seeds 20 --out runs/adasru

With ``--out``, ``tradeoff.png`` plots held-out AUC against membership AUC along each
ascent method's path (seed 0, run past the retrained level) with retraining as a point.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
from scipy import stats

from optiforge.solvers.structured.adasru import (
    adasru,
    finetune_remaining,
    forget_metrics,
    gradient_ascent,
    make_implicit_data,
    retrain,
    train_mf,
    unlearn_to_equal_forgetting,
    utility_metrics,
)

METHODS = [
    "original",
    "retrain",
    "finetune-R",
    "oracle-R",
    "adasru",
    "adasru-noproj",
    "adasru-noprecond",
    "adasru-no-m",
    "ga",
]


def ci(x: np.ndarray) -> str:
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return f"{x.mean():.4f}"
    h = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
    return f"{x.mean():.4f} ± {h:.4f}"


def one_seed(seed: int, args: argparse.Namespace) -> dict[str, dict[str, float]]:
    data = make_implicit_data(
        n_users=args.n_users, n_items=args.n_items, forget_users_frac=args.forget_users, seed=seed
    )
    model, state = train_mf(data.n_users, data.n_items, data.train, seed=seed)
    gold = retrain(data, seed=seed)
    out: dict[str, dict[str, float]] = {}
    for name, m in (("original", model), ("retrain", gold)):
        out[name] = {
            **forget_metrics(m, data),
            **utility_metrics(m, data),
            "steps": 0.0,
            "reached": 1.0,
        }
    ft = finetune_remaining(model, data, epochs=args.ft_epochs)
    out["finetune-R"] = {
        **forget_metrics(ft, data),
        **utility_metrics(ft, data),
        "steps": 0.0,
        "reached": 0.0,
    }
    target = out["retrain"]["mia_auc"]
    lr, k = args.lr, args.max_steps
    runs = {
        "oracle-R": lambda cb: adasru(
            model, state, data, lr=lr, max_steps=k, remaining=True, callback=cb
        ),
        "adasru": lambda cb: adasru(model, state, data, lr=lr, max_steps=k, callback=cb),
        "adasru-noproj": lambda cb: adasru(
            model, state, data, lr=lr, max_steps=k, constrain=False, callback=cb
        ),
        "adasru-noprecond": lambda cb: adasru(
            model, state, data, lr=lr, max_steps=k, precondition=False, callback=cb
        ),
        "adasru-no-m": lambda cb: adasru(
            model, state, data, lr=lr, max_steps=k, use_first_moment=False, callback=cb
        ),
        "ga": lambda cb: gradient_ascent(model, data, lr=lr, max_steps=k, callback=cb),
    }
    for name, run in runs.items():
        out[name] = unlearn_to_equal_forgetting(run, data, target)
    return out


def plot_paths(args: argparse.Namespace, out: Path) -> None:
    """Utility vs forgetting along each method's path, seed 0."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = make_implicit_data(
        n_users=args.n_users, n_items=args.n_items, forget_users_frac=args.forget_users
    )
    model, state = train_mf(data.n_users, data.n_items, data.train)
    gold = retrain(data)
    target = forget_metrics(gold, data)["mia_auc"]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    runs = {
        "AdaSRU (source-free)": lambda cb: adasru(
            model, state, data, lr=args.lr, max_steps=400, callback=cb
        ),
        "projected, true remaining gradient": lambda cb: adasru(
            model, state, data, lr=args.lr, max_steps=400, remaining=True, callback=cb
        ),
        "AdaSRU without preconditioner": lambda cb: adasru(
            model, state, data, lr=args.lr, max_steps=400, precondition=False, callback=cb
        ),
        "gradient ascent": lambda cb: gradient_ascent(
            model, data, lr=args.lr, max_steps=400, callback=cb
        ),
    }
    for name, run in runs.items():
        xs: list[float] = []
        ys: list[float] = []

        def cb(step: int, m: object, xs: list[float] = xs, ys: list[float] = ys) -> bool:
            xs.append(forget_metrics(m, data)["mia_auc"])  # type: ignore[arg-type]
            ys.append(utility_metrics(m, data)["auc"])  # type: ignore[arg-type]
            return xs[-1] < target - 0.05

        run(cb)
        ax.plot(xs, ys, label=name)
    ax.scatter([target], [utility_metrics(gold, data)["auc"]], color="k", zorder=5, label="retrain")
    ax.axvline(target, color="k", lw=0.5, ls="--")
    ax.invert_xaxis()
    ax.set_xlabel("membership AUC of the forgotten interactions (lower = more forgotten)")
    ax.set_ylabel("held-out AUC, remaining users")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    fig.savefig(out / "tradeoff.png", dpi=120)
    print(f"wrote {out / 'tradeoff.png'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--n-users", type=int, default=200)
    ap.add_argument("--n-items", type=int, default=150)
    ap.add_argument("--forget-users", type=float, default=0.5)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--max-steps", type=int, default=600)
    ap.add_argument("--ft-epochs", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None, help="folder for tradeoff.png")
    args = ap.parse_args()
    if args.out is not None:
        plot_paths(args, args.out)
    t0 = time.time()
    res = [one_seed(s, args) for s in range(args.seeds)]
    keys = ["mia_auc", "forget_score", "auc", "recall", "steps", "reached"]
    print(
        f"seeds={args.seeds} n_users={args.n_users} n_items={args.n_items} forget_users={args.forget_users}"
    )
    print("| method | " + " | ".join(keys) + " |")
    print("|---" * (len(keys) + 1) + "|")
    for m in METHODS:
        print(f"| {m} | " + " | ".join(ci(np.array([r[m][k] for r in res])) for k in keys) + " |")
    print("\npaired differences (method - adasru), 95% t-intervals:")
    for m in METHODS:
        if m == "adasru":
            continue
        d_auc = np.array([r[m]["auc"] - r["adasru"]["auc"] for r in res])
        d_rec = np.array([r[m]["recall"] - r["adasru"]["recall"] for r in res])
        print(f"  {m:18s} auc {ci(d_auc)}   recall@10 {ci(d_rec)}")

    def gap(m: str) -> np.ndarray:
        return np.array([abs(r[m]["forget_score"] - r["retrain"]["forget_score"]) for r in res])

    def loss(m: str) -> np.ndarray:
        return np.array([r["original"]["auc"] - r[m]["auc"] for r in res])

    print("\n|forget_score - retrain's|: " + ", ".join(f"{m} {ci(gap(m))}" for m in METHODS[2:]))
    print(
        "utility loss (original auc - method auc): "
        + ", ".join(f"{m} {ci(loss(m))}" for m in METHODS[1:])
    )
    print(f"\n{time.time() - t0:.0f} s")


if __name__ == "__main__":
    main()
