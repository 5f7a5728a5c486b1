"""Ground truth of the CBO suite: true optima of E[Y|do] per benchmark (our computation).

Values in ``ground_truth.json`` were computed by ``python -m
optiforge.evals.suites.cbo.ground_truth``:

1. a search per truth set (``true_optimum``: grid, then L-BFGS-B, over Monte Carlo
   estimates with common random numbers, ``GT_N_MC`` units, seed ``GT_SEED``) finds each
   set's minimiser and the scale of its values (``grid_max``);
2. each set's value is then stored **exactly** where the spec carries a closed form of
   ``E[Y | do(S = x)]`` (the closed form is minimised itself: grid, L-BFGS-B from the best
   grid points, the search's minimiser and known basins), and otherwise as an independent
   control-variate Monte Carlo estimate at the search's minimiser with standard error at
   most ``REL_SE`` times the task's value scale (``se_target``, seed ``EVAL_SEED``);
3. the optimum is the best per-set entry, copied as it is (so the two always agree).

The suite's evaluator (:meth:`CBOTask.true_value`) measures every candidate with the same
estimator (closed form, or the same Monte Carlo with the same target and seed), so
re-measuring the stored optimum's ``x`` reproduces its value exactly. They are ours, not
copied from any paper; tests recompute some of them and check consistency.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import scipy.optimize

from optiforge.errors import InvalidTask
from optiforge.evals.suites.cbo.scms import BenchmarkSpec, build
from optiforge.solvers.cbo import CBOConfig, GroundTruth, SetOptimum, candidate_grid, true_optimum

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

EVAL_SEED = 777
"""Seed of the suite's Monte Carlo evaluator (stored optima and candidates alike)."""
REL_SE = 1e-4
"""Monte Carlo standard error target, relative to ``max(|y*|, value range)``."""
MAX_UNITS = 1 << 24


def se_target_for(value: float, value_range: float) -> float:
    """The absolute standard error the suite's Monte Carlo estimates aim at."""
    return REL_SE * max(abs(value), value_range, 1e-3)


def expected_outcome(spec: BenchmarkSpec, values: Mapping[str, float], se_target: float) -> tuple[float, float, str]:  # fmt: skip
    """``(E[Y | do(values)], its standard error, method)``: the closed form when the spec
    has one for this set, else the control-variate Monte Carlo estimate (seed ``EVAL_SEED``)."""
    fixed = spec.scm.check_intervention(values)
    cf = spec.closed_forms.get(frozenset(fixed))
    if cf is not None:
        return float(cf(dict(fixed))), 0.0, "closed_form"
    est, se, _ = spec.scm.expected_outcome_precise(fixed, se_target=se_target, seed=EVAL_SEED,
                                                   max_n=MAX_UNITS)  # fmt: skip
    return est, se, "monte_carlo"


def _minimise_closed_form(spec: BenchmarkSpec, es: list[str], start: Mapping[str, float]) -> tuple[dict[str, float], float]:  # fmt: skip
    cf = spec.closed_forms[frozenset(es)]
    lo = np.array([spec.scm.domains[v].low for v in es])
    hi = np.array([spec.scm.domains[v].high for v in es])

    def f(u: np.ndarray) -> np.ndarray:
        raw = lo + np.atleast_2d(u) * (hi - lo)
        return np.asarray(cf({v: raw[:, j] for j, v in enumerate(es)}), dtype=float).reshape(-1)

    grid = candidate_grid(len(es), CBOConfig(grid_1d=4001, grid_2d=201, n_sobol=1 << 14), GT_SEED)
    vals = f(grid)
    starts = [grid[i] for i in np.argsort(vals)[:5]]
    for s in [start, *spec.optimum_starts]:
        if set(s) == set(es):
            starts.append((np.array([s[v] for v in es]) - lo) / (hi - lo))
    best_u, best_v = grid[int(np.argmin(vals))], float(vals.min())
    for u0 in starts:
        res = scipy.optimize.minimize(lambda u: float(f(u)[0]), np.clip(u0, 0, 1), method="L-BFGS-B",
                                      bounds=[(0.0, 1.0)] * len(es), options={"ftol": 1e-15, "gtol": 1e-12})  # fmt: skip
        v = float(f(np.clip(res.x, 0, 1))[0])
        if v < best_v:
            best_u, best_v = np.clip(res.x, 0.0, 1.0), v
    raw = lo + best_u * (hi - lo)
    return {v: float(raw[j]) for j, v in enumerate(es)}, best_v


def compute(name: str, *, n_mc: int = GT_N_MC, seed: int = GT_SEED) -> GroundTruth:
    """Recompute one benchmark's ground truth (see the module docstring)."""
    spec = build(name)
    search = true_optimum(spec.scm, spec.truth_sets or spec.exploration_sets, n_mc=n_mc, seed=seed)
    scale = max(p.grid_max for p in search.per_set) - search.value
    target = se_target_for(search.value, scale)
    per: list[SetOptimum] = []
    for p in search.per_set:
        es = list(p.exploration_set)
        if frozenset(es) in spec.closed_forms:
            x, v = _minimise_closed_form(spec, es, p.x)
            per.append(SetOptimum(exploration_set=es, x=x, value=v, grid_max=p.grid_max,
                                  se=0.0, method="closed_form"))  # fmt: skip
            continue
        est, se, units = spec.scm.expected_outcome_precise(p.x, se_target=target, seed=EVAL_SEED,
                                                           max_n=MAX_UNITS)  # fmt: skip
        per.append(SetOptimum(exploration_set=es, x=dict(p.x), value=est, grid_max=p.grid_max,
                              se=se, method="monte_carlo", n_units=units))  # fmt: skip
    top = min(per, key=lambda p: p.value)
    return GroundTruth(value=top.value, exploration_set=top.exploration_set, x=top.x, per_set=per,
                       n_mc=n_mc, seed=seed, se=top.se, method=top.method, se_target=target,
                       eval_seed=EVAL_SEED)  # fmt: skip


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
