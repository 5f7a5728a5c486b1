"""AETDICE's claims: on nonlinear multi-objective objectives (max-min, Nash-welfare
fairness, CVaR) it beats linear scalarization and the Markov-policy DICE baseline trained on
the same offline data, and recovers the exact optimum (dynamic programming on the
return-augmented state) where one exists; reported as the gap to it.

For each problem (environment x objective), dataset size and seed: one dataset of the
mixture behaviour (``mo_data``), the three methods trained on it, each policy scored
*exactly* on the gridworlds (forward propagation on the true augmented model) and by 400
Monte-Carlo episodes on the continuous ``point``. Prints a table (mean and 95% t-interval
over seeds, paired AETDICE - baseline differences) and writes under ``--out``:
``value_vs_size.png`` (objective vs dataset size per method, the DP optimum as a line),
``dst_pareto.png`` (DST's Pareto front, its convex hull and each method's returns) and
``results.json``.

    OMP_NUM_THREADS=1 python benchmarks/aetdice_claims.py --out runs/aetdice
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

from optiforge.solvers.rl import aetdice as A
from optiforge.solvers.rl import mo_data
from optiforge.solvers.rl.mo_envs import TabularMOEnv, make_mo_env

METHODS = ("aetdice", "markov-dice", "linear-scalarization")
PROBLEMS = (  # (env, objective, label, alpha): alpha 1e-4 on the deterministic DST, 1e-3 else
    ("dst", "min:0.00806452,0.05@0,-20", "DST, max-min of treasure/124 and (20-steps)/20", 1e-4),
    ("dst", "fair@0,-20", "DST, Nash welfare log(treasure) + log(20-steps)", 1e-4),
    (
        "resource:horizon=20,attack=0.3",
        "fair",
        "resource, Nash welfare log(1+gold)+log(1+gem)",
        1e-3,
    ),
    ("resource:horizon=20,attack=0.3", "cvar:0.3", "resource, CVaR_0.3 of gold+gem", 1e-3),
    ("point", "min", "point (continuous, discretized), E[min(right, left)]", 1e-3),
)


def ci(x: list[float]) -> tuple[float, float]:
    a = np.asarray(x, dtype=np.float64)
    if len(a) < 2:
        return float(a.mean()), float("nan")
    return float(a.mean()), float(stats.t.ppf(0.975, len(a) - 1) * a.std(ddof=1) / np.sqrt(len(a)))


def run(seeds: int, sizes: list[int], alpha_scale: float) -> dict[str, Any]:
    out: dict[str, Any] = {"alpha_scale": alpha_scale, "seeds": seeds, "sizes": sizes,
                           "problems": []}  # fmt: skip
    for spec, text, label, alpha0 in PROBLEMS:
        alpha = alpha0 * alpha_scale
        env = make_mo_env(spec)
        obj = A.parse_objective(text, len(env.reward_names))
        aug = A.AugmentedMDP.build(env.model()) if isinstance(env, TabularMOEnv) else None
        dp = A.dp_optimum(env.model(), obj, aug)[0] if isinstance(env, TabularMOEnv) else None
        n_act = int(env.action_space.n) if isinstance(env, TabularMOEnv) else 3
        rec: dict[str, Any] = {"env": spec, "objective": text, "label": label, "dp": dp, "alpha": alpha,
                               "values": {m: {} for m in METHODS}, "returns": {}}  # fmt: skip
        t0 = time.time()
        for n in sizes:
            for m in METHODS:
                rec["values"][m][n] = []
            for seed in range(seeds):
                data = mo_data.collect_dataset(spec, n, seed=1000 * seed + n)
                for m in METHODS:
                    pol, _ = A.solve(m, data, obj, n_act, alpha=alpha)
                    if aug is not None:
                        atoms, probs = A.evaluate_exact(aug, pol.on_aug(aug))
                        v = obj.value(atoms, probs)
                        if seed == 0 and n == sizes[-1]:
                            rec["returns"][m] = [atoms.tolist(), probs.tolist()]
                    else:
                        R = A.rollout_returns(spec, pol, 400, 10_000 + seed)
                        v = obj.value(R, np.ones(len(R)))
                    rec["values"][m][n].append(v)
        rec["seconds"] = time.time() - t0
        out["problems"].append(rec)
        report(rec, sizes)
    return out


def report(rec: dict[str, Any], sizes: list[int]) -> None:
    dp = rec["dp"]
    print(f"\n{rec['label']}  [{rec['env']} / {rec['objective']}, alpha {rec['alpha']:g}]  DP: "
          f"{'n/a' if dp is None else f'{dp:.4f}'}  ({rec['seconds']:.0f}s)")  # fmt: skip
    print(f"{'episodes':>8} " + " ".join(f"{m:>24}" for m in METHODS)
          + "   AET-Markov (paired)      AET-linear (paired)")  # fmt: skip
    for n in sizes:
        cells = []
        for m in METHODS:
            mu, h = ci(rec["values"][m][n])
            cells.append(f"{mu:>12.4f} ± {h:<9.4f}")
        a = np.asarray(rec["values"]["aetdice"][n])
        diffs = []
        for b in ("markov-dice", "linear-scalarization"):
            mu, h = ci((a - np.asarray(rec["values"][b][n])).tolist())
            diffs.append(f"{mu:>+9.4f} ± {h:<9.4f}")
        print(f"{n:>8} " + " ".join(cells) + "   " + "   ".join(diffs))
    if dp is not None:
        gaps = {m: ci([dp - v for v in rec["values"][m][sizes[-1]]]) for m in METHODS}
        print("gap to the DP optimum at", sizes[-1], "episodes:",
              ", ".join(f"{m} {g[0]:.4f} ± {g[1]:.4f}" for m, g in gaps.items()))  # fmt: skip


def plots(res: dict[str, Any], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    probs = res["problems"]
    fig, axes = plt.subplots(1, len(probs), figsize=(4.2 * len(probs), 3.6))
    sizes = res["sizes"]
    for ax, rec in zip(np.atleast_1d(axes), probs, strict=True):
        for m, style in zip(METHODS, ("o-", "s--", "^:"), strict=True):
            vals = rec["values"][m]
            mus, hs = zip(*(ci(vals[n] if n in vals else vals[str(n)]) for n in sizes), strict=True)
            ax.errorbar(sizes, mus, yerr=hs, fmt=style, capsize=3, label=m, alpha=0.8)
        if rec["dp"] is not None:
            ax.axhline(rec["dp"], color="k", ls="--", lw=1, label="DP optimum")
        ax.set_xscale("log")
        ax.set_xticks(sizes, [str(n) for n in sizes])
        ax.minorticks_off()
        ax.set_xlabel("episodes in the dataset")
        ax.set_title(f"{rec['env'].split(':')[0]}: {rec['objective']}", fontsize=9)
    np.atleast_1d(axes)[0].set_ylabel("objective (exact / 400 MC episodes)")
    np.atleast_1d(axes)[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "value_vs_size.png", dpi=120)
    plt.close(fig)

    dst = next((r for r in probs if r["env"] == "dst" and r["returns"]), None)
    if dst is None:
        return
    front = np.array([(1, -1), (2, -3), (3, -5), (5, -7), (8, -8), (16, -9), (24, -13),
                      (50, -14), (74, -17), (124, -19)], dtype=float)  # fmt: skip
    fig, ax = plt.subplots(figsize=(5.5, 4))
    ax.plot(front[:, 0], front[:, 1], "ko", label="Pareto front")
    hull = front[[0, 5, 9]]  # the supported points: (1,-1), (16,-9), (124,-19)
    ax.plot(hull[:, 0], hull[:, 1], "k:", lw=1, label="convex hull (weighted sums)")
    for k, m in enumerate(METHODS):
        atoms, p = (np.asarray(v) for v in dst["returns"][m])
        ax.scatter(atoms[:, 0] + 1.5 * (k - 1), atoms[:, 1], s=20 + 200 * p, alpha=0.6,
                   label=f"{m} (size ~ probability)")  # fmt: skip
    ax.set_xlabel("treasure")
    ax.set_ylabel("-steps")
    ax.set_title(f"DST, {dst['objective']}, seed 0, {res['sizes'][-1]} episodes", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "dst_pareto.png", dpi=120)
    plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--sizes", default="50,100,200,400,800")
    ap.add_argument("--alpha-scale", type=float, default=1.0, help="multiplies every alpha")
    ap.add_argument("--out", default="runs/aetdice")
    ap.add_argument("--replot", action="store_true", help="redraw from --out/results.json")
    args = ap.parse_args()
    if args.replot:
        plots(json.loads((Path(args.out) / "results.json").read_text()), Path(args.out))
        return
    import torch

    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    res = run(args.seeds, [int(s) for s in args.sizes.split(",")], args.alpha_scale)
    res["seconds"] = time.time() - t0
    (out / "results.json").write_text(json.dumps(res, default=float))
    plots(res, out)
    print(f"\ntotal {res['seconds']:.0f}s; plots and results.json in {out}")


if __name__ == "__main__":
    main()
