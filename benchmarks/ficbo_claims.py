"""FICBO's claim, measured: it exploits informative feedback and stays robust to misleading
sources, against BO without feedback and a baseline that trusts the feedback.

Scenarios (``optiforge.solvers.bandits.ficbo``): held-out targets drawn from the prior
(1-D and 2-D) with one cheap source that is informative (``rho = 0.95`` through a random
monotone warp, scale and offset), irrelevant (``rho = 0``: an independent function) or
misleading (``rho = -0.95``: the sign flipped), and Forrester's function with its classic
low-fidelity model (correlated but with its minimizer elsewhere) and that model negated.

Arms: ``ficbo`` (history + feedback), ``ficbo_gate`` (the same with ``gate=True``, the
leave-one-out source guard), ``ficbo_no_feedback`` (the same transformer with
the feedback masked), ``gp_ei`` (BoTorch GP + log-EI over the same kind of candidate set,
no feedback), ``feedback_greedy`` (minimizes the source as if it were the target) and
``random``. Printed: normalized simple regret ``(best f - min f) / (max f - min f)`` after
the budget, mean +- standard error over functions (prior) or seeds (Forrester)::

    OMP_NUM_THREADS=1 python benchmarks/ficbo_claims.py --quick

Measured (full mode, shipped weights, 806 s on one busy core; mean +- se):

    scenario                     ficbo        no feedback  gp_ei        trusting     random
    prior 1-D informative        0.000+-0.000 0.009+-0.009 0.002+-0.002 0.013+-0.006 0.047
    prior 1-D irrelevant         0.010+-0.009 0.009+-0.009 0.002+-0.002 0.142+-0.033 0.047
    prior 1-D misleading         0.000+-0.000 0.009+-0.009 0.002+-0.002 0.198+-0.042 0.047
    prior 2-D informative        0.003+-0.001 0.062+-0.018 0.056+-0.019 0.033+-0.012 0.144
    prior 2-D irrelevant         0.062+-0.020 0.062+-0.018 0.056+-0.019 0.245+-0.026 0.144
    prior 2-D misleading         0.008+-0.006 0.062+-0.018 0.056+-0.019 0.273+-0.028 0.144
    Forrester low-fidelity       0.070+-0.035 0.072+-0.036 0.053+-0.031 0.165+-0.031 0.045
    Forrester flipped            0.049+-0.030 0.072+-0.036 0.053+-0.031 0.178+-0.036 0.045

What holds: informative feedback cuts the 2-D regret ~20x against both feedback-free
arms; a sign-flipped source is exploited, not feared (the reversal is learnt in
context); an irrelevant source costs nothing measurable; the trusting baseline is 3-30x
worse wherever the source misleads. What does not: on Forrester no arm separates from
random at 10 evaluations (some seeds stay in the local minimum, regret 0.23), so the
low-fidelity source gives no measurable gain there; and without feedback the small
transformer is no better than GP-EI (1-D: 0.009 vs 0.002).
"""

from __future__ import annotations

import argparse
import math
import time
import warnings

import numpy as np
import torch

from optiforge.solvers.asktell import Array, AskTellOptimizer, Bounds, Feedback, minimize
from optiforge.solvers.bandits.ficbo import (
    CLAIM_METHODS,
    FeedbackTask,
    forrester_task,
    prior_task,
    regret_after,
)


class GPEI(AskTellOptimizer):
    """GP (BoTorch ``SingleTaskGP``, fitted each step) + log-EI maximized over candidates:
    half uniform, half moves around the best three points, as FICBO's. No feedback."""

    name = "gp_ei"

    def __init__(self, dim: int, *, bounds: Bounds | None = None, seed: int = 0,
                 n_candidates: int = 256) -> None:  # fmt: skip
        super().__init__(dim, bounds=bounds, seed=seed)
        self.n_init, self.n_candidates = dim + 2, n_candidates

    def _ask(self) -> Array:
        from botorch.acquisition.analytic import LogExpectedImprovement
        from botorch.fit import fit_gpytorch_mll
        from botorch.models import SingleTaskGP
        from botorch.models.transforms import Standardize
        from gpytorch.mlls import ExactMarginalLogLikelihood

        if len(self.y) < self.n_init:
            return self._uniform(1)
        X = torch.as_tensor(self.X, dtype=torch.float64)  # the box is [0, 1]^d here
        Y = -torch.as_tensor(self.y, dtype=torch.float64)[:, None]
        gp = SingleTaskGP(X, Y, outcome_transform=Standardize(1))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit_gpytorch_mll(ExactMarginalLogLikelihood(gp.likelihood, gp))
        n_l = self.n_candidates // 2
        centers = self.X[np.argsort(self.y)[:3]]
        c = centers[self.rng.integers(0, len(centers), n_l)]
        scale = np.where(self.rng.random((n_l, 1)) < 0.5, 0.02, 0.1)
        L = np.clip(c + scale * self.rng.standard_normal((n_l, self.dim)), 0, 1)
        C = np.vstack([self.rng.random((self.n_candidates - n_l, self.dim)), L])
        with torch.no_grad():
            acq = LogExpectedImprovement(gp, best_f=Y.max())(torch.as_tensor(C)[:, None, :])
        return C[int(acq.argmax())][None, :]

    def _tell(self, X: Array, y: Array, feedback: Feedback) -> None:
        pass


def run(task: FeedbackTask, method: str, budget: int, seed: int) -> float:
    if method == "gp_ei":
        opt = GPEI(task.dim, bounds=(np.zeros(task.dim), np.ones(task.dim)), seed=seed)
        return task.regret(float(minimize(task.f, opt, budget).y.min()))
    if method == "ficbo_gate":
        return regret_after(task, "ficbo", budget, seed=seed, gate=True)
    return regret_after(task, method, budget, seed=seed)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="8 functions per dimension, 5 seeds")
    ap.add_argument("--no-gp", action="store_true", help="skip the GP-EI arm (the slowest)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    n_fun, n_seed = (8, 5) if args.quick else (24, 10)
    methods = [CLAIM_METHODS[0], "ficbo_gate", CLAIM_METHODS[1],
               *([] if args.no_gp else ["gp_ei"]), *CLAIM_METHODS[2:]]  # fmt: skip
    budgets = {1: 12, 2: 20}
    scenarios: list[tuple[str, list[tuple[FeedbackTask, int]], int]] = []
    for dim in (1, 2):
        for label, rho in (("informative", 0.95), ("irrelevant", 0.0), ("misleading", -0.95)):
            tasks = [(prior_task(i, dim, rho), 0) for i in range(n_fun)]
            scenarios.append((f"prior {dim}-D, {label} (rho={rho:+.2f})", tasks, budgets[dim]))
    for flipped in (False, True):
        t = forrester_task(flipped=flipped)
        scenarios.append((f"{t.name} low-fidelity source", [(t, s) for s in range(n_seed)], 10))
    t0 = time.perf_counter()
    header = f"{'scenario':<44} {'n':>3} {'budget':>6} " + " ".join(f"{m:>17}" for m in methods)
    print(header)
    print("-" * len(header))
    for label, tasks, budget in scenarios:
        cells = []
        for m in methods:
            r = np.array([run(task, m, budget, seed) for task, seed in tasks])
            cells.append(f"{r.mean():.3f} +- {r.std(ddof=1) / math.sqrt(len(r)):.3f}")
        print(f"{label:<44} {len(tasks):>3} {budget:>6} " + " ".join(f"{c:>17}" for c in cells),
              flush=True)  # fmt: skip
    print(f"\nnormalized simple regret, mean +- se; {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
