"""What AutoREM reports: an instance's outcome (``outcome_from_state``) and the accuracy table.

The accuracy table gives accuracy per split and method, LLM calls/tokens per solved.

Reads eval rows (``results.jsonl`` of ``optiforge eval autorem``, or the rows
themselves). Accuracy is the harness's re-verification (``verified``); every table
starts with the tolerance line the suite's verdicts used, because published harnesses
differ (exact equality ... 5 % after rounding) and numbers are only comparable at the
same tolerance. Offline rows are flagged: their accuracy measures the checker, not an
LLM.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel

from optiforge.agents.autorem.problem import AutoREMState
from optiforge.agents.kit import AgentOutcome, RunContext

OFFLINE_NOTE = (
    "offline accuracy measures the checker (reference reformulator as code; on text-only "
    "tasks the reference modeller parses the model sheet), not an LLM"
)


def load_rows(source: str | Path | Iterable[str | Path]) -> list[dict[str, Any]]:
    """Rows from one or more eval directories (``results.jsonl``) or JSONL files."""
    paths = [source] if isinstance(source, str | Path) else list(source)
    rows: list[dict[str, Any]] = []
    for p in map(Path, paths):
        f = p / "results.jsonl" if p.is_dir() else p
        for line in f.read_text().splitlines():
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                continue  # torn last line of an interrupted eval
            if "error" not in row:
                rows.append(row)
    return rows


def _tolerance(row: dict[str, Any]) -> str | None:
    ver = row.get("verification") or {}
    tol = (ver.get("details") or {}).get("tolerance")
    if tol:
        return str(tol)
    m = ver.get("metrics") or {}
    if "rel_tol" in m:
        return f"rel_tol={m['rel_tol']:g} abs_tol={m['abs_tol']:g} feas_tol={m['feas_tol']:g}"
    return (row.get("extra") or {}).get("tolerance")


def _memory_label(row: dict[str, Any]) -> str:
    if row.get("method") == "nominal":
        return "-"
    extra = row.get("extra") or {}
    if row.get("method") == "no-memory" or not extra.get("memory_used", False):
        return "without"
    return "with"


def _ratio(num: float, den: int) -> str:
    return f"{num / den:.1f}" if den else "-"


def accuracy_table(source: str | Path | Iterable[Any] | list[dict[str, Any]]) -> str:
    """Markdown: tolerance line, then one row per (split, method, memory) group.

    source: eval directory/directories, JSONL file(s), or a list of row dicts.
    """
    if isinstance(source, list) and (not source or isinstance(source[0], dict)):
        rows = [r for r in source if "error" not in r]
    else:
        rows = load_rows(source)  # type: ignore[arg-type]
    tolerances = sorted({t for r in rows if (t := _tolerance(r))})
    tol_line = "; ".join(tolerances) if tolerances else "unknown (no verdicts in rows)"
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        key = (str(r.get("split", "?")), str(r.get("method", "?")), _memory_label(r))
        groups.setdefault(key, []).append(r)
    order = {"dev": 0, "test": 1, "heldout": 2, "app": 3, "app-train": 4, "app-val": 5,
             "app-id": 6, "app-ood": 7}  # fmt: skip
    lines = [
        f"Accuracy = robust-feasible and objective within tolerance ({tol_line}).",
        "",
        "| split | method | memory | model | n | solved | accuracy | LLM calls / solved "
        "| tokens / solved | attempts / instance |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    offline = False
    for (split, method, mem), grp in sorted(
        groups.items(), key=lambda kv: (order.get(kv[0][0], 9), kv[0][0], kv[0][1], kv[0][2])
    ):
        n = len(grp)
        solved = sum(1 for r in grp if r.get("verified"))
        calls = sum(float(r.get("llm_calls") or 0) for r in grp)
        tokens = sum(float(r.get("tokens") or 0) for r in grp)
        attempts = sum(
            float((r.get("extra") or {}).get("attempts", r.get("n_evaluations", 0))) for r in grp
        )
        models = sorted({str(r.get("model", "?")) for r in grp})
        offline = offline or "offline" in models
        lines.append(
            f"| {split} | {method} | {mem} | {', '.join(models)} | {n} | {solved} | "
            f"{solved / n:.3f} | {_ratio(calls, solved)} | {_ratio(tokens, solved)} | "
            f"{attempts / n:.2f} |"
        )
    if offline:
        lines += ["", f"Note: {OFFLINE_NOTE}."]
    return "\n".join(lines)


def summary_notes(rows: list[dict[str, Any]]) -> list[str]:
    """Lines for the eval summary's ``notes`` (the runner prints them in summary.md)."""
    return accuracy_table(rows).splitlines()


