"""Statistics the suites and the harness share (below both: evals never import upward)."""

from __future__ import annotations

import math


def mean_ci95(values: list[float]) -> tuple[float, float | None]:
    """Mean and half-width of the 95% Student-t interval (None for fewer than 2 values)."""
    from scipy import stats

    n = len(values)
    if n == 0:
        return math.nan, None
    m = sum(values) / n
    if n < 2:
        return m, None
    var = sum((v - m) ** 2 for v in values) / (n - 1)
    half = float(stats.t.ppf(0.975, n - 1)) * math.sqrt(var / n)
    return m, half
