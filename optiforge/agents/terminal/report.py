"""What ``terminal`` reports: its outcome's extra, and eval notes (turns, LLM calls and stop
reasons per method)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict


class TerminalExtra(BaseModel):
    """``AgentOutcome.extra`` of a terminal run (the keys of ``summary.json``'s ``extra``)."""

    model_config = ConfigDict(extra="forbid")

    steps: int | None
    """Turns the episode took."""
    llm_calls: int | None
    """LLM calls, re-asks included."""
    tokens: int | None
    harness: str | None
    """The harness's version (``Harness.version``)."""


def summary_notes(rows: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| method | runs | solved | turns/run | LLM calls/run | stops |",
        "|---|---|---|---|---|---|",
    ]
    for method in sorted({str(r.get("method", "?")) for r in rows}):
        grp = [r for r in rows if str(r.get("method", "?")) == method]
        ex = [r.get("extra") or {} for r in grp]
        solved = sum(1 for r in grp if (r.get("best_score") or 0) >= 1.0)
        stops = Counter(str(r.get("stop_reason", "")) for r in grp)
        lines.append(f"| {method} | {len(grp)} | {solved} | {sum(e.get('steps') or 0 for e in ex) / len(grp):.2f} | "
                     f"{sum(e.get('llm_calls') or 0 for e in ex) / len(grp):.2f} | "
                     f"{', '.join(f'{k} {v}' for k, v in stops.most_common())} |")  # fmt: skip
    return lines