class NominalExtra(BaseModel):
    """``AgentOutcome.extra`` of the ``nominal`` baseline (one program, no LLM)."""

    attempts: int
    llm_calls: int
    tokens: int
    retrieved: int
    memory_used: bool
    proposer: str
    last_reasons: list[str]
    """The verifier's first reasons (at most three)."""


class AutoREMExtra(BaseModel):
    """``AgentOutcome.extra`` of an AutoREM run on one instance."""

    attempts: int
    """Programs run (each judged by the verifier)."""
    solved: bool
    llm_calls: int
    tokens: int
    retrieved: int
    """Experience entries shown to the writer."""
    retrieved_ids: list[str]
    memory_used: bool
    entries_written: int
    """Experience records this trajectory's reflection wrote."""
    proposer: str | None
    """Who wrote the first program: ``llm`` or ``reference`` (None: none ran)."""
    tolerance: str | None
    """The tolerances of the last verdict."""
    last_reasons: list[str]
    """The last verdict's first reasons (at most three)."""
    text_only: bool
    modeller: str | None
    """Text-only tasks: ``llm`` or ``reference-modeller``."""
    model_match: float | None
    """Text-only tasks: 1.0 when the agent's model equals the hidden one."""
    model_lessons: int
    """Modelling lessons shown to the modelling step."""


def autorem_outcome(state: Mapping[str, Any], ctx: RunContext, *, use_memory: bool) -> AgentOutcome:
    """``AgentRun.outcome``: the outcome of the final ``state`` (memory was used when the
    config asked for it and the run has one)."""
    used = use_memory and ctx.memory is not None
    return outcome_from_state(cast(AutoREMState, state), memory_used=used)


def outcome_from_state(state: AutoREMState, *, memory_used: bool) -> AgentOutcome:
    """Agent outcome: the last code attempt as the candidate, metrics in ``extra``."""
    attempts = state.get("attempts", [])
    ran = [a for a in attempts if "passed" in a]
    best = next((a for a in ran if a["passed"]), ran[-1] if ran else None)
    trace: list[float | None] = []
    solved = False
    for a in ran:
        solved = solved or bool(a["passed"])
        trace.append(1.0 if solved else None)
    model = state.get("model")
    candidate: Any = None
    if best is not None:
        candidate = {"model": model, "code": best["code"]} if model is not None else best["code"]
    last_metrics = ran[-1].get("metrics", {}) if ran else {}
    return AgentOutcome(
        best_candidate=candidate,
        claimed_value=(1.0 if best["passed"] else 0.0) if best else None,
        trace=trace,
        n_evaluations=len(ran),
        stop_reason=state.get("stop_reason", ""),
        extra=AutoREMExtra(
            attempts=len(ran),
            solved=solved,
            llm_calls=state.get("llm_calls", 0),
            tokens=state.get("tokens", 0),
            retrieved=len(state.get("retrieved", [])),
            retrieved_ids=[r["id"] for r in state.get("retrieved", [])],
            memory_used=memory_used,
            entries_written=len(state.get("reflected", [])),
            proposer=ran[0]["origin"] if ran else None,
            tolerance=ran[-1].get("tolerance") if ran else None,
            last_reasons=ran[-1].get("reasons", [])[:3] if ran else [],
            text_only=model is not None or bool(state.get("model_origin")),
            modeller=state.get("model_origin"),
            model_match=last_metrics.get("model_match"),
            model_lessons=len(state.get("model_retrieved", [])),
        ).model_dump(),
    )
