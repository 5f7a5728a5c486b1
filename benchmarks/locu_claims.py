"""LOCU claims: stable multi-constraint steps under coupled constraints, a narrow feasible
region and an infeasible start, against CPO, PCPO, Lagrangian PPO and two LOCU ablations
(Gram-Schmidt instead of Löwdin; CPO-style summed-descent recovery instead of the Pareto
step), every method on the same on-policy loop (``baselines.OnPolicyLoop``) from the same
initial parameters per seed.

Settings (``point-hazards``: a point robot driven to a goal through hazard groups, one
expected-episode-cost constraint per group; ``corridor`` adds a wall-contact constraint):

- ``coupled``: 4 hazard groups of 3 overlapping hazards (costs strongly coupled), budget 1
  contact step per group per episode; random initialization (feasible, becomes
  infeasible as the policy learns to reach the goal).
- ``corridor``: 2 groups plus walls at ``|y| = 0.3`` (narrow feasible region), budget 2
  per constraint; a random policy hits the walls ~170 steps an episode (infeasible start).
- ``infeasible``: 3 groups, budget 0.5 per group, starting from a policy trained without
  constraints (TRPO) for ``--pretrain`` steps (every constraint violated).
- ``halfcheetah`` (opt-in): ``HalfCheetah-v5`` with the speed-limit cost (budget 20 steps
  over 3.21 m/s per 1000-step episode) and a position bound ``|x| <= 3`` (budget 100
  steps outside); short runs only (``--budget`` of a few tens of thousands of steps).

Per run: the final return and costs (mean of the last 3 iterations' rollouts), the
largest final violation, the first feasible iteration, feasibility flips (iterations at
which "every constraint within budget" changes), the largest overshoot (episode cost above
budget, summed over constraints) after the first feasible iteration, the largest per-
iteration KL (blow-ups), and ``api.evaluate`` on 10 fresh episodes. 95% t-intervals over
seeds, and paired differences against LOCU.

    python benchmarks/locu_claims.py --seeds 3 --out runs/locu

With ``--out``: ``curves_<setting>.png`` (return and each constraint's cost vs steps,
mean over seeds, per method) and ``results.json``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from scipy import stats

from optiforge.solvers.rl.api import ControlProblem, evaluate
from optiforge.solvers.rl.locu import pretrain_unconstrained, run_variant

SETTINGS: dict[str, dict[str, Any]] = {
    "coupled": {"env": "point-hazards:groups=4,hazards_per_group=3", "limits": (1.0,) * 4},
    "corridor": {"env": "point-hazards:groups=2,corridor=0.3", "limits": (2.0,) * 3},
    "infeasible": {"env": "point-hazards:groups=3", "limits": (0.5,) * 3, "pretrain": True},
    # opt-in (--settings halfcheetah): MuJoCo, 1000-step episodes, Safety-Gymnasium's speed
    # limit and a position bound; a short run (a few episodes per iteration)
    "halfcheetah": {"env": "HalfCheetah-v5+velocity+position:3.0", "limits": (20.0, 100.0)},
}
DEFAULT_SETTINGS = ("coupled", "corridor", "infeasible")
METHODS = ["locu", "locu-gs", "locu-nopareto", "cpo", "pcpo", "ppo-lag"]


def ci(x: Any) -> str:
    x = np.asarray(x, dtype=float)
    if len(x) < 2:
        return f"{x.mean():.2f}"
    h = stats.t.ppf(0.975, len(x) - 1) * x.std(ddof=1) / np.sqrt(len(x))
    return f"{x.mean():.2f} ± {h:.2f}"


def curve_metrics(curve: list[dict[str, float]], limits: np.ndarray, tail: int = 3
                  ) -> dict[str, float]:  # fmt: skip
    """Oscillation and final-performance measures of one learning curve (see the module
    docstring)."""
    m = len(limits)
    cost = np.array([[row[f"cost_{i}"] for i in range(m)] for row in curve])
    ret = np.array([row["return"] for row in curve])
    feas = np.all(cost <= limits + 1e-9, axis=1)
    first = int(np.argmax(feas)) if feas.any() else len(curve)
    over = np.clip(cost - limits, 0.0, None).sum(axis=1)
    fin_cost = cost[-tail:].mean(axis=0)
    return {
        "final_return": float(np.nanmean(ret[-tail:])),
        "final_violation": float(np.clip(fin_cost - limits, 0.0, None).sum()),
        "final_feasible": float(np.all(fin_cost <= limits + 1e-9)),
        "first_feasible": float(first),
        "flips": float(np.sum(feas[1:] != feas[:-1])),
        "overshoot": float(over[first:].max()) if first < len(curve) else float("nan"),
        "max_kl": float(max(row["kl"] for row in curve)),
        "recover_iters": float(sum(row.get("mode", row.get("case", 0)) == 1 for row in curve)),
        # LOCU: iterations whose reduced space lost a dimension to collinear compression
        "compressed": float(sum(row["r"] < row["kept"] + 1 for row in curve if "r" in row)),
    }


def one_run(setting: str, method: str, seed: int, args: argparse.Namespace,
            init: torch.Tensor | None) -> dict[str, Any]:  # fmt: skip
    s = SETTINGS[setting]
    prob = ControlProblem(setting, "cmdp", setting, s["env"], s["limits"], budget=args.budget)
    t0 = time.time()
    res = run_variant(method, prob, seed, init=init, steps_per_iter=args.steps_per_iter,
                      critic=args.critic)  # fmt: skip
    out = curve_metrics(res.curve, np.asarray(s["limits"]))
    ev = evaluate(prob, res.policy, episodes=10, seed=10_000 + seed)
    out.update(eval_return=ev["return"], eval_violation=ev["violation"],
               eval_cost=float(np.sum(ev["cost"])), seconds=time.time() - t0)  # fmt: skip
    out["curve"] = res.curve
    return out


def plot(results: dict[str, Any], setting: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    limits = SETTINGS[setting]["limits"]
    m = len(limits)
    fig, axes = plt.subplots(1, m + 1, figsize=(3.2 * (m + 1), 3.0))
    for method, runs in results[setting].items():
        steps = np.array([r["step"] for r in runs[0]["curve"]])
        for k, key in enumerate(["return"] + [f"cost_{i}" for i in range(m)]):
            ys = np.array([[r[key] for r in run["curve"]] for run in runs])
            ls = "--" if method.startswith("locu-") else "-"
            axes[k].plot(steps, np.nanmean(ys, axis=0), label=method, lw=1.3, ls=ls)
    axes[0].set_title("return")
    for i in range(m):
        axes[i + 1].axhline(limits[i], color="k", ls="--", lw=0.8)
        axes[i + 1].set_title(f"cost {i} (budget {limits[i]:g})")
    for ax in axes:
        ax.set_xlabel("env steps")
    axes[0].legend(fontsize=7)
    fig.suptitle(f"LOCU vs baselines: {setting} (mean over seeds)")
    fig.tight_layout()
    fig.savefig(out / f"curves_{setting}.png", dpi=110)
    plt.close(fig)


KEYS = ["final_return", "final_violation", "eval_return", "eval_violation", "first_feasible",
        "flips", "overshoot", "max_kl", "compressed"]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--budget", type=int, default=20_000)
    ap.add_argument("--steps-per-iter", type=int, default=1000)
    ap.add_argument("--pretrain", type=int, default=12_000)
    ap.add_argument("--critic", default="mlp")
    ap.add_argument("--settings", default=",".join(DEFAULT_SETTINGS))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    t_all = time.time()
    methods = args.methods.split(",")
    results: dict[str, Any] = {}
    for setting in args.settings.split(","):
        s = SETTINGS[setting]
        results[setting] = {m: [] for m in methods}
        for seed in range(args.seeds):
            init = None
            if s.get("pretrain"):
                prob = ControlProblem(setting, "cmdp", "", s["env"], s["limits"])
                init = pretrain_unconstrained(prob, 100 + seed, args.pretrain,
                                              steps_per_iter=args.steps_per_iter)  # fmt: skip
            for method in methods:
                results[setting][method].append(one_run(setting, method, seed, args, init))
        print(f"\n== {setting}: {s['env']} limits {s['limits']} ({args.seeds} seeds, "
              f"{args.budget} steps, critic {args.critic})")  # fmt: skip
        print("method".ljust(14) + "".join(k.rjust(18) for k in KEYS))
        for method, runs in results[setting].items():
            print(method.ljust(14) + "".join(ci([r[k] for r in runs]).rjust(18) for k in KEYS))
        base = results[setting].get("locu")
        if base:
            print("paired (method - locu):")
            for method, runs in results[setting].items():
                if method == "locu":
                    continue
                row = method.ljust(14)
                for k in ("final_return", "final_violation", "flips", "overshoot"):
                    d = np.array([r[k] for r in runs]) - np.array([b[k] for b in base])
                    row += f"{k}: {ci(d)}  "
                print(row)
    print(f"\ntotal {time.time() - t_all:.0f} s")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        for setting in results:
            plot(results, setting, args.out)
        (args.out / "results.json").write_text(json.dumps(results, default=float))
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
