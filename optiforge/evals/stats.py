"""Statistics the suites and the harness share (below both: evals never import upward)."""

from __future__ import annotations

import math
from typing import Any


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


def metrics_over_seeds(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """Per method, every numeric metric of the harness's re-measurements (``verification``)
    as ``{"mean", "ci95", "seeds"}``: each seed's mean over tasks, then the mean and the 95%
    t-interval half-width over seeds (``sandbox_s`` and non-finite values left out)."""
    per: dict[str, dict[str, dict[Any, list[float]]]] = {}
    for r in rows:
        metrics = (r.get("verification") or {}).get("metrics") or {}
        for k, v in metrics.items():
            if isinstance(v, int | float) and math.isfinite(v) and k != "sandbox_s":
                by_seed = per.setdefault(str(r.get("method")), {}).setdefault(k, {})
                by_seed.setdefault(r.get("seed"), []).append(float(v))
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for method, m in sorted(per.items()):
        out[method] = {}
        for k, by_seed in m.items():
            mean, half = mean_ci95([sum(v) / len(v) for v in by_seed.values()])
            out[method][k] = {"mean": mean, "ci95": half, "seeds": len(by_seed)}
    return out


def metrics_table(per_method: dict[str, dict[str, Any]], keys: list[str]) -> list[str]:
    """Markdown rows ``| method | k1 | ... |`` of ``metrics_over_seeds`` output: each cell
    the mean ± the 95% interval half-width (``-`` where a method lacks the metric)."""
    lines = ["| method | " + " | ".join(keys) + " |", "|---" * (len(keys) + 1) + "|"]
    for method, m in per_method.items():
        cells = []
        for k in keys:
            d = m.get(k) or {}
            mean, ci = d.get("mean"), d.get("ci95")
            cells.append(
                "-" if mean is None else f"{mean:.3g}" + ("" if ci is None else f" ± {ci:.2g}")
            )
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    return lines
