"""Reference runs: known-graph CBO and plain BO on suite tasks (the back end's own check).

``python -m optiforge.evals.suites.cbo.reference dev 3`` runs both on every dev task for 3
seeds and prints, per task, the final regret, whether it is within tolerance, and the
number of trials known-graph CBO needed to get there.
"""

from __future__ import annotations

import sys
import time

from pydantic import BaseModel, ConfigDict

from optiforge.evals.suites.cbo.benchmark import CBOBenchmark, CBOTask
from optiforge.evals.suites.cbo.metrics import summarize
from optiforge.solvers.cbo import CBOConfig, CBOTrace, run_bo, run_cbo


class ReferenceResult(BaseModel):
    """Known-graph CBO (and plain BO) on one task over seeds."""

    model_config = ConfigDict(extra="forbid")

    task: str
    y_star: float
    tolerance: float
    cbo_final: list[float]
    cbo_trials_to_tolerance: list[int | None]
    """1-based trial index at which the incumbent's true value first got within tolerance."""
    bo_final: list[float]
    summary: dict[str, float]
    seconds: float


def trials_to_tolerance(trace: CBOTrace, y_star: float, tol: float) -> int | None:
    """First trial (1-based) whose incumbent is within ``tol`` of ``y_star``; None if never."""
    for t in trace.trials:
        if t.best_true - y_star <= tol:
            return t.index + 1
    return None


REFERENCE_STUCK_PATIENCE = 3
"""Acquisitions without improvement of the incumbent's posterior mean before EI targets
``best - REFERENCE_STUCK_MARGIN`` (``CBOConfig.stuck_patience``): plain EI settles in
CompleteGraph's and Synthetic2's local optima (dev, 30 trials: 18/21 within tolerance),
the exploratory target after 3 stale acquisitions gets 20/21 and, with CompleteGraph's
50-trial budget, 21/21."""
REFERENCE_STUCK_MARGIN = 1.0
"""In units of the observational sd of the target."""


def reference_config(task: CBOTask) -> CBOConfig:
    """The known-graph reference's settings: the task's budget (``n_trials`` interventions
    and ``budget_cost``, whichever binds first) and the exploratory stuck rule."""
    return CBOConfig(
        n_trials=task.n_trials, budget_cost=task.budget_cost,
        stuck_patience=REFERENCE_STUCK_PATIENCE, stuck_margin=REFERENCE_STUCK_MARGIN,
    )  # fmt: skip


def run_reference(task: CBOTask, seeds: list[int], config: CBOConfig | None = None,
                  with_bo: bool = True) -> ReferenceResult:  # fmt: skip
    """Known-graph CBO (exploration sets of the task) and plain BO, by default with
    ``reference_config(task)`` (plain BO ignores the stuck rule)."""
    cfg = config or reference_config(task)
    t0 = time.perf_counter()
    y_star, tol = task.true_optimum.value, task.tolerance
    cbo = [
        run_cbo(task.scm, exploration_sets=task.exploration_sets, config=cfg, seed=s) for s in seeds
    ]
    bo = [run_bo(task.scm, config=cfg, seed=s) for s in seeds] if with_bo else []
    summ = summarize(cbo, y_star, reference=bo or None, tolerance=tol)
    return ReferenceResult(
        task=task.name, y_star=y_star, tolerance=tol,
        cbo_final=[t.best_true for t in cbo],
        cbo_trials_to_tolerance=[trials_to_tolerance(t, y_star, tol) for t in cbo],
        bo_final=[t.best_true for t in bo], summary=summ, seconds=time.perf_counter() - t0,
    )  # fmt: skip


def main(split: str = "dev", n_seeds: int = 3, names: list[str] | None = None) -> None:
    """Print one JSON line per task."""
    for task in CBOBenchmark().tasks(split):
        if names and task.name not in names:
            continue
        print(run_reference(task, list(range(n_seeds))).model_dump_json(), flush=True)


if __name__ == "__main__":
    args = sys.argv[1:]
    main(args[0] if args else "dev", int(args[1]) if len(args) > 1 else 3, args[2:] or None)
