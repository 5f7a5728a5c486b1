"""The runs a user has made: ``optiforge runs`` (list) and ``optiforge compare`` (side by side).

Reads only what runs wrote (``manifest.json``, ``summary.json``, ``eval.json``); a run that
was killed keeps ``status: running`` in its manifest and is shown as ``running/killed``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from optiforge.errors import RunRecordError
from optiforge.harness.summary import RunSummary


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def describe_run(d: Path) -> dict[str, Any] | None:
    """One row for a run or eval directory (None when ``d`` is neither)."""
    if (d / "eval.json").is_file():
        ev, summ = _read(d / "eval.json"), _read(d / "summary.json")
        settings = ev.get("settings") or {}
        return {
            "id": d.name,
            "path": str(d),
            "kind": "eval",
            "status": summ.get("status") or ("unfinished" if not summ else "finished"),
            "agent": ev.get("agent"),
            "bench": f"{ev.get('benchmark')}/{ev.get('split')} x{ev.get('seeds')} seeds",
            "model": settings.get("model"),
            "best": None,
            "metric": None,
            "cost_usd": None,
            "started": None,
            "reason": summ.get("status_reason"),
        }
    if not (d / "manifest.json").is_file():
        return None
    man = _read(d / "manifest.json")
    run = RunSummary.load_if_any(d) or RunSummary()
    cfg = man.get("config") or {}
    status = run.status or man.get("status") or "?"
    if status == "running" and not man.get("finished_at"):
        status = "running/killed"
    return {
        "id": d.name,
        "path": str(d),
        "kind": "run",
        "status": status,
        "agent": cfg.get("method") or cfg.get("agent"),
        "bench": cfg.get("task"),
        "model": (cfg.get("settings") or {}).get("model") or man.get("provider"),
        "best": run.best_score,
        "metric": run.metric,
        "cost_usd": run.cost_usd,
        "llm_calls": run.llm_calls,
        "unpriced_calls": run.unpriced_calls,
        "started": man.get("started_at"),
        "reason": run.status_reason or man.get("status_reason") or man.get("error"),
    }


def list_runs(root: str | Path = "runs") -> list[dict[str, Any]]:
    """Every run and eval directly under ``root``, newest first."""
    r = Path(root)
    if not r.is_dir():
        raise RunRecordError(f"{r} is not a directory of runs (pass --root DIR)")
    rows = [row for d in r.iterdir() if d.is_dir() and (row := describe_run(d)) is not None]
    return sorted(rows, key=lambda x: (x.get("started") or "", x["id"]), reverse=True)


def compare_runs(dirs: list[str | Path]) -> list[dict[str, Any]]:
    """The finished summaries of ``dirs`` side by side (the harness's re-measured values).

    Raises:
        RunRecordError: a directory is not a run, or runs of different tasks are compared
            (their numbers are not comparable).
    """
    rows = []
    for raw in dirs:
        d = Path(raw)
        row = describe_run(d)
        if row is None or row["kind"] != "run":
            raise RunRecordError(f"{d} is not a run directory (no manifest.json)")
        summ = RunSummary.load_if_any(d) or RunSummary()
        row.update(
            higher_is_better=summ.higher_is_better,
            n_evaluations=summ.n_evaluations,
            wall_s=summ.wall_s,
            trace=summ.trace,
            seed=summ.seed,
        )
        rows.append(row)
    tasks = {r["bench"] for r in rows}
    if len(tasks) > 1:
        raise RunRecordError(
            f"these runs are on different tasks ({', '.join(sorted(map(str, tasks)))})"
        )
    return rows


def write_compare_plot(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """Best-so-far curves of compared runs in one PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for r in rows:
        trace = [v for v in r["trace"] if v is not None]
        if trace:
            ax.plot(
                range(1, len(trace) + 1), trace, label=f"{r['id']} ({r['agent']}, {r['model']})"
            )
    metric = next((r["metric"] for r in rows if r.get("metric")), "value")
    ax.set_xlabel("evaluation")
    ax.set_ylabel(f"best {metric} so far")
    ax.set_title(str(rows[0]["bench"]) if rows else "")
    ax.legend(fontsize=8)
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
