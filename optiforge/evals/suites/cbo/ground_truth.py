"""Ground truth of the CBO suite: true optima of E[Y|do] per benchmark (our computation).

Values in ``ground_truth.json`` were computed by ``python -m
optiforge.evals.suites.cbo.ground_truth`` with ``true_optimum`` (grid over each
exploration set, then L-BFGS-B, Monte Carlo with common random numbers: ``n_mc`` units,
seed ``seed``). They are ours, not copied from any paper; a test recomputes some of them.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import minimize_scalar

from optiforge.errors import InvalidTask
from optiforge.evals.suites.cbo.scms import build
from optiforge.solvers.cbo import GroundTruth, true_optimum

GT_PATH = Path(__file__).with_name("ground_truth.json")
GT_N_MC = 5000
GT_SEED = 0

ALL_NAMES: tuple[str, ...] = (
    "toy_graph", "complete_graph", "psa", "epidemiology", "extended_epidemiology",
    "synthetic2", "independent", "graph4nodes", "dropwave", "alpine2",
    "complete_graph_costs",
    "random_dag_6_s0", "random_dag_10_s0", "random_dag_15_s0",
    "random_dag_6_s1", "random_dag_10_s1", "random_dag_15_s1",
)  # fmt: skip


EVAL_N_MC = 20000
EVAL_SEED = 777
"""The suite's candidate evaluator (``suite.CBOTask.true_value``): the stored optimum value
is re-measured with it so that regret is measured by one estimator throughout."""


def _alpine2_start() -> dict[str, float]:
    """Alpine2's global optimum is separable: every factor sqrt(x) sin(x) at its maximum."""
    res = minimize_scalar(lambda x: -np.sqrt(x) * np.sin(x), bounds=(6.0, 9.0), method="bounded")
    return {f"x{i}": float(res.x) for i in range(6)}


def compute(name: str, *, n_mc: int = GT_N_MC, seed: int = GT_SEED) -> GroundTruth:
    """Recompute one benchmark's ground truth (value re-measured by the suite's evaluator)."""
    spec = build(name)
    gt = true_optimum(spec.scm, spec.truth_sets or spec.exploration_sets, n_mc=n_mc, seed=seed)
    if name == "alpine2":
        # A grid/Sobol search finds a local optimum of this 6-D product; the analytic one wins.
        x = _alpine2_start()
        v = float(
            spec.scm.expected_outcome_batch(list(x), np.array([list(x.values())]), n_mc, seed)[0]
        )
        if v < gt.value:
            gt = gt.model_copy(update={"value": v, "x": x, "exploration_set": list(x)})
    xs = np.array([[gt.x[k] for k in gt.exploration_set]])
    value = float(spec.scm.expected_outcome_batch(gt.exploration_set, xs, EVAL_N_MC, EVAL_SEED)[0])
    return gt.model_copy(update={"value": value})


def load() -> dict[str, GroundTruth]:
    """The stored ground truth, by benchmark name."""
    if not GT_PATH.exists():
        raise InvalidTask(
            f"missing {GT_PATH}; run python -m optiforge.evals.suites.cbo.ground_truth"
        )
    raw = json.loads(GT_PATH.read_text())
    return {k: GroundTruth.model_validate(v) for k, v in raw.items()}


def main(names: list[str] | None = None) -> None:
    """Recompute and store the ground truth of ``names`` (default all)."""
    out = {k: v.model_dump() for k, v in load().items()} if GT_PATH.exists() else {}
    for name in names or list(ALL_NAMES):
        gt = compute(name)
        out[name] = gt.model_dump()
        print(f"{name}: {gt.value:.4f} at {gt.exploration_set} {gt.x}", flush=True)
        GT_PATH.write_text(json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:] or None)
