"""Reports: ``summary.md``, PNG plots and a self-contained HTML page (``optiforge report``)."""

from __future__ import annotations

import base64
import html
import json
import math
from pathlib import Path
from typing import Any

from optiforge.errors import RunRecordError
from optiforge.evals.plots import save_task_grid, task_grid


def _fmt(v: Any, digits: int = 4) -> str:
    if v is None:
        return "-"
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
    for m, w in summary.get("agent_vs_baselines", {}).items():
        lines.append(
            f"- {summary['agent']} better than {m} on {w['agent_better_on']} of {w['of_tasks']} tasks"
        )
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


def write_plots(summary: dict[str, Any], rows: list[dict[str, Any]], out: Path) -> list[Path]:
    """``convergence.png`` (best-so-far per task and method) and ``agent_vs_baselines.png``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    paths: list[Path] = []
    tasks = list(summary["tasks"])
    if not tasks:
        return paths
    fig, axes = task_grid(len(tasks))
    for ax, name in zip(axes.flat, tasks, strict=False):
        for m in summary["methods"]:
            traces = [r.get("trace") or [] for r in rows if r["task"] == name and r["method"] == m]
            traces = [[np.nan if v is None else v for v in t] for t in traces if t]
            if not traces:
                continue
            n = max(len(t) for t in traces)
            arr = np.array([t + [t[-1]] * (n - len(t)) for t in traces], dtype=float)
            with np.errstate(all="ignore"):
                mean = np.nanmean(arr, axis=0)
            xs = np.arange(1, n + 1)
            ax.plot(xs, mean, label=m, lw=1.8 if m == summary["agent"] else 1.0)
            if arr.shape[0] > 1:
                with np.errstate(all="ignore"):
                    sd = np.nanstd(arr, axis=0) / math.sqrt(arr.shape[0])
                ax.fill_between(xs, mean - 1.96 * sd, mean + 1.96 * sd, alpha=0.15)
        t = summary["tasks"][name]
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("evaluations")
        label = (
            t["metric"].replace("_", " ")
            if t["metric"].startswith("best")
            else f"best {t['metric']}"
        )
        ax.set_ylabel(f"{label} ({'↑' if t['higher_is_better'] else '↓'})")
        if not t["higher_is_better"] and np.all(
            np.array(
                [
                    v
                    for r in rows
                    if r["task"] == name
                    for v in (r.get("trace") or [])
                    if v is not None
                ]
            )
            > 0
        ):
            ax.set_yscale("log")
    paths.append(save_task_grid(fig, axes, len(tasks), out / "convergence.png"))

    # Agent vs each baseline: per-task mean with 95% CI, normalised per task so that
    # different metrics share one axis (each method's mean divided by the task's best |mean|).
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(tasks) + 2), 3.5))
    methods = summary["methods"]
    width = 0.8 / max(len(methods), 1)
    for i, m in enumerate(methods):
        ys, errs = [], []
        for name in tasks:
            entry = summary["tasks"][name]["methods"].get(m) or {}
            mean, ci = entry.get("mean"), entry.get("ci95")
            vals = [
                e.get("mean")
                for e in summary["tasks"][name]["methods"].values()
                if e.get("mean") is not None
            ]
            scale = max((abs(v) for v in vals), default=1.0) or 1.0
            ys.append(np.nan if mean is None else mean / scale)
            errs.append(0.0 if ci is None else ci / scale)
        ax.bar(np.arange(len(tasks)) + i * width, ys, width, yerr=errs, label=m, capsize=2)
    ax.set_xticks(np.arange(len(tasks)) + width * (len(methods) - 1) / 2)
    ax.set_xticklabels(tasks, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("mean / max |mean| per task")
    ax.legend(fontsize=7)
    fig.tight_layout()
    p = out / "agent_vs_baselines.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    paths.append(p)
    return paths


def write_run_plot(summary: dict[str, Any], out: Path) -> Path | None:
    """``convergence.png`` for a single run directory."""
    trace = summary.get("trace") or []
    if not trace:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.2))
    xs = [i + 1 for i, v in enumerate(trace) if v is not None]
    ys = [v for v in trace if v is not None]
    ax.step(xs, ys, where="post", label=summary.get("method", "agent"))
    if summary.get("baseline_score") is not None:
        ax.axhline(
            summary["baseline_score"], ls="--", color="gray", label=summary.get("baseline_name")
        )
    ax.set_xlabel("evaluations")
    metric = str(summary.get("metric"))
    ax.set_ylabel(metric.replace("_", " ") if metric.startswith("best") else f"best {metric}")
    ax.set_title(f"{summary.get('benchmark')}/{summary.get('task')}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    p = out / "convergence.png"
    fig.savefig(p, dpi=110)
    plt.close(fig)
    return p


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode()
    return f'<img alt="{html.escape(path.stem)}" src="data:image/png;base64,{data}" style="max-width:100%">'


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c.replace('**', ''))}</td>" for c in r) + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_CSS = """body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:14px}td,th{border:1px solid #ccc;padding:4px 8px;text-align:left}
th{background:#f3f3f3}code,pre{background:#f6f6f6;padding:2px 4px}h1{font-size:1.5em}.note{color:#555}"""


def partial_summary(run_dir: Path) -> dict[str, Any]:
    """A summary of a run that never wrote ``summary.json`` (interrupted, failed, running),
    from its manifest and ``evaluations.jsonl``. Its values are the agent's observations:
    the harness re-measures a candidate only when a run finishes, and the summary says so.
    """
    from optiforge.runs import read_manifest

    man = read_manifest(run_dir)
    cfg = man.get("config") or {}
    suite, _, rest = str(cfg.get("task") or "?/?").partition("/")
    task, _, split = rest.partition("@")
    rows = []
    path = run_dir / "evaluations.jsonl"
    if path.exists():
        for line in path.read_text(errors="replace").splitlines():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError:
                continue  # the torn last line of a killed run
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
    return {
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
    }


def render_report(directory: str | Path) -> Path:
    """Write ``report.html`` (plots embedded) for a run or an eval directory."""
    d = Path(directory)
    summary_path = d / "summary.json"
    if summary_path.is_file():
        summary = json.loads(summary_path.read_text())
    elif (d / "manifest.json").is_file():
        summary = partial_summary(d)  # an interrupted or failed run: what it did so far
    else:
        raise RunRecordError(
            f"{d} is not a run or eval directory (no summary.json or manifest.json)"
        )
    parts = [
        f"<!doctype html><html><head><meta charset='utf-8'><title>optiforge report</title><style>{_CSS}</style></head><body>"
    ]
    if "tasks" in summary and "methods" in summary:
        parts.append(
            f"<h1>{html.escape(summary['agent'])} on {html.escape(summary['benchmark'])} ({html.escape(summary['split'])})</h1>"
        )
        parts.append(
            "<p class='note'>Mean ± 95% t-interval over seeds. Every value is re-measured by the harness.</p>"
        )
        header, rows = eval_tables(summary)
        parts.append(_table(header, rows))
        for n in summary.get("notes") or []:
            parts.append(f"<p class='note'>{html.escape(n)}</p>")
        if summary.get("errors"):
            parts.append(f"<p>{len(summary['errors'])} runs failed.</p>")
        for png in ("convergence.png", "agent_vs_baselines.png", "cost_convergence.png"):
            if (d / png).exists():
                parts.append(_img(d / png))
    else:
        parts.append(
            f"<h1>{html.escape(str(summary.get('agent')))} on {html.escape(str(summary.get('benchmark')))}/{html.escape(str(summary.get('task')))}</h1>"
        )
        if summary.get("status") not in (None, "finished"):
            parts.append(
                f"<p class='note'><b>status: {html.escape(str(summary.get('status')))}</b> "
                f"{html.escape(str(summary.get('status_reason') or ''))}</p>"
            )
        keys = [
            "status",
            "method",
            "split",
            "seed",
            "model",
            "metric",
            "higher_is_better",
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
        ]
        parts.append(_table(["field", "value"], [[k, _fmt(summary.get(k))] for k in keys]))
        best = d / str(summary.get("best_path") or "best/candidate.py")
        if best.is_file():
            parts.append(f"<h2>best candidate ({html.escape(best.name)})</h2>")
            parts.append("<pre>" + html.escape(best.read_text(errors="replace")[:20000]) + "</pre>")
        if summary.get("extra"):
            parts.append(
                "<h2>details</h2><pre>"
                + html.escape(json.dumps(summary["extra"], indent=2, default=str))
                + "</pre>"
            )
        plot = d / "convergence.png"
        if not plot.exists():
            write_run_plot(summary, d)
        if plot.exists():
            parts.append(_img(plot))
    parts.append("</body></html>")
    out = d / "report.html"
    out.write_text("\n".join(parts))
    return out
