"""CBO metrics: best E[Y|do] vs cumulative cost, simple regret, the gap metric, seed CIs."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from scipy import stats

from optiforge.errors import InvalidTask
from optiforge.solvers.cbo import CBOTrace


def gap_metric(y_init: float, y_last: float, y_star: float) -> float:
    """``clip((y_last - y_init) / (y_star - y_init), 0, 1)``; 1 when y_init is already optimal."""
    den = y_star - y_init
    if abs(den) < 1e-12:
        return 1.0
    return float(np.clip((y_last - y_init) / den, 0.0, 1.0))


def mean_ci(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Mean and half-width of a Student-t interval over seeds (half-width 0 for one value)."""
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        raise InvalidTask("mean_ci of no values")
    if a.size == 1:
        return float(a[0]), 0.0
    half = stats.t.ppf(0.5 + level / 2, a.size - 1) * a.std(ddof=1) / np.sqrt(a.size)
    return float(a.mean()), float(half)


def best_at_cost(trace: CBOTrace, cost_grid: np.ndarray) -> np.ndarray:
    """Best true E[Y|do] reached with cumulative cost <= c, for each c (``g``) -> ``g``.

    NaN before the first trial completes.
    """
    c, b = trace.best_vs_cost()
    return step_at(c, b, cost_grid)


def step_at(cost: np.ndarray, best: np.ndarray, cost_grid: np.ndarray) -> np.ndarray:
    """The step function ``best`` (after cumulative ``cost``) read at ``cost_grid``."""
    idx = np.searchsorted(cost, cost_grid, side="right") - 1
    return np.where(idx >= 0, best[np.clip(idx, 0, None)], np.nan)


def band(rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Column mean and 95% t half-width of ``rows`` (seeds x grid), ignoring NaNs."""
    n = np.sum(~np.isnan(rows), axis=0)
    with warnings.catch_warnings():  # all-NaN columns (before any trial) stay NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        mean = np.nanmean(rows, axis=0)
        sd = np.nanstd(rows, axis=0, ddof=1) if rows.shape[0] > 1 else np.zeros_like(mean)
    tq = np.where(n > 1, stats.t.ppf(0.975, np.maximum(n - 1, 1)), 0.0)
    return mean, np.nan_to_num(tq * sd / np.sqrt(np.maximum(n, 1)))


def curve(traces: Sequence[CBOTrace], cost_grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and 95% half-width over seeds of ``best_at_cost`` (``g`` each)."""
    return band(np.stack([best_at_cost(t, cost_grid) for t in traces]))


def summarize(
    traces: Sequence[CBOTrace],
    y_star: float,
    reference: Sequence[CBOTrace] | None = None,
    tolerance: float | None = None,
) -> dict[str, float]:
    """Simple regret at budget, gap metric, and (with ``reference``, paired by position) the
    regret gap to e.g. known-graph CBO; each as mean and 95% half-width over seeds."""
    if not traces:
        raise InvalidTask("summarize needs at least one trace")
    regret = [t.best_true - y_star for t in traces]
    gap = [gap_metric(t.trials[0].best_true, t.best_true, y_star) for t in traces]
    out: dict[str, float] = {}
    out["simple_regret_mean"], out["simple_regret_ci95"] = mean_ci(regret)
    out["gap_mean"], out["gap_ci95"] = mean_ci(gap)
    out["cost_mean"], out["cost_ci95"] = mean_ci([t.trials[-1].cumulative_cost for t in traces])
    if tolerance is not None:
        out["fraction_within_tolerance"] = float(np.mean([r <= tolerance for r in regret]))
    if reference is not None:
        if len(reference) != len(traces):
            raise InvalidTask("reference traces must pair one-to-one with traces (same seeds)")
        diff = [a.best_true - b.best_true for a, b in zip(traces, reference, strict=True)]
        out["regret_gap_to_reference_mean"], out["regret_gap_to_reference_ci95"] = mean_ci(diff)
    return out
