"""Print the measured claims of the bandit optimizers (issue 24, items 1-3).

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bandits_claims.py --quick

1. GP-BTS on standardized Branin: cumulative and simple regret at equal evaluation count
   for batch sizes Q = 1, 4, 8, noiseless and with noise sd 0.2.
2. Nonlinear parametric BO (``param_bo``, randomized and LCB policies) against GP-BO
   (GP-BTS with Q = 1, i.e. GP Thompson sampling) and uniform random search on Branin (2-D)
   and Hartmann-6 (6-D): simple regret, and the coverage of ``mean +- beta c sigma`` on
   500 uniform held-out points after the run (GP-BTS's posterior bands beside it).
3. The 1-D convex bandit: samples to localize within eps against Delta_eps(f), samples to
   reach simple regret eps, over f_p(x) = H (|x - x*| / E0)^p, p = 1, 2, 3; log-log slopes.

Not a test: numbers depend on seeds; ``tests/solvers/bandits`` asserts the claims.
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from optiforge.solvers.bandits.convex1d import ConvexBisection, delta_eps, gap_at_radius  # noqa: E402
from optiforge.solvers.bandits.gp_bts import GPBatchedThompson  # noqa: E402
from optiforge.solvers.bandits.param_bo import NeuralParametricBO  # noqa: E402

# One definition of the test functions, shared with the claim tests.
from optiforge.solvers.bandits.testfns import (
    BRANIN_MIN,
    HARTMANN6_MIN,
    branin01,
    hartmann6,
)
from optiforge.solvers.bandits.testfns import noisy_run as drive

Fn = Callable[[np.ndarray], np.ndarray]


def gp_bts_table(seeds: range, budget: int) -> None:
    print(f"\n## 1. GP-BTS on Branin (range ~6), {budget} evaluations, seeds {list(seeds)}")
    print("noise sd | Q | cum. regret (mean) | x Q=1 | simple regret (mean) | wall s")
    for noise_sd in (0.0, 0.2):
        base = None
        for q in (1, 4, 8):
            t0 = time.perf_counter()
            cum, simple = [], []
            for s in seeds:
                opt = GPBatchedThompson(2, bounds=(np.zeros(2), np.ones(2)), seed=s, batch=q)
                gaps = drive(opt, branin01, budget, noise_sd, s) - BRANIN_MIN
                cum.append(gaps.sum())
                simple.append(gaps.min())
            c = float(np.mean(cum))
            base = c if base is None else base
            print(
                f"{noise_sd:8.1f} | {q} | {c:18.2f} | {c / base:5.2f} | {np.mean(simple):20.2e} "
                f"| {time.perf_counter() - t0:6.1f}"
            )


def coverage(opt: GPBatchedThompson | NeuralParametricBO, f: Fn, dim: int) -> list[float]:
    """Fraction of 500 held-out uniform points with ``|f - mean| <= beta sd``, beta = 1, 2, 3."""
    U = np.random.default_rng(7).random((500, dim))
    mean, sd = opt.predict(U)
    err = np.abs(f(U) - mean)
    return [float(np.mean(err <= b * sd)) for b in (1.0, 2.0, 3.0)]


def make_method(name: str, dim: int, seed: int) -> GPBatchedThompson | NeuralParametricBO:
    box = (np.zeros(dim), np.ones(dim))
    if name == "param_bo":
        return NeuralParametricBO(dim, bounds=box, seed=seed)
    if name == "param_bo lcb":
        return NeuralParametricBO(dim, bounds=box, seed=seed, policy="lcb")
    return GPBatchedThompson(dim, bounds=box, seed=seed)


def param_bo_table(seeds: dict[str, range], budgets: dict[str, int]) -> None:
    problems: dict[str, tuple[Fn, float, int]] = {
        "branin (2-D)": (branin01, BRANIN_MIN, 2),
        "hartmann6 (6-D)": (hartmann6, HARTMANN6_MIN, 6),
    }
    print("\n## 2. Nonlinear parametric BO vs GP-BO (gp_bts Q=1 = GP Thompson sampling)")
    print(
        "problem | method | budget | seeds | simple regret mean | median | cover b=1/2/3 | wall s"
    )
    for pname, (f, fmin, d) in problems.items():
        budget = budgets[pname]
        for mname in ("param_bo", "param_bo lcb", "gp_bts Q=1", "random"):
            t0 = time.perf_counter()
            regrets, covers = [], []
            for s in seeds[pname]:
                if mname == "random":
                    U = np.random.default_rng(s).random((budget, d))
                    regrets.append(float(f(U).min() - fmin))
                    continue
                opt = make_method(mname, d, s)
                regrets.append(float(drive(opt, f, budget, 0.0, s).min() - fmin))
                covers.append(coverage(opt, f, d))
            cov = "/".join(f"{c:.2f}" for c in np.mean(covers, axis=0)) if covers else "-"
            print(
                f"{pname} | {mname} | {budget} | {len(seeds[pname])} | {np.mean(regrets):.2e} | "
                f"{np.median(regrets):.2e} | {cov} | {time.perf_counter() - t0:.1f}"
            )
    print("nominal Gaussian coverage at beta = 1/2/3: 0.68/0.95/1.00")


SIGMA, H, E0 = 0.1, 0.1, 0.16


def power_bowl(p: int, xs: float) -> Fn:
    """``f_p(x) = H (|x - x*| / E0)^p``."""

    def f(x: np.ndarray) -> np.ndarray:
        return H * (np.abs(x - xs) / E0) ** p

    return f


def convex_run(p: int, eps: float, goal: str, seed: int) -> tuple[int, float, float]:
    xs = 0.3 + 0.4 * float(np.random.default_rng(seed).random())
    f = power_bowl(p, xs)

    opt = ConvexBisection(1, bounds=(np.zeros(1), np.ones(1)), seed=seed, eps=eps, goal=goal,
                          sigma=SIGMA)  # fmt: skip
    rng = np.random.default_rng(100 + seed)
    while not opt.done:
        X = opt.ask()
        opt.tell(X, f(X[:, 0]) + SIGMA * rng.standard_normal(len(X)))
    assert opt.samples_to_stop is not None
    x_hat = opt.recommend()
    return opt.samples_to_stop, float(abs(x_hat[0] - xs)), float(f(x_hat)[0])


def convex_table(seeds: range, levels: int) -> None:
    print(f"\n## 3. 1-D convex bandit, f_p = {H} (|x - x*| / {E0})^p, sigma {SIGMA}, seeds "
          f"{list(seeds)}; samples = geometric mean over seeds")  # fmt: skip
    print(
        "localize | p | radius | gap at radius (= level eps) | Delta_eps (width) | samples | all |x_hat - x*| <= radius"
    )
    deltas, counts = [], []
    for p in (1, 2, 3):
        eps_grid = [E0 * 2.0 ** (-j / p) for j in range(levels)]
        row = []
        for eps in eps_grid:
            runs = [convex_run(p, eps, "localize", s) for s in seeds]
            n = float(np.exp(np.mean(np.log([r[0] for r in runs]))))
            dlt = gap_at_radius(power_bowl(p, 0.5), 0.5, eps, 0.0, 1.0)  # same for interior x*
            width = delta_eps(power_bowl(p, 0.5), dlt, 0.0, 1.0, x_star=0.5)
            deltas.append(dlt)
            counts.append(n)
            row.append(n)
            ok = all(r[1] <= eps for r in runs)
            print(f"localize | {p} | {eps:.4f} | {dlt:.4f} | {width:.4f} | {n:10.0f} | {ok}")
        sl = np.polyfit(np.log(eps_grid), np.log(row), 1)[0]
        print(f"  p={p}: slope of log samples vs log eps = {sl:.2f}")
    pooled = np.polyfit(np.log(deltas), np.log(counts), 1)[0]
    print(f"pooled slope of log samples vs log level eps = {pooled:.2f} (claim: -2, up to logs)")
    print("simple regret | p | eps | samples | all f(x_hat) - f* <= eps")
    eps_grid = [0.2 * 2.0**-j for j in range(levels)]
    for p in (1, 2, 3):
        row = []
        for eps in eps_grid:
            runs = [convex_run(p, eps, "simple_regret", s) for s in seeds]
            n = float(np.exp(np.mean(np.log([r[0] for r in runs]))))
            row.append(n)
            print(f"simple regret | {p} | {eps:.4f} | {n:10.0f} | {all(r[2] <= eps for r in runs)}")
        sl = np.polyfit(np.log(eps_grid), np.log(row), 1)[0]
        print(f"  p={p}: slope of log samples vs log eps = {sl:.2f} (claim: -2 for every p)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer seeds and evaluations")
    ap.add_argument("--only", choices=["gp_bts", "param_bo", "convex1d"], default=None)
    args = ap.parse_args()
    threadpool_limits(1)
    seeds = range(3) if args.quick else range(5)
    if args.only in (None, "gp_bts"):
        gp_bts_table(seeds, 32 if args.quick else 48)
    if args.only in (None, "param_bo"):
        budgets = {"branin (2-D)": 30, "hartmann6 (6-D)": 30 if args.quick else 40}
        pseeds = {"branin (2-D)": seeds, "hartmann6 (6-D)": range(5)}
        param_bo_table(pseeds, budgets)
    if args.only in (None, "convex1d"):
        convex_table(seeds, 4 if args.quick else 5)


if __name__ == "__main__":
    main()
