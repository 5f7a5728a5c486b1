"""AMORTIX claims: group-normalized RL vs plain policy gradient, and the amortized model at
zero inference-time oracle calls vs a per-molecule graph GA on HELD-OUT scaffolds.

    OMP_NUM_THREADS=1 python benchmarks/amortix_claims.py --seeds 5 --out runs/amortix

1. Training stability: the same graph transformer, samples, Adam and learning rate trained
   with GRPO-style group-normalized advantages, plain REINFORCE (raw reward) and REINFORCE
   with a global batch-mean baseline, ``--seeds`` seeds each. Reported: final held-out
   greedy reward (mean, 95% t-interval, cross-seed std), the largest drop of the held-out
   curve below its running best (drawdown), final policy entropy and the number of seeds
   whose entropy collapsed (< 0.05 nats) on a held-out reward below the GRPO mean, the
   sampled-reward validity.
2. Amortized vs instance optimization on the held-out scaffolds: the GRPO models' greedy
   decorations (one forward pass, 0 oracle calls) vs the GA's best after b calls per
   scaffold (``--ga-seeds`` seeds), and the smallest budget at which the GA's mean reaches
   the amortized mean ("catch-up budget"). Both are also given as a fraction of the
   exhaustive optimum (every decoration of every held-out scaffold scored).

Writes ``results.json``, ``reward_curves.png`` (sampled training reward, held-out greedy
reward and entropy per method, mean and 95% band over seeds) and ``ga_vs_amortized.png``
under ``--out``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import time
from pathlib import Path

import numpy as np
import torch
from scipy import stats

from optiforge.solvers.chem import FRAGMENTS, GraphTransformerPolicy, Oracle, graph_ga, train
from optiforge.solvers.chem.amortix import METHODS, decode
from optiforge.solvers.chem.molecules import load_scaffolds


def ci95(x: np.ndarray) -> tuple[float, float]:
    """Mean and half-width of the 95% t-interval over axis 0."""
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return float(x.mean()), float("nan")
    return float(x.mean()), float(stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x)))


def fmt(x: np.ndarray, digits: int = 3) -> str:
    m, h = ci95(x)
    return f"{m:.{digits}f} ± {h:.{digits}f}"


def drawdown(curve: list[float]) -> float:
    """Largest drop of ``curve`` below its running maximum."""
    best = -np.inf
    worst = 0.0
    for v in curve:
        best = max(best, v)
        worst = max(worst, best - v)
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch-scaffolds", type=int, default=8)
    ap.add_argument("--group", type=int, default=16)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--layers", type=int, default=3)
    ap.add_argument("--eval-every", type=int, default=20)
    ap.add_argument("--ga-seeds", type=int, default=5)
    ap.add_argument("--ga-budget", type=int, default=400)
    ap.add_argument("--objective", default="qed_logp_sim")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--out", default="runs/amortix")
    ap.add_argument(
        "--no-optimum", action="store_true", help="skip the exhaustive optimum (smoke runs)"
    )
    args = ap.parse_args()
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    train_s, held = load_scaffolds("train"), load_scaffolds("heldout")
    methods = args.methods.split(",")

    # exhaustive optimum of every held-out scaffold (the reference for "fraction of optimum")
    ref = Oracle(args.objective)
    optimum = np.array(
        [
            max(ref(s, c) for c in itertools.product(range(len(FRAGMENTS)), repeat=s.n_points))
            if not args.no_optimum
            else 1.0
            for s in held
        ]
    )
    start = np.array([ref(s, [0] * s.n_points) for s in held])
    print(
        f"held-out: {len(held)} scaffolds, start {start.mean():.3f}, optimum {optimum.mean():.3f}"
    )

    runs: dict[str, list[dict]] = {m: [] for m in methods}
    for method in methods:
        for seed in range(args.seeds):
            torch.manual_seed(seed)
            pol = GraphTransformerPolicy(d_model=args.d_model, n_layers=args.layers)
            t = time.time()
            h = train(
                pol,
                train_s,
                Oracle(args.objective),
                method=method,  # type: ignore[arg-type]
                steps=args.steps,
                batch_scaffolds=args.batch_scaffolds,
                group=args.group,
                lr=args.lr,
                seed=seed,
                eval_scaffolds=held,
                eval_oracle=ref,
                eval_every=args.eval_every,
            )
            per = [ref(s, c) for s, c in zip(held, decode(pol, held), strict=True)]
            runs[method].append(
                dict(
                    seed=seed,
                    reward=h.reward,
                    validity=h.validity,
                    entropy=h.entropy,
                    eval_steps=h.eval_steps,
                    eval_reward=h.eval_reward,
                    heldout_per_scaffold=per,
                    oracle_calls=h.oracle_calls,
                    train_s=time.time() - t,
                )
            )
            print(
                f"{method:>18} seed {seed}: held-out {np.mean(per):.3f}, entropy "
                f"{h.entropy[-1]:.2f}, {h.oracle_calls} training calls, {time.time() - t:.0f} s",
                flush=True,
            )

    # GA per held-out scaffold
    ga = np.zeros((args.ga_seeds, len(held), args.ga_budget))
    for seed in range(args.ga_seeds):
        for i, s in enumerate(held):
            r = graph_ga(s, Oracle(args.objective), budget=args.ga_budget, seed=seed)
            ga[seed, i] = [r.best_at(b) for b in range(1, args.ga_budget + 1)]
    ga_curve = ga.mean(axis=1)  # seeds x budget

    summary: dict[str, dict] = {}
    grpo_mean = np.mean([np.mean(r["heldout_per_scaffold"]) for r in runs.get("grpo", [])] or [0])
    print("\n== training stability (held-out greedy reward after training) ==")
    print(
        f"{'method':>18} | {'held-out':>15} | seed std | drawdown | final entropy | collapsed"
        " | validity | frac. optimum | train reward (last 50 steps)"
    )
    for method in methods:
        fin = np.array([np.mean(r["heldout_per_scaffold"]) for r in runs[method]])
        dd = np.array([drawdown(r["eval_reward"]) for r in runs[method]])
        ent = np.array([r["entropy"][-1] for r in runs[method]])
        val = np.array([np.mean(r["validity"][-20:]) for r in runs[method]])
        tr_r = np.array([np.mean(r["reward"][-50:]) for r in runs[method]])
        frac = np.array(
            [np.mean(np.array(r["heldout_per_scaffold"]) / optimum) for r in runs[method]]
        )
        collapsed = int(np.sum((ent < 0.05) & (fin < grpo_mean)))
        summary[method] = dict(
            heldout=ci95(fin),
            seed_std=float(fin.std(ddof=1)) if len(fin) > 1 else 0.0,
            drawdown=ci95(dd),
            entropy=ci95(ent),
            collapsed=collapsed,
            validity=ci95(val),
            train_reward=ci95(tr_r),
            train_per_seed=tr_r.tolist(),
            frac_optimum=ci95(frac),
            per_seed=fin.tolist(),
        )
        print(
            f"{method:>18} | {fmt(fin):>15} | {summary[method]['seed_std']:.3f}    | "
            f"{fmt(dd)} | {fmt(ent, 2)} | {collapsed}/{len(fin)} | {fmt(val, 2)} | {fmt(frac)}"
            f" | {fmt(tr_r)}"
        )
    if "grpo" in runs:
        for method in methods:
            if method == "grpo":
                continue
            diff = np.array(summary["grpo"]["per_seed"]) - np.array(summary[method]["per_seed"])
            tdiff = np.array(summary["grpo"]["train_per_seed"]) - np.array(
                summary[method]["train_per_seed"]
            )
            summary[f"grpo_minus_{method}"] = ci95(diff)
            summary[f"grpo_minus_{method}_train"] = ci95(tdiff)
            print(f"paired by seed, GRPO - {method}: held-out {fmt(diff)}, train {fmt(tdiff)}")

    print("\n== amortized (0 oracle calls at inference) vs GA (calls per held-out scaffold) ==")
    budgets = [b for b in (1, 5, 10, 25, 50, 100, 200, 400) if b <= args.ga_budget]
    for b in budgets:
        print(
            f"GA {b:>4} calls: {fmt(ga_curve[:, b - 1])}  frac. optimum "
            f"{fmt((ga[:, :, b - 1] / optimum).mean(axis=1))}"
        )
    catch: dict[str, int | None] = {}
    for method in methods:
        am = float(np.mean(summary[method]["per_seed"]))
        mean_curve = ga_curve.mean(axis=0)
        reach = np.flatnonzero(mean_curve >= am)
        catch[method] = int(reach[0] + 1) if len(reach) else None
        print(f"{method}: amortized {am:.3f}; GA catches up at {catch[method]} calls per scaffold")
    summary["ga"] = {str(b): ci95(ga_curve[:, b - 1]) for b in budgets}
    summary["ga_catch_up_calls"] = catch
    summary["optimum"] = float(optimum.mean())
    summary["start"] = float(start.mean())
    calls = np.mean([r["oracle_calls"] for r in runs.get("grpo", runs[methods[0]])])
    summary["training_oracle_calls"] = float(calls)
    summary["wall_s"] = time.time() - t0
    print(
        f"training oracle calls (GRPO, mean per run): {calls:.0f}; wall {summary['wall_s']:.0f} s"
    )
    (out / "results.json").write_text(
        json.dumps(dict(args=vars(args), summary=summary, runs=runs), indent=1)
    )
    plot(runs, methods, ga_curve, summary, out, args)


def plot(
    runs: dict, methods: list[str], ga_curve: np.ndarray, summary: dict, out: Path, args
) -> None:  # type: ignore[no-untyped-def]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(15, 4))
    for method in methods:
        rew = np.array([r["reward"] for r in runs[method]])
        k = 10
        smooth = np.array([np.convolve(x, np.ones(k) / k, mode="valid") for x in rew])
        m = smooth.mean(0)
        h = stats.t.ppf(0.975, max(len(rew) - 1, 1)) * smooth.std(0, ddof=1) / np.sqrt(len(rew))
        (line,) = ax[0].plot(m, label=method)
        ax[0].fill_between(range(len(m)), m - h, m + h, alpha=0.2, color=line.get_color())
        ev = np.array([r["eval_reward"] for r in runs[method]])
        steps = runs[method][0]["eval_steps"]
        for e in ev:
            ax[1].plot(steps, e, color=line.get_color(), alpha=0.35, lw=0.8)
        ax[1].plot(steps, ev.mean(0), color=line.get_color(), lw=2, label=method)
        ent = np.array([r["entropy"] for r in runs[method]])
        ax[2].plot(ent.mean(0), color=line.get_color(), label=method)
    ax[0].set(title="sampled training reward (10-step mean, 95% band)", xlabel="step")
    ax[1].set(title="held-out greedy reward (thin: seeds)", xlabel="step")
    ax[1].axhline(summary["optimum"], ls=":", color="k", label="exhaustive optimum")
    ax[2].set(title="policy entropy per point (nats)", xlabel="step")
    for a in ax:
        a.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "reward_curves.png", dpi=110)

    fig, a = plt.subplots(figsize=(6, 4))
    b = np.arange(1, ga_curve.shape[1] + 1)
    m = ga_curve.mean(0)
    h = (
        stats.t.ppf(0.975, max(len(ga_curve) - 1, 1))
        * ga_curve.std(0, ddof=1)
        / np.sqrt(len(ga_curve))
    )
    a.plot(b, m, label="graph GA (best so far)")
    a.fill_between(b, m - h, m + h, alpha=0.2)
    for method in methods:
        am, hw = summary[method]["heldout"]
        a.axhline(
            am, ls="--", label=f"AMORTIX {method}, 0 calls", color=f"C{methods.index(method) + 1}"
        )
        a.axhspan(am - hw, am + hw, alpha=0.1, color=f"C{methods.index(method) + 1}")
    a.axhline(summary["optimum"], ls=":", color="k", label="exhaustive optimum")
    a.set(xscale="log", xlabel="oracle calls per held-out scaffold", ylabel="mean reward")
    a.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "ga_vs_amortized.png", dpi=110)


if __name__ == "__main__":
    main()
