"""The random exploration step for d-stationarity: claims (optiforge/solvers/structured/dstationarity.py).

Run (CPU, one core, about a minute):

    OMP_NUM_THREADS=1 python benchmarks/dstat_claims.py --seeds 20 --out runs/dstat_claims

Scenarios (every one over ``--seeds`` instances, instance seed = run seed):

- ``dc-stall n/k``: ``stalled_dc_instance`` (box-constrained DC program, ``k`` pieces of
  ``h`` tied at ``x*``, ``x*`` on the box's boundary), every method started at ``x*``.
- ``pl-kink n/m``: ``kinked_composite_instance`` (robust phase retrieval with ``m``
  measurements plus a concave kink, rotated box), started on the kink's tie set near the
  ground truth.
- ``dc-trap n/2``: ``trapped_dc_instance`` from a uniform random start: DCA with either
  rule falls into a non-d-stationary vertex whose descent cone is narrow (the wrapped
  method's success per round then depends on ``trials``).
- ``dc-generic n/k``: ``random_dc_instance`` from a uniform random start (the base works).
- ``pl-generic n/m``: the kinked composite started off the tie set (the base works).

Methods: the base (``DCA`` / ``ProxLinear``) with the barycentre rule at ties
(``average``, the rule that can stall) or the first active piece (``first``), and the
base wrapped with ``RandomExploration`` (``+xT``: T trials a round, steps log-uniform in
[1e-4, 1], directions in the tangent cone, ``(sparse-cone)`` from sparse Gaussians projected on it,
``(sphere)`` uniform on the sphere).

Per run: the certificate ``min F'(x; d)`` over feasible ``|d|_inf <= 1`` at the end
(d-stationary when >= -1e-6), the final objective, base iterations (all restarts), the
exploration's sampled directions (trials) and function evaluations (a direction with
no feasible step costs none), CPU seconds. Intervals: 95% Student t over seeds;
``dF vs base`` is the paired (same instance) difference of the final objective against
the unwrapped base with the same rule. Writes OUT/summary.json and OUT/summary.md.
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
from scipy import stats

from optiforge.solvers.structured.dstationarity import (
    DCA,
    ProxLinear,
    RandomExploration,
    kinked_composite_instance,
    random_dc_instance,
    stalled_dc_instance,
    trapped_dc_instance,
)

TOL = 1e-6


def t_interval(xs: list[float]) -> tuple[float, float]:
    """Mean and 95% t half-width (0 for one value)."""
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, 0.0
    return m, float(stats.t.ppf(0.975, len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs)))


def fmt(xs: list[float], digits: int = 3) -> str:
    m, h = t_interval(xs)
    return f"{m:.{digits}g} ± {h:.2g}"


Instance = tuple[Any, np.ndarray, Callable[..., Any]]  # (problem, x0, base factory)


def instances(name: str, seed: int) -> Instance:
    kind, size = name.split(" ")
    a, b = (int(v) for v in size.split("/"))
    if kind == "dc-stall":
        p, xs = stalled_dc_instance(n=a, pieces=b, seed=seed)
        return p, xs, DCA
    if kind == "dc-trap":
        p, _ = trapped_dc_instance(n=a, seed=seed)
        return p, np.random.default_rng(1000 + seed).uniform(-1, 1, a), DCA
    if kind == "dc-generic":
        p = random_dc_instance(n=a, pieces=b, seed=seed)
        return p, np.random.default_rng(seed).uniform(-1, 1, a), DCA
    q, x0, _ = kinked_composite_instance(n=a, m=b, seed=seed)
    if kind == "pl-generic":
        w = q.B[0][1] / np.linalg.norm(q.B[0][1])
        x0 = x0 + 0.3 * w
    return q, x0, ProxLinear


METHODS = ["average", "first", "average+x64", "average+x64(sphere)"]
TRAP_METHODS = [
    "first",
    "first+x64",
    "first+x256",
    "first+x1024",
    "first+x1024(sphere)",
    "first+x64(sparse-cone)",
    "first+x256(sparse-cone)",
]


def run_one(name: str, method: str, seed: int) -> dict[str, float]:
    problem, x0, factory = instances(name, seed)
    rule = method.split("+")[0]
    t0 = time.process_time()
    if "+x" in method:
        direction = method.split("(")[1].rstrip(")") if "(" in method else "cone"
        trials = int(method.split("+x")[1].split("(")[0])
        res = RandomExploration(
            factory(problem, rule=rule), trials=trials, direction=direction, seed=seed
        ).run(x0)
        x, iters, evals, accepted = res.x, res.base_iterations, res.exploration_evals, res.accepted
        trials = res.exploration_trials
    else:
        run = factory(problem, rule=rule).run(x0)
        x, iters, evals, accepted, trials = run.x, run.iterations, 0, 0, 0
    cpu = time.process_time() - t0
    cert = problem.min_directional_derivative(x)
    return {
        "cert": cert,
        "dstat": float(cert >= -TOL),
        "F": problem.value(x),
        "iters": float(iters),
        "evals": float(evals),
        "trials": float(trials),
        "accepted": float(accepted),
        "cpu": cpu,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--out", type=Path, default=Path("runs/dstat_claims"))
    args = ap.parse_args()
    scenarios = [
        "dc-stall 6/4",
        "dc-stall 20/8",
        "dc-trap 8/2",
        "dc-trap 16/2",
        "pl-kink 6/15",
        "pl-kink 12/30",
        "dc-generic 10/10",
        "dc-generic 20/20",
        "pl-generic 6/15",
        "pl-generic 12/30",
    ]
    results: dict[str, dict[str, list[dict[str, float]]]] = {}
    for name in scenarios:
        results[name] = {}
        for method in TRAP_METHODS if name.startswith("dc-trap") else METHODS:
            results[name][method] = [run_one(name, method, s) for s in range(args.seeds)]
            print(f"done {name} {method}", flush=True)
    lines = [
        f"seeds: {args.seeds}; d-stationary: min F'(x; d) >= -{TOL:g}; ± = 95% t half-width",
        "",
        "| scenario | method | d-stationary | certificate min F'(x;d) | F final | dF vs base "
        "(paired) | base iterations | exploration trials / evals | accepted steps | CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    summary: dict[str, Any] = {}
    for name, by_method in results.items():
        for method, rs in by_method.items():
            base = by_method[method.split("+")[0]]
            dF = [r["F"] - b["F"] for r, b in zip(rs, base, strict=True)]
            row = {k: t_interval([r[k] for r in rs]) for k in rs[0]}
            row["dF"] = t_interval(dF)
            summary[f"{name} | {method}"] = row
            n_ok = int(sum(r["dstat"] for r in rs))
            lines.append(
                f"| {name} | {method} | {n_ok}/{len(rs)} | {fmt([r['cert'] for r in rs])} | "
                f"{fmt([r['F'] for r in rs])} | {fmt(dF)} | {fmt([r['iters'] for r in rs])} | "
                f"{fmt([r['trials'] for r in rs])} / {fmt([r['evals'] for r in rs])} | {fmt([r['accepted'] for r in rs])} | "
                f"{fmt([r['cpu'] for r in rs], 2)} |"
            )
    text = "\n".join(lines)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.md").write_text(text + "\n")
    (args.out / "summary.json").write_text(
        json.dumps({"seeds": args.seeds, "rows": summary}, indent=1)
    )


if __name__ == "__main__":
    main()
