"""Reports: ``summary.md``, PNG plots and a self-contained HTML page (``optiforge report``).

The HTML page is rendered from the Jinja2 templates in ``optiforge/harness/templates/``
(autoescaped); every plot is inlined as base64, so ``report.html`` is one file to share.

Two kinds of directory are reported:

- a **run** directory (``optiforge run``): status, task and method, config, headline numbers
  (the harness's re-measurement next to the agent's claim and the baseline), the best
  candidate and its lineage, the search tree, every evaluation, the LLM calls and a
  convergence plot;
- an **eval** directory (``optiforge eval``): status, the per-task table (mean ± 95% CI),
  whether each difference between the agent and a baseline can be claimed (see
  ``compare``), per-task convergence curves of every method, every run.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
from pathlib import Path
from typing import Any

from optiforge.errors import RunRecordError
from optiforge.evals.plots import MIN_SEEDS_FOR_CI, band, save_task_grid, task_grid, use_log_scale
from optiforge.harness.summary import RunSummary
from optiforge.runs import read_jsonl

MAX_EVAL_ROWS = 500
"""Rows of the per-evaluation table (and of an eval's per-run table) shown in the page."""
MAX_TREE_NODES = 1500
"""Nodes of the lineage tree shown in the page (the best's ancestry is always shown)."""
MAX_LLM_CALLS = 300
"""LLM calls listed in the page."""
MAX_CODE_CHARS = 40_000

MIN_SEEDS = MIN_SEEDS_FOR_CI  # 5: the plots' bands and the claims follow one rule
"""Fewest seeds per method on a task before a difference between two methods is claimed.

See ``compare`` for the rule and why.
"""


# ----------------------------------------------------------------------------- formatting


def _fmt(v: Any, digits: int = 4) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        return f"{v:.{digits}g}"
    return str(v)


def _cell(m: dict[str, Any] | None) -> str:
    if not m or m.get("mean") is None:
        return "failed"
    s = _fmt(m["mean"])
    if m.get("ci95") is not None:
        s += f" ± {_fmt(m['ci95'], 2)}"
    if m.get("n_failed"):
        s += f" ({m['n_failed']} failed)"
    return s


def eval_tables(summary: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    """Header and rows: one row per task, one column per method (mean ± 95% CI)."""
    methods = summary["methods"]
    header = ["task", "metric", *methods]
    rows = []
    for name, t in summary["tasks"].items():
        arrow = "↑" if t["higher_is_better"] else "↓"
        rows.append(
            [name, f"{t['metric']} {arrow}", *[_cell(t["methods"].get(m)) for m in methods]]
        )
    ranks = summary.get("average_rank", {})
    rows.append(["**average rank**", "", *[_fmt(ranks.get(m), 3) for m in methods]])
    return header, rows


# ----------------------------------------------------------------------------- the seeds rule


def _values(entry: dict[str, Any] | None) -> list[float]:
    if not entry:
        return []
    vals = entry.get("values")
    if isinstance(vals, list):
        return [float(v) for v in vals if isinstance(v, int | float) and math.isfinite(v)]
    return []


def compare(
    agent: dict[str, Any] | None, other: dict[str, Any] | None, higher_is_better: bool
) -> tuple[str, str]:
    """Whether the agent is better or worse than another method on one task, or neither.

    ``agent`` and ``other`` are entries of ``summary["tasks"][task]["methods"]`` (``values``:
    the re-measured score of each seed, ``mean``, ``ci95``: half-width of the 95% Student-t
    interval). Returns ``(verdict, reason)``, verdict one of ``"better"``, ``"worse"``,
    ``"not distinguishable"``.

    The rule: a difference is claimed only when **both methods have at least ``MIN_SEEDS``
    (5) successful seeds and their 95% intervals do not overlap**; otherwise the two are
    "not distinguishable".

    Why: with 2-4 seeds the sample standard deviation is itself a guess (its relative
    error is ~70% at n=2, ~35% at n=4), and the t multiplier is 12.7, 4.3, 3.2 for n=2, 3, 4;
    an interval from so few runs says little, and a mean that happens to be lower says
    nothing (a coin flip is "better on 1 of 2 tasks"). From 5 seeds the interval is usable
    (t=2.78) and non-overlapping 95% intervals are a conservative test: for two equal-size
    samples with similar spread it corresponds to p < 0.01, so a claimed difference is rarely
    noise. The rule errs toward "not distinguishable" on purpose: a benchmark table that
    claims a win it cannot back is worse than one that asks for more seeds.
    """
    a, b = _values(agent), _values(other)
    if not a or not b:
        return "not distinguishable", "no successful run to compare"
    n = min(len(a), len(b))
    if n < MIN_SEEDS:
        return "not distinguishable", f"too few seeds ({n} < {MIN_SEEDS})"
    ma, mb = sum(a) / len(a), sum(b) / len(b)
    ha = float((agent or {}).get("ci95") or 0.0)
    hb = float((other or {}).get("ci95") or 0.0)
    if ma - ha <= mb + hb and mb - hb <= ma + ha:
        return "not distinguishable", "95% intervals overlap"
    return ("better" if (ma > mb) == higher_is_better else "worse"), "95% intervals disjoint"


def comparisons(summary: dict[str, Any]) -> dict[str, dict[str, tuple[str, str]]]:
    """``{baseline: {task: (verdict, reason)}}`` of the agent against each other method."""
    agent = summary["agent"]
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for m in summary["methods"]:
        if m == agent:
            continue
        out[m] = {
            name: compare(t["methods"].get(agent), t["methods"].get(m), t["higher_is_better"])
            for name, t in summary["tasks"].items()
        }
    return out


def seeds_per_method(summary: dict[str, Any]) -> int:
    """The fewest successful seeds of any method on any task (0 when nothing succeeded)."""
    counts = [len(_values(e)) for t in summary["tasks"].values() for e in t["methods"].values()]
    return min(counts) if counts else 0


def comparison_lines(summary: dict[str, Any]) -> list[str]:
    """One line per baseline: on how many tasks the agent is better, worse, or neither."""
    lines = []
    for m, per in comparisons(summary).items():
        verdicts = [v for v, _ in per.values()]
        lines.append(
            f"{summary['agent']} vs {m}: better on {verdicts.count('better')}, worse on "
            f"{verdicts.count('worse')}, not distinguishable on "
            f"{verdicts.count('not distinguishable')} of {len(verdicts)} tasks"
        )
    return lines


def seeds_flag(summary: dict[str, Any]) -> str | None:
    """The "too few seeds to claim a difference" sentence, or None when there are enough."""
    n = seeds_per_method(summary)
    if n >= MIN_SEEDS:
        return None
    return (
        f"Too few seeds to claim a difference: {n} successful seed{'s' if n != 1 else ''} "
        f"per method (at least {MIN_SEEDS} are needed, and non-overlapping 95% intervals). "
        "Every comparison below is 'not distinguishable'; rerun with --seeds "
        f"{MIN_SEEDS} or more."
    )


def write_markdown(summary: dict[str, Any], out: Path, sections: list[str] | None = None) -> Path:
    """``summary.md`` for an eval directory; ``sections``: a suite's own markdown lines
    (``Benchmark.report_sections``), placed after the notes."""
    header, rows = eval_tables(summary)
    lines = [
        f"# {summary['agent']} on {summary['benchmark']} ({summary['split']})",
        "",
        f"Mean ± 95% t-interval over seeds; {summary['n_rows']} runs. Every value is the harness's "
        "own re-measurement of the returned candidate.",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *("| " + " | ".join(r) + " |" for r in rows),
        "",
    ]
    flag = seeds_flag(summary)
    if flag:
        lines += [f"**{flag}**", ""]
    lines += [f"- {ln}" for ln in comparison_lines(summary)]
    per = comparisons(summary)
    if per:
        lines += [
            "",
            f"A difference is claimed only with ≥ {MIN_SEEDS} seeds per method and "
            "non-overlapping 95% intervals.",
            "",
            "| task | " + " | ".join(f"{summary['agent']} vs {m}" for m in per) + " |",
            "|---|" + "---|" * len(per),
        ]
        for name in summary["tasks"]:
            cells = [f"{per[m][name][0]} ({per[m][name][1]})" for m in per]
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if summary.get("errors"):
        lines += ["", f"{len(summary['errors'])} runs failed:"]
        lines += [
            f"- {e.get('task')} / {e.get('method')} / seed {e.get('seed')}: {e['error']}"
            for e in summary["errors"][:20]
        ]
    notes = summary.get("notes") or []
    if notes:
        lines += ["", *[f"> {n}" for n in notes]]
    if sections:
        lines += ["", *sections]
    lines += [
        "",
        "![convergence](convergence.png)",
        "",
        "![agent vs baseline](agent_vs_baselines.png)",
        "",
    ]
    path = out / "summary.md"
    path.write_text("\n".join(lines))
    return path


# ----------------------------------------------------------------------------- plots


def _metric_label(metric: str, higher: bool) -> str:
    label = metric.replace("_", " ") if metric.startswith("best") else f"best {metric}"
    return f"{label} ({'↑' if higher else '↓'})"


def _pad(traces: list[list[float]]) -> Any:
    import numpy as np

    n = max(len(t) for t in traces)
    return np.array([t + [t[-1]] * (n - len(t)) for t in traces], dtype=float)


def write_plots(summary: dict[str, Any], rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """``convergence.png`` (best-so-far per task and method) and ``agent_vs_baselines.png``.

    Every method is a curve, baselines included (each row's ``trace``). A run that stopped
    early keeps its best, drawn dotted past its last evaluation. The shaded band is the one
    ``optiforge.evals.plots.band`` describes (mean ± 95% CI from ``MIN_SEEDS`` seeds, else
    the min-max range of the seeds), and the legend says which.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator

    paths: list[Path] = []
    tasks = list(summary["tasks"])
    if not tasks:
        return paths
    methods = summary["methods"]
    colours = {m: f"C{i % 10}" for i, m in enumerate(methods)}
    fig, axes = task_grid(len(tasks))
    band_labels: set[str] = set()
    for ax, name in zip(axes.flat, tasks, strict=False):
        t = summary["tasks"][name]
        plotted: list[float] = []
        by_method = {
            m: [
                [np.nan if v is None else float(v) for v in r.get("trace") or []]
                for r in rows
                if r["task"] == name and r["method"] == m and r.get("trace")
            ]
            for m in methods
        }
        n = max((len(tr) for trs in by_method.values() for tr in trs), default=0)
        for m in methods:
            traces = by_method[m]
            if not traces:
                continue
            arr = _pad([tr + [tr[-1]] * (n - len(tr)) for tr in traces])
            own = int(np.median([len(tr) for tr in traces]))
            with np.errstate(all="ignore"):
                mean = np.nanmean(arr, axis=0)
            xs = np.arange(1, n + 1)
            lw = 2.0 if m == summary["agent"] else 1.2
            label = m if own >= n else f"{m} ({own} eval{'s' if own != 1 else ''})"
            if own > 1:
                ax.plot(xs[:own], mean[:own], color=colours[m], lw=lw, label=label)
            if own < n:  # stopped early: its best stays, dotted (a dot marks a single evaluation)
                ax.plot(
                    xs[own - 1 :], mean[own - 1 :], color=colours[m], lw=lw, ls=":",
                    marker="o" if own == 1 else None, markevery=[0], ms=4,
                    label=label if own == 1 else None,
                )  # fmt: skip
            lo, hi, what = band(arr)
            if what:
                band_labels.add(what)
                ax.fill_between(xs, lo, hi, color=colours[m], alpha=0.15, lw=0)
                plotted += [float(v) for v in np.concatenate([lo, hi]) if np.isfinite(v)]
            plotted += [float(v) for v in mean if np.isfinite(v)]
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("evaluations")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(_metric_label(t["metric"], t["higher_is_better"]), fontsize=8)
        if use_log_scale(plotted):
            ax.set_yscale("log")
    path = save_task_grid(
        fig,
        axes,
        len(tasks),
        out / "convergence.png",
        extra_handles=[Patch(color="gray", alpha=0.3, label=b) for b in sorted(band_labels)],
        title="best-so-far per method (line: mean over seeds)",
    )
    paths.append(path)

    # Agent vs each baseline: every seed's re-measured score per task and method, with the
    # mean and the band of the same rule; one panel per task, so every metric keeps its axis.
    fig, axes = task_grid(len(tasks))
    band_labels = set()
    for ax, name in zip(axes.flat, tasks, strict=False):
        t = summary["tasks"][name]
        plotted = []
        for i, m in enumerate(methods):
            vals = _values(t["methods"].get(m))
            if not vals:
                ax.text(i, 0.5, "failed", transform=ax.get_xaxis_transform(), ha="center")
                continue
            jitter = np.linspace(-0.12, 0.12, len(vals)) if len(vals) > 1 else np.zeros(1)
            ax.scatter(i + jitter, vals, s=14, color=colours[m], alpha=0.7, zorder=3)
            mean = sum(vals) / len(vals)
            ax.hlines(mean, i - 0.25, i + 0.25, color=colours[m], lw=2.2, zorder=4)
            lo, hi, what = band(np.array(vals, dtype=float)[:, None])
            if what:
                band_labels.add(what)
                ax.vlines(i, lo[0], hi[0], color=colours[m], lw=1.0, zorder=2)
                plotted += [float(lo[0]), float(hi[0])]
            plotted += vals
        ax.set_xticks(range(len(methods)))
        ax.set_xticklabels(methods, rotation=20, ha="right", fontsize=8)
        ax.set_xlim(-0.6, len(methods) - 0.4)
        ax.set_title(name, fontsize=9)
        ax.set_ylabel(
            f"{t['metric'].replace('_', ' ')} ({'↑' if t['higher_is_better'] else '↓'})",
            fontsize=8,
        )
        if use_log_scale(plotted):
            ax.set_yscale("log")
    handles = [
        plt.Line2D([], [], ls="", marker="o", color="gray", label="one seed"),
        plt.Line2D([], [], color="gray", lw=2.2, label="mean"),
        *[plt.Line2D([], [], color="gray", lw=1.0, label=f"bar: {b}") for b in sorted(band_labels)],
    ]
    paths.append(
        save_task_grid(
            fig,
            axes,
            len(tasks),
            out / "agent_vs_baselines.png",
            handles=handles,
            title="re-measured score of every seed",
        )
    )
    return paths


def _best_so_far(values: list[float | None], higher: bool) -> list[float | None]:
    best: float | None = None
    out: list[float | None] = []
    for v in values:
        if (
            v is not None
            and math.isfinite(v)
            and (best is None or (v > best if higher else v < best))
        ):
            best = v
        out.append(best)
    return out


def write_run_plot(summary: RunSummary, out: Path, name: str = "convergence.png") -> Path | None:
    """``convergence.png`` (or ``name``) for a single run directory.

    Best-so-far against evaluations (the harness's curve when the task re-measures one, the
    agent's observed curve otherwise, and for an unfinished run the curve read from
    ``evaluations.jsonl``); every evaluation as a dot when ``evaluations.jsonl`` holds
    exactly the run's evaluations; the baseline's final score as a dashed line (a run
    records no curve of its baseline). Log y when the values are positive and span more
    than two decades.
    """
    higher = bool(summary.higher_is_better)
    rows = _evaluations(out)
    trace = [v if isinstance(v, int | float) else None for v in summary.trace]
    from_rows = False
    if not trace and rows:
        trace = _best_so_far([_value(r) for r in rows], higher)
        from_rows = True
    if not any(v is not None for v in trace):
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    plotted: list[float] = []
    n_eval = summary.n_evaluations or len(trace)
    if rows and len(rows) == n_eval:
        pts = [(i + 1, _value(r)) for i, r in enumerate(rows)]
        ok = [(x, y) for x, y in pts if y is not None]
        if ok:
            ax.scatter(
                [x for x, _ in ok], [y for _, y in ok], s=12, color="C0", alpha=0.35,
                label="each evaluation", zorder=2,
            )  # fmt: skip
            plotted += [y for _, y in ok]
        bad = [x for x, y in pts if y is None]
        if bad:
            ax.scatter(
                bad, [0.02] * len(bad), marker="x", s=14, color="C3",
                transform=ax.get_xaxis_transform(), label="failed evaluation", zorder=2,
            )  # fmt: skip
    xs = [i + 1 for i, v in enumerate(trace) if v is not None]
    ys = [float(v) for v in trace if v is not None]
    label = summary.method or "agent"
    if from_rows:
        label += " (observed, not re-measured)"
    ax.step(xs, ys, where="post", color="C0", lw=2, label=f"{label}: best so far", zorder=3)
    plotted += ys
    observed = summary.observed_trace
    if observed and observed != summary.trace:
        ox = [i + 1 for i, v in enumerate(observed) if v is not None]
        oy = [float(v) for v in observed if v is not None]
        ax.step(ox, oy, where="post", color="C1", lw=1, ls="--", label="agent's observed best")
        plotted += oy
    base_trace = [v for v in summary.baseline_trace or [] if isinstance(v, int | float)]
    if base_trace:  # the baseline's own best-so-far curve, where the run records one
        bx = list(range(1, len(base_trace) + 1))
        ax.step(
            bx, base_trace, where="post", color="gray", lw=1.2, ls="--",
            label=f"{summary.baseline_name or 'baseline'} baseline: best so far",
        )  # fmt: skip
        plotted += [float(v) for v in base_trace]
    elif summary.baseline_score is not None:
        b = float(summary.baseline_score)
        ax.axhline(
            b, ls="--", color="gray", lw=1,
            label=f"{summary.baseline_name or 'baseline'} baseline (final score)",
        )  # fmt: skip
        plotted.append(b)
    ax.set_xlabel("evaluations")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(_metric_label(str(summary.metric), higher))
    ax.set_title(f"{summary.benchmark}/{summary.task}", fontsize=10)
    if use_log_scale(plotted):
        ax.set_yscale("log")
    ax.legend(fontsize=7, loc="best")
    ax.grid(alpha=0.25)
    fig.tight_layout()
    p = out / name
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return p


# ----------------------------------------------------------------------------- run records


def _evaluations(run_dir: Path) -> list[dict[str, Any]]:
    keep = ("id", "parent_ids", "origin", "round", "value", "passed", "error", "rationale")
    rows = []
    for r in read_jsonl(run_dir / "evaluations.jsonl"):
        row = {k: r.get(k) for k in keep}
        row["payload"] = r.get("payload")
        rows.append(row)
    return rows


def _value(r: dict[str, Any]) -> float | None:
    v = r.get("value")
    if r.get("passed") and isinstance(v, int | float) and math.isfinite(v):
        return float(v)
    return None


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return None


def partial_summary(run_dir: Path) -> RunSummary:
    """A summary of a run that never wrote ``summary.json`` (interrupted, failed, running),
    from its manifest and ``evaluations.jsonl``. Its values are the agent's observations:
    the harness re-measures a candidate only when a run finishes, and the summary says so.
    """
    from optiforge.runs import read_manifest

    man = read_manifest(run_dir)
    cfg = man.get("config") or {}
    suite, _, rest = str(cfg.get("task") or "?/?").partition("/")
    task, _, split = rest.partition("@")
    rows = list(read_jsonl(run_dir / "evaluations.jsonl"))
    values = [r["value"] for r in rows if r.get("passed") and isinstance(r.get("value"), float)]
    status = man.get("status") or "running"
    metric, higher = "value", False
    try:
        from optiforge.evals.registry import resolve_task

        t = resolve_task(str(cfg.get("task")))
        metric, higher = t.metric, t.higher_is_better
    except Exception:  # noqa: BLE001 - a task gone from the registry still gets a report
        pass
    best_seen = (max(values) if higher else min(values)) if values else None
    return RunSummary.model_validate({
        "agent": cfg.get("agent"),
        "method": cfg.get("method"),
        "benchmark": suite,
        "task": task,
        "split": split,
        "seed": man.get("seed"),
        "model": (cfg.get("settings") or {}).get("model"),
        "status": status,
        "status_reason": (
            f"the run did not finish ({man.get('error') or status}); values are the agent's "
            "own observations, not re-measured by the harness"
        ),
        "metric": metric,
        "higher_is_better": higher,
        "best_score": None,
        "claimed_score": best_seen,
        "n_evaluations": len(rows),
        "trace": [],
        "extra": {"observed_values": values[:200]},
    })  # fmt: skip


def _short(ident: Any) -> str:
    s = str(ident)
    return s if len(s) <= 28 else s[:14] + "…" + s[-12:]


def _shape(obj: Any) -> str:
    """``30 × 25 numbers``, ``"RBF"``, ``dict of 3``: a payload field in a few words."""
    if isinstance(obj, list):
        if obj and all(isinstance(v, list) for v in obj):
            inner = {len(v) for v in obj}
            return f"{len(obj)} × {inner.pop() if len(inner) == 1 else '?'} values"
        return f"{len(obj)} values"
    if isinstance(obj, dict):
        return f"{len(obj)} fields"
    text = json.dumps(obj, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _compact_json(obj: Any, indent: int = 0) -> str:
    """JSON with every list of scalars on one line (a candidate's arrays stay readable)."""
    pad = "  " * (indent + 1)
    if isinstance(obj, dict) and obj:
        items = [
            f"{pad}{json.dumps(str(k))}: {_compact_json(v, indent + 1)}" for k, v in obj.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + "  " * indent + "}"
    if isinstance(obj, list) and obj and any(isinstance(v, dict | list) for v in obj):
        items = [pad + _compact_json(v, indent + 1) for v in obj]
        return "[\n" + ",\n".join(items) + "\n" + "  " * indent + "]"
    return json.dumps(obj, default=str)


def _lineage_tree(
    rows: list[dict[str, Any]], best_ids: set[str], higher: bool
) -> tuple[list[dict[str, Any]], int]:
    """Nested nodes of the search (first parent = tree parent); (roots, nodes shown)."""
    by_id: dict[str, dict[str, Any]] = {}
    for i, r in enumerate(rows):
        rid = str(r.get("id") or f"#{i + 1}")
        by_id.setdefault(
            rid,
            {
                "id": rid,
                "short": _short(rid),
                "n": i + 1,
                "origin": r.get("origin") or "",
                "round": r.get("round"),
                "value": _fmt(_value(r)),
                "passed": bool(r.get("passed")),
                "error": str(r.get("error") or "")[:300],
                "rationale": str(r.get("rationale") or "")[:400],
                "parents": [str(p) for p in r.get("parent_ids") or []],
                "on_path": rid in best_ids,
                "is_best": False,
                "children": [],
                "hidden": 0,
            },
        )
    roots = []
    for node in by_id.values():
        parent = next((p for p in node["parents"] if p in by_id), None)
        node["other_parents"] = [_short(p) for p in node["parents"] if p != parent]
        if parent is None:
            roots.append(node)
        else:
            by_id[parent]["children"].append(node)
    shown = 0

    def prune(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        nonlocal shown
        kept = []
        for node in nodes:
            if shown >= MAX_TREE_NODES and not node["on_path"]:
                continue
            shown += 1
            kept.append(node)
            children = node["children"]
            node["children"] = prune(children)
            node["hidden"] = len(children) - len(node["children"])
            node["size"] = 1 + sum(c["size"] for c in node["children"])
            node["open"] = node["on_path"] and any(c["on_path"] for c in node["children"])
        return kept

    return prune(roots), shown


def _transcripts(man: dict[str, Any], events: list[dict[str, Any]]) -> tuple[dict[str, list], str]:
    """Request/answer pairs by request key, from the run's cassette (``--record``/``--replay``)."""
    settings = (man.get("config") or {}).get("settings") or {}
    for key in ("record", "replay"):
        p = settings.get(key)
        if not p:
            continue
        path = Path(p)
        if not path.is_file():
            return {}, f"the run's cassette {path} ({key}) is gone"
        pairs: dict[str, list] = {}
        for row in read_jsonl(path):
            pairs.setdefault(str(row.get("key")), []).append(row)
        return pairs, str(path)
    return {}, ""


def _message_text(m: dict[str, Any]) -> str:
    content = m.get("content")
    if isinstance(content, list):
        content = "\n".join(
            str(c.get("text", c)) if isinstance(c, dict) else str(c) for c in content
        )
    text = "" if content is None else str(content)
    if m.get("tool_calls"):
        text += "\n[tool calls] " + json.dumps(m["tool_calls"], default=str)[:4000]
    return text[:20_000]


def _llm_view(d: Path, man: dict[str, Any]) -> dict[str, Any]:
    calls = [e for e in read_jsonl(d / "events.jsonl") if e.get("kind") == "llm_call"]
    pairs, source = _transcripts(man, calls)
    served: dict[str, int] = {}
    rows = []
    for i, e in enumerate(calls[:MAX_LLM_CALLS]):
        key = str(e.get("request_key") or "")
        transcript = None
        if e.get("messages") is not None:  # the event's own transcript (clipped per message)
            transcript = {
                "messages": [
                    {"role": m.get("role"), "text": _message_text(m)}
                    for m in e["messages"]
                    if isinstance(m, dict)
                ],
                "reply": _message_text({"content": e.get("reply")})
                + (f"\n[tool calls] {e['reply_tool_calls']}" if e.get("reply_tool_calls") else ""),
            }
        elif key in pairs:
            j = served.get(key, 0)
            served[key] = j + 1
            rec = pairs[key][min(j, len(pairs[key]) - 1)]
            transcript = {
                "messages": [
                    {"role": m.get("role"), "text": _message_text(m)}
                    for m in rec.get("messages") or []
                    if isinstance(m, dict)
                ],
                "reply": _message_text((rec.get("reply") or {}).get("message") or {}),
            }
        rows.append(
            {
                "n": i + 1,
                "model": e.get("model"),
                "tokens_in": e.get("tokens_in", 0),
                "tokens_out": e.get("tokens_out", 0),
                "cost": _fmt(e.get("cost_usd"), 3) if e.get("cost_known") else "unknown",
                "latency": _fmt(e.get("latency_s"), 3),
                "attempts": e.get("attempts"),
                "source": "cache"
                if e.get("cached")
                else "cassette"
                if e.get("replayed")
                else "provider",
                "ok": bool(e.get("ok", True)),
                "error": str(e.get("error") or "")[:300],
                "transcript": transcript,
            }
        )
    return {
        "n": len(calls),
        "rows": rows,
        "capped": len(calls) > MAX_LLM_CALLS,
        "tokens_in": sum(int(e.get("tokens_in") or 0) for e in calls),
        "tokens_out": sum(int(e.get("tokens_out") or 0) for e in calls),
        "cost": _fmt(sum(float(e.get("cost_usd") or 0.0) for e in calls), 4),
        "cost_known": all(e.get("cost_known") for e in calls),
        "latency": _fmt(sum(float(e.get("latency_s") or 0.0) for e in calls), 4),
        "n_failed": sum(1 for e in calls if not e.get("ok", True)),
        "transcript_source": "events.jsonl"
        if any("messages" in e for e in calls)
        else (source if pairs else ""),
        "transcript_missing": ""
        if pairs or any("messages" in e for e in calls)
        else (source or "not recorded"),
    }


def _img(path: Path) -> dict[str, str] | None:
    if not path.is_file():
        return None
    return {
        "alt": path.stem,
        "src": "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode(),
    }


def _env() -> Any:
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["fmt"] = _fmt
    env.filters["json"] = lambda v: json.dumps(v, indent=2, default=str)
    return env


def _improvement(best: Any, base: Any, higher: bool) -> str | None:
    if not isinstance(best, int | float) or not isinstance(base, int | float) or base == 0:
        return None
    gain = (best - base) / abs(base) * (1 if higher else -1)
    if gain == 0:
        return "equal to the baseline"
    return f"{abs(gain) * 100:.1f}% {'better' if gain > 0 else 'worse'} than the baseline"


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)


def _last_value(trace: Any) -> float | None:
    """The last number of a best-so-far curve (None: no curve, or no value in it)."""
    if not isinstance(trace, list):
        return None
    vals = [v for v in trace if isinstance(v, int | float) and math.isfinite(v)]
    return float(vals[-1]) if vals else None


def _run_view(d: Path, summary: RunSummary, finished: bool) -> dict[str, Any]:
    from optiforge.runs import read_manifest

    try:
        man = read_manifest(d)
    except Exception:  # noqa: BLE001 - a summary without a manifest still gets a report
        man = {}
    cfg = man.get("config") or {}
    settings = dict(cfg.get("settings") or {})
    agent_opts = settings.pop("agent", None) or {}
    higher = bool(summary.higher_is_better)
    rows = _evaluations(d)

    # the best candidate: best/ when the run finished, else the best observed evaluation
    best_file, best_code, best_note = None, None, ""
    best_fields: dict[str, str] = {}
    best_path = d / str(summary.best_path or "best/candidate.py")
    for p in (best_path, d / "best" / "candidate.py", d / "best" / "candidate.json"):
        if p.is_file():
            best_file, best_code = p, p.read_text(errors="replace")
            if p.suffix == ".json":
                with contextlib.suppress(json.JSONDecodeError):
                    payload = json.loads(best_code)
                    best_code = _compact_json(payload)
                    if isinstance(payload, dict):
                        best_fields = {str(k): _shape(v) for k, v in payload.items()}
                        # a candidate that is data plus the model it was searched for (Kernel
                        # Discovery's BO trace and its kernel): the model is what was found
                        if isinstance(payload.get("kernel"), str):
                            best_code = payload["kernel"]
            break
    best_ids: list[str] = []
    lineage = _read_json(d / "best" / "lineage.json")
    if isinstance(lineage, list):
        best_ids = [str(r.get("id")) for r in lineage if isinstance(r, dict)]
    best_row = None
    if rows:
        scored = [(v, i) for i, r in enumerate(rows) if (v := _value(r)) is not None]
        if scored:
            _, i = (max if higher else min)(scored, key=lambda t: (t[0] if higher else t[0], -t[1]))
            best_row = rows[i]
    if best_code is None and best_row is not None:
        payload = best_row.get("payload")
        code = payload.get("code") if isinstance(payload, dict) else None
        best_code = code if isinstance(code, str) else _compact_json(payload)
        if not isinstance(code, str) and isinstance(payload, dict):
            best_fields = {str(k): _shape(v) for k, v in payload.items()}
        best_note = (
            f"best observed evaluation {best_row.get('id')} (value {_fmt(_value(best_row))}); "
            "not re-measured by the harness"
        )
    if not best_ids and best_row is not None:  # its ancestry from the evaluations
        by_id = {str(r.get("id")): r for r in rows}
        todo, seen = [str(best_row.get("id"))], set()
        while todo:
            rid = todo.pop()
            if rid in seen or rid not in by_id:
                continue
            seen.add(rid)
            todo += [str(p) for p in by_id[rid].get("parent_ids") or []]
        best_ids = sorted(seen)
    if best_ids and not isinstance(lineage, list):
        lineage = [
            {k: r.get(k) for k in ("id", "parent_ids", "origin", "round", "value", "rationale")}
            for r in rows
            if str(r.get("id")) in set(best_ids)
        ]
    tree, shown = _lineage_tree(rows, set(best_ids), higher)
    best_id = best_ids[-1] if best_ids and isinstance(lineage, list) and lineage else None
    if isinstance(lineage, list) and lineage:
        best_id = str(lineage[-1].get("id"))

    def mark(nodes: list[dict[str, Any]]) -> None:
        for node in nodes:
            node["is_best"] = node["id"] == best_id
            mark(node["children"])

    mark(tree)

    table = []
    for i, r in enumerate(rows[:MAX_EVAL_ROWS]):
        v = _value(r)
        table.append(
            {
                "n": i + 1,
                "id": str(r.get("id")),
                "round": _fmt(r.get("round")),
                "origin": r.get("origin") or "",
                "parents": ", ".join(_short(p) for p in r.get("parent_ids") or []),
                "value": _fmt(v),
                "sort": "" if v is None else repr(v),
                "passed": bool(r.get("passed")),
                "error": str(r.get("error") or "")[:300],
                "rationale": str(r.get("rationale") or "")[:300],
                "on_path": str(r.get("id")) in set(best_ids),
            }
        )
    plot = write_run_plot(summary, d)
    metrics = _read_json(d / "best" / "metrics.json") or {}
    claimed, best = summary.claimed_score, summary.best_score
    differs = (
        finished
        and isinstance(claimed, int | float)
        and isinstance(best, int | float)
        and not _close(claimed, best)
    )
    # The bookkeeping is off only when the claim is not what the agent itself observed (the
    # best of its own curve); a re-measurement that differs from a consistent claim is the
    # task's noise or its noiseless re-measurement, which is said without alarm.
    observed = _last_value(summary.observed_trace)
    mismatch = bool(
        isinstance(claimed, int | float) and observed is not None and not _close(claimed, observed)
    )
    held = summary.row()  # the keys the file holds (a partial summary has fewer)
    raw = {
        k: v
        for k, v in held.items()
        if k not in ("trace", "observed_trace", "extra", "verification")
    }
    shown_keys = [
        "agent",
        "method",
        "benchmark",
        "task",
        "split",
        "seed",
        "model",
        "metric",
        "best_score",
        "verified",
        "claimed_score",
        "baseline_name",
        "baseline_score",
        "n_evaluations",
        "llm_calls",
        "tokens",
        "cost_usd",
        "sandbox_s",
        "wall_s",
        "stop_reason",
        "unpriced_calls",
    ]
    return {
        "kind": "run",
        "s": {k: held.get(k) for k in shown_keys},
        "finished": finished,
        "status": str(summary.status or "unknown"),
        "reason": str(summary.status_reason or summary.stop_reason or ""),
        "task_ref": f"{summary.benchmark}/{summary.task}@{summary.split}",
        "higher": higher,
        "improvement": _improvement(best, summary.baseline_score, higher),
        "mismatch": mismatch,
        "differs": differs and not mismatch,
        "observed_best": observed,
        "settings": settings,
        "agent_opts": agent_opts,
        "manifest": {
            k: man.get(k)
            for k in ("id", "started_at", "finished_at", "git_sha", "host", "platform", "versions")
            if man.get(k) is not None
        },
        "argv": " ".join(str(a) for a in man.get("argv") or []),
        "best_file": best_file.relative_to(d).as_posix() if best_file else None,
        "best_code": (best_code or "")[:MAX_CODE_CHARS] if best_code is not None else None,
        "best_code_cut": best_code is not None and len(best_code) > MAX_CODE_CHARS,
        "best_is_json": best_file is not None and best_file.suffix == ".json" or best_note != "",
        "best_note": best_note,
        "best_fields": best_fields,
        "best_metrics": metrics.get("task_metrics") or {},
        "lineage": lineage if isinstance(lineage, list) else [],
        "tree": tree,
        "tree_shown": shown,
        "n_rows": len(rows),
        "table": table,
        "table_capped": len(rows) > MAX_EVAL_ROWS,
        "llm": _llm_view(d, man),
        "plot": _img(plot) if plot else None,
        "baseline_curve": bool(summary.baseline_trace),
        "raw": raw,
        "extra": summary.extra,
        "verification": summary.verification,
    }


def _markdown_blocks(lines: list[str]) -> list[dict[str, Any]]:
    """A suite's markdown lines as paragraphs and tables (images are dropped)."""
    blocks: list[dict[str, Any]] = []
    for ln in lines:
        s = ln.strip()
        if not s or s.startswith("!["):
            continue
        if s.startswith("|"):
            cells = [c.strip().replace("**", "") for c in s.strip("|").split("|")]
            if all(set(c) <= set("-: ") for c in cells):
                continue
            if blocks and blocks[-1]["kind"] == "table":
                blocks[-1]["rows"].append(cells)
            else:
                blocks.append({"kind": "table", "header": cells, "rows": []})
        else:
            kind = "h" if s.startswith("#") else "p"
            blocks.append({"kind": kind, "text": s.lstrip("#> ").replace("**", "")})
    return blocks


def _eval_view(d: Path, summary: dict[str, Any]) -> dict[str, Any]:
    results = [r for r in read_jsonl(d / "results.jsonl")]
    latest = {(r.get("task"), r.get("seed"), r.get("method")): r for r in results}
    ok_rows = [r for r in results if "error" not in r]
    if ok_rows and summary["tasks"]:
        write_plots(summary, ok_rows, d)  # the current plot style, from the recorded rows
    header, rows = eval_tables(summary)
    agent = summary["agent"]
    per = comparisons(summary)
    cells = []
    for name, t in summary["tasks"].items():
        means = {m: e["mean"] for m, e in t["methods"].items() if e and e.get("mean") is not None}
        best_m = (
            (max if t["higher_is_better"] else min)(means, key=lambda m: means[m])
            if means
            else None
        )
        cells.append(
            {
                "task": name,
                "metric": f"{t['metric']} {'↑' if t['higher_is_better'] else '↓'}",
                "cells": [
                    {
                        "text": _cell(t["methods"].get(m)),
                        "n": len(_values(t["methods"].get(m))),
                        "best": m == best_m,
                    }
                    for m in summary["methods"]
                ],
                "verdicts": [
                    {"method": m, "verdict": per[m][name][0], "reason": per[m][name][1]}
                    for m in per
                ],
            }
        )
    run_rows = []
    for (task, seed, method), r in list(latest.items())[:MAX_EVAL_ROWS]:
        run_rows.append(
            {
                "task": task,
                "method": method,
                "seed": seed,
                "best": _fmt(r.get("best_score")),
                "sort": "" if r.get("best_score") is None else repr(r.get("best_score")),
                "claimed": _fmt(r.get("claimed_score")),
                "n_eval": _fmt(r.get("n_evaluations")),
                "status": r.get("status") or ("error" if "error" in r else ""),
                "reason": str(r.get("error") or r.get("status_reason") or "")[:200],
                "wall": _fmt(r.get("wall_s"), 3),
                "llm_calls": _fmt(r.get("llm_calls")),
                "cost": _fmt(r.get("cost_usd"), 3),
            }
        )
    eval_json = _read_json(d / "eval.json") or {}
    settings = dict(eval_json.get("settings") or {})
    agent_opts = settings.pop("agent", None) or {}
    settings.pop("seed", None)  # each run has its own: 0 .. seeds-1
    seeds = eval_json.get("seeds") or max(
        (e.get("n_seeds", 0) for t in summary["tasks"].values() for e in t["methods"].values()),
        default=0,
    )
    plots = [
        img
        for png in ("convergence.png", "agent_vs_baselines.png", "cost_convergence.png")
        if (img := _img(d / png))
    ]
    return {
        "kind": "eval",
        "s": summary,
        "status": str(summary.get("status") or "unknown"),
        "reason": str(summary.get("status_reason") or ""),
        "agent": agent,
        "seeds": seeds,
        "n_min_seeds": seeds_per_method(summary),
        "min_seeds": MIN_SEEDS,
        "flag": seeds_flag(summary),
        "comparison_lines": comparison_lines(summary),
        "header": header,
        "rows": cells,
        "ranks": rows[-1][2:],
        "baselines": list(per),
        "plots": plots,
        "run_rows": run_rows,
        "runs_capped": len(latest) > MAX_EVAL_ROWS,
        "n_runs": len(latest),
        "errors": summary.get("errors") or [],
        "notes": summary.get("notes") or [],
        "sections": _markdown_blocks(list(summary.get("report_sections") or [])),
        "settings": settings,
        "agent_opts": agent_opts,
    }


def render_report(directory: str | Path) -> Path:
    """Write ``report.html`` (plots embedded) for a run or an eval directory."""
    d = Path(directory)
    summary_path = d / "summary.json"
    finished = summary_path.is_file()
    if finished:
        data = json.loads(summary_path.read_text())
    elif (d / "manifest.json").is_file():
        data = None  # an interrupted or failed run: what it did so far (partial_summary)
    else:
        raise RunRecordError(
            f"{d} is not a run or eval directory (no summary.json or manifest.json)"
        )
    env = _env()
    if data is not None and "tasks" in data and "methods" in data:  # an eval's summary
        page = env.get_template("eval.html.j2").render(v=_eval_view(d, data))
    else:
        run = RunSummary.model_validate(data) if data is not None else partial_summary(d)
        page = env.get_template("run.html.j2").render(v=_run_view(d, run, finished))
    out = d / "report.html"
    out.write_text(page)
    return out
