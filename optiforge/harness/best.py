"""``best/`` in a run directory: the best candidate as a file, its metrics and its lineage.

Written by the runner at the end of every run that returned a candidate:

- ``best/candidate.py`` when the candidate is source code (a ``code`` field), else
  ``best/candidate.json`` (the payload as the agent returned it);
- ``best/metrics.json``: the harness's re-measured value, whether it verified, the agent's
  own claim, and the task's metrics of the re-measurement;
- ``best/lineage.json``: the evaluations the candidate descends from, oldest first, read
  from ``evaluations.jsonl`` (absent when the agent keeps no such log).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from optiforge.harness.summary import RunSummary
from optiforge.runs import read_jsonl

BEST = "best"
EVALUATIONS = "evaluations.jsonl"


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    return read_jsonl(run_dir / EVALUATIONS)


def lineage(run_dir: Path, candidate: Any) -> list[dict[str, Any]]:
    """The chain of evaluations from the first ancestor to ``candidate`` (empty if unknown)."""
    rows = _rows(run_dir)
    by_id = {r.get("id"): r for r in rows if r.get("id")}
    want = json.dumps(candidate, sort_keys=True, default=str)
    match = [r for r in rows if json.dumps(r.get("payload"), sort_keys=True, default=str) == want]
    if not match:
        return []
    chain: list[dict[str, Any]] = []
    todo, seen = [match[0]], set()
    while todo:
        row = todo.pop()
        if row.get("id") in seen:
            continue
        seen.add(row.get("id"))
        chain.append(
            {k: row.get(k) for k in ("id", "parent_ids", "origin", "round", "value", "rationale")}
        )
        todo += [by_id[p] for p in row.get("parent_ids") or [] if p in by_id]
    return sorted(chain, key=lambda r: (r.get("round") or 0, str(r.get("id"))))


def write_best(run_dir: str | Path, summary: RunSummary, candidate: Any) -> Path | None:
    """Write ``run_dir/best/``; returns the candidate file (None when there is no candidate)."""
    if candidate is None:
        return None
    d = Path(run_dir) / BEST
    d.mkdir(exist_ok=True)
    code = candidate.get("code") if isinstance(candidate, dict) else None
    if isinstance(code, str):
        path = d / "candidate.py"
        path.write_text(code if code.endswith("\n") else code + "\n")
    else:
        path = d / "candidate.json"
        path.write_text(json.dumps(candidate, indent=2, default=str) + "\n")
    metrics = {
        "metric": summary.metric,
        "higher_is_better": summary.higher_is_better,
        "best_score": summary.best_score,
        "verified": summary.verified,
        "claimed_score": summary.claimed_score,
        "task_metrics": summary.verification.get("metrics"),
    }
    (d / "metrics.json").write_text(json.dumps(metrics, indent=2, default=str) + "\n")
    chain = lineage(Path(run_dir), candidate)
    if chain:
        (d / "lineage.json").write_text(json.dumps(chain, indent=2, default=str) + "\n")
    return path
