"""The CBO suite's own eval metrics, summary tables and cost plot.

From the runner's rows (``results.jsonl``) of ``optiforge eval ... --bench cbo``:

- per task and method: simple regret at budget, the gap metric, the fraction of seeds
  within tolerance and the cost spent (mean ± 95% t-interval over seeds), all taken from
  the task's own re-measurement (``verification.metrics``);
- per task and method: the regret gap to known-graph CBO, paired by seed
  (``regret(method) - regret(known-graph)``; negative = better than the known graph);
- per method, over all runs: runs within tolerance and the mean gap metric;
- ``cost_convergence.png``: best true E[Y|do] vs cumulative intervention cost.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from optiforge.evals.suites.cbo.metrics import band, mean_ci, step_at

REFERENCE_METHOD = "known-graph-cbo"
"""The method the regret gap is measured against (agent-cbo's known-graph baseline)."""


def _metric_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows the task verified, with the verification metrics the suite needs."""
    out = []
    for r in rows:
        m = (r.get("verification") or {}).get("metrics") or {}
        if r.get("verified") and "simple_regret" in m:
            out.append(r)
    return out


def _stat(values: list[float]) -> dict[str, float]:
    mean, half = mean_ci(values)
    return {"mean": mean, "ci95": half}


def suite_metrics(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"per_task": {task: {method: {...}}}, "totals": {method: {...}}}`` (module doc)."""
    good = _metric_rows(rows)
    per_task: dict[str, dict[str, Any]] = {}
    by_key: dict[tuple[str, str], dict[int, dict[str, float]]] = {}
    for r in good:
        by_key.setdefault((r["task"], r["method"]), {})[int(r["seed"])] = r["verification"][
            "metrics"
        ]
    for (task, method), seeds in sorted(by_key.items()):
        ms = list(seeds.values())
        entry: dict[str, Any] = {
            "n_seeds": len(ms),
            "simple_regret": _stat([m["simple_regret"] for m in ms]),
            "gap": _stat([m.get("gap", math.nan) for m in ms]),
            "within_tolerance": int(sum(m["within_tolerance"] for m in ms)),
            "cost": _stat([m["cost"] for m in ms]),
        }
        ref = by_key.get((task, REFERENCE_METHOD))
        if ref is not None and method != REFERENCE_METHOD:
            common = sorted(set(seeds) & set(ref))
            if common:
                diff = [seeds[s]["simple_regret"] - ref[s]["simple_regret"] for s in common]
                entry["regret_gap_to_known_graph"] = {**_stat(diff), "n_pairs": len(common)}
        per_task.setdefault(task, {})[method] = entry
    totals: dict[str, dict[str, Any]] = {}
    for method in sorted({m for _, m in by_key}):
        ms = [v for (_, m), seeds in by_key.items() if m == method for v in seeds.values()]
        totals[method] = {
            "runs": len(ms),
            "within_tolerance": int(sum(m["within_tolerance"] for m in ms)),
            "gap": _stat([m.get("gap", math.nan) for m in ms]),
        }
    return {"per_task": per_task, "totals": totals, "reference_method": REFERENCE_METHOD}


def _pm(s: dict[str, float] | None, digits: int = 3) -> str:
    if not s or s.get("mean") is None or not math.isfinite(s["mean"]):
        return "-"
    half = s.get("ci95")
    return f"{s['mean']:.{digits}g}" + (f" ± {half:.2g}" if half else "")


def report_sections(summary: dict[str, Any]) -> list[str]:
    """Markdown: regret / within-tolerance table, gap-to-known-graph table, totals."""
    sm = summary.get("suite_metrics") or {}
    per_task, totals = sm.get("per_task") or {}, sm.get("totals") or {}
    if not per_task:
        return []
    methods = [m for m in summary.get("methods", []) if m in totals]
    lines = [
        "## Causal-BO metrics",
        "",
        "Simple regret at budget (mean ± 95% t-interval over seeds) and seeds within tolerance.",
        "",
        "| task | " + " | ".join(methods) + " |",
        "|---|" + "---|" * len(methods),
    ]
    for task, per in per_task.items():
        cells = []
        for m in methods:
            e = per.get(m)
            cells.append(
                f"{_pm(e['simple_regret'])} ({e['within_tolerance']}/{e['n_seeds']})" if e else "-"
            )
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    lines.append(
        "| **runs within tolerance** | "
        + " | ".join(f"{totals[m]['within_tolerance']}/{totals[m]['runs']}" for m in methods)
        + " |"
    )
    lines.append(
        "| **mean gap metric** | " + " | ".join(_pm(totals[m]["gap"]) for m in methods) + " |"
    )
    others = [m for m in methods if m != sm.get("reference_method")]
    if any(
        "regret_gap_to_known_graph" in per.get(m, {}) for per in per_task.values() for m in others
    ):
        lines += [
            "",
            f"Regret gap to {sm.get('reference_method')}, paired by seed (negative: better).",
            "",
            "| task | " + " | ".join(others) + " |",
            "|---|" + "---|" * len(others),
        ]
        for task, per in per_task.items():
            cells = [_pm((per.get(m) or {}).get("regret_gap_to_known_graph")) for m in others]
            lines.append(f"| {task} | " + " | ".join(cells) + " |")
    lines += ["", "![best E[Y|do] vs cumulative cost](cost_convergence.png)", ""]
    return lines


def report_plots(summary: dict[str, Any], rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """``cost_convergence.png``: best true E[Y|do] vs cumulative cost, mean ± 95% CI."""
    from optiforge.evals.plots import save_task_grid, task_grid

    tasks = list((summary.get("suite_metrics") or {}).get("per_task") or {})
    if not tasks:
        return []
    from matplotlib.patches import Patch

    fig, axes = task_grid(len(tasks))
    n_seeds: set[int] = set()
    for ax, task in zip(axes.flat, tasks, strict=False):
        runs = [r for r in _metric_rows(rows) if r["task"] == task]
        top = max((max(r["extra"].get("cumulative_cost") or [0.0]) for r in runs), default=0.0)
        grid = np.linspace(0.0, top, 100)
        for m in summary.get("methods", []):
            curves = []
            for r in (r for r in runs if r["method"] == m):
                cost = np.asarray(r["extra"].get("cumulative_cost") or [], dtype=float)
                best = np.asarray([np.nan if v is None else v for v in r.get("trace") or []])
                if cost.size == 0 or cost.size != best.size:
                    continue
                curves.append(step_at(cost, best, grid))
            if not curves:
                continue
            mean, half = band(np.stack(curves))
            n_seeds.add(len(curves))
            ax.plot(grid, mean, label=m, lw=1.8 if m == summary.get("agent") else 1.0)
            ax.fill_between(grid, mean - half, mean + half, alpha=0.15)
        y_star = next((r["verification"]["metrics"].get("y_star") for r in runs), None)
        if y_star is not None:
            ax.axhline(y_star, color="k", ls=":", lw=0.8, label="y*")
        ax.set_title(task, fontsize=9)
        ax.set_xlabel("cumulative intervention cost")
        ax.set_ylabel("best E[Y|do] (↓)")
    seeds = "/".join(str(n) for n in sorted(n_seeds))
    what = Patch(color="gray", alpha=0.3, label=f"mean ± 95% CI over {seeds} seeds")
    return [
        save_task_grid(fig, axes, len(tasks), out / "cost_convergence.png", extra_handles=[what])
    ]
