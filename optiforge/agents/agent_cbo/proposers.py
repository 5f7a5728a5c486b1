"""agent-CBO's proposers: the LLM sides of its Calibration and Residual Repair agents.

Both work only on the residual (uncertain) structure and only ever *suggest*: what they
return is scored (the structure score + the beliefs' log-odds) and passes the commit gate
like any other edit.

- Calibration: the LLM sees the interventional evidence gathered so far
  (``intervention_evidence``: which variables moved when a set was intervened on, in
  standard errors of the observational mean) and the data score of every candidate edit,
  and revises its confidence in edges on uncertain pairs (``Calibration``). The revised
  beliefs replace the earlier ones on those pairs; beliefs on protected pairs cannot be
  revised. Offline the structure score alone is the calibration.
- Residual repair: the LLM picks at most ``k`` of the candidate edits (``RepairPlan``),
  which go to the gate before the best data edits. Offline the best-scoring data edits
  above the margin are picked.

Every LLM call is optional (``ask``): an ``LLMError`` or spent budget leaves the round to
the data (recorded as an event, never a crash).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from optiforge.agents.agent_cbo.structure import Edge, EdgeBelief, Edit
from optiforge.agents.kit import RunContext
from optiforge.errors import BudgetExceeded, LLMError

RESPONSE_Z = 4.0
"""A variable "responded" to an intervention when one trial's unit mean sat more than this
many standard errors from its observational mean (100 units: 0.4 observational sd)."""


class SetEvidence(BaseModel):
    """What intervening on one exploration set did to the other variables."""

    model_config = ConfigDict(extra="forbid")

    intervened: list[str]
    n_trials: int
    responded: dict[str, float]
    """Variable -> largest |shift| seen, in standard errors of the observational mean."""
    unaffected: list[str]


def intervention_evidence(
    obs: Mapping[str, np.ndarray],
    interventions: Sequence[tuple[Mapping[str, float], Mapping[str, np.ndarray]]],
    *,
    z: float = RESPONSE_Z,
) -> list[SetEvidence]:
    """Per intervened set, which non-intervened variables shifted (``(x, units)`` pairs).

    A variable that shifts under ``do(S)`` is a descendant of ``S``; one that never shifts
    over several settings is probably not (or its mechanism is flat there).
    """
    by_set: dict[tuple[str, ...], list[tuple[Mapping[str, float], Mapping[str, np.ndarray]]]] = {}
    for x, units in interventions:
        by_set.setdefault(tuple(sorted(x)), []).append((x, units))
    out: list[SetEvidence] = []
    for s, trials in by_set.items():
        shifts: dict[str, float] = {}
        for v, col in obs.items():
            if v in s:
                continue
            mu, sd = float(np.mean(col)), float(np.std(col)) + 1e-12
            best = 0.0
            for _, units in trials:
                u = np.asarray(units[v], dtype=float)
                best = max(best, abs(float(u.mean()) - mu) / (sd / np.sqrt(max(len(u), 1))))
            shifts[v] = best
        out.append(
            SetEvidence(
                intervened=list(s),
                n_trials=len(trials),
                responded={v: round(t, 1) for v, t in shifts.items() if t > z},
                unaffected=[v for v, t in shifts.items() if t <= z],
            )  # fmt: skip
        )
    return out


def _evidence_text(evidence: Sequence[SetEvidence]) -> str:
    if not evidence:
        return "(no interventions yet)"
    lines = []
    for e in evidence:
        moved = ", ".join(f"{v} ({t:g} SE)" for v, t in sorted(e.responded.items())) or "none"
        still = ", ".join(e.unaffected) or "none"
        lines.append(
            f"- do({', '.join(e.intervened)}) over {e.n_trials} trial(s): moved {moved}; "
            f"unaffected {still}"
        )
    return "\n".join(lines)


def _graph_text(edges: Sequence[Edge]) -> str:
    return ", ".join(f"{a}->{b}" for a, b in edges) or "(no edges)"


class Calibration(BaseModel):
    """Structured output of the Calibration agent: revised beliefs on uncertain pairs."""

    model_config = ConfigDict(extra="forbid")

    revised: list[EdgeBelief] = Field(default_factory=list)


class RepairChoice(BaseModel):
    """One edit the Residual Repair agent asks the gate to consider."""

    model_config = ConfigDict(extra="forbid")

    op: Literal["add", "remove", "reverse"]
    cause: str
    effect: str
    """``add``: the new edge; ``remove``/``reverse``: the existing edge ``cause -> effect``."""
    rationale: str = ""


class RepairPlan(BaseModel):
    """Structured output of the Residual Repair agent."""

    model_config = ConfigDict(extra="forbid")

    edits: list[RepairChoice] = Field(default_factory=list)


def _context(
    variables: Mapping[str, str],
    target: str,
    committed: Sequence[Edge],
    backbone: Sequence[Edge],
    evidence: Sequence[SetEvidence],
) -> str:
    listing = "\n".join(f"- {v}: {d}" for v, d in variables.items())
    return (
        f"Variables:\n{listing}\nOutcome (a sink): {target}\n\n"
        f"Current graph: {_graph_text(committed)}\n"
        f"Protected backbone (cannot change): {_graph_text(backbone)}\n\n"
        f"Interventional evidence (shift of each variable's mean under do(), in standard "
        f"errors; a variable that moves is a descendant of the intervened set):\n"
        f"{_evidence_text(evidence)}\n"
    )


def _edit_table(edits: Sequence[Edit], data_scores: Mapping[str, float]) -> str:
    return "\n".join(f"- {e.label()}: data score {data_scores.get(e.label(), 0.0):+.1f}"
                     for e in edits)  # fmt: skip


def calibration_messages(
    variables: Mapping[str, str],
    target: str,
    committed: Sequence[Edge],
    backbone: Sequence[Edge],
    uncertain: Sequence[Edge],
    beliefs: Sequence[EdgeBelief],
    evidence: Sequence[SetEvidence],
) -> list[dict[str, str]]:
    """The Calibration agent's prompt."""
    pairs = ", ".join(f"{a}-{b}" for a, b in uncertain) or "(none)"
    held = "\n".join(
        f"- {b.cause}->{b.effect} present={str(b.present).lower()} confidence {b.confidence:.2f}"
        for b in beliefs
    ) or "(none)"  # fmt: skip
    return [
        {
            "role": "system",
            "content": "You are the calibration agent of a causal Bayesian optimizer. You "
            "revise confidences in direct causal edges against interventional evidence.",
        },
        {
            "role": "user",
            "content": _context(variables, target, committed, backbone, evidence)
            + f"\nUncertain pairs (only these may be revised): {pairs}\n"
            f"Your current beliefs:\n{held}\n\n"
            "Return revised beliefs (cause, effect, present, confidence in [0, 1], short "
            "rationale) for the uncertain pairs the evidence bears on. Lower the confidence "
            "of beliefs the evidence contradicts; omit pairs you have no view on.",
        },
    ]


def repair_messages(
    variables: Mapping[str, str],
    target: str,
    committed: Sequence[Edge],
    backbone: Sequence[Edge],
    evidence: Sequence[SetEvidence],
    candidates: Sequence[Edit],
    data_scores: Mapping[str, float],
    k: int,
) -> list[dict[str, str]]:
    """The Residual Repair agent's prompt."""
    return [
        {
            "role": "system",
            "content": "You are the residual repair agent of a causal Bayesian optimizer. You "
            "choose a few local edits of the uncertain part of a causal graph.",
        },
        {
            "role": "user",
            "content": _context(variables, target, committed, backbone, evidence)
            + "\nCandidate edits (data score: interventional BIC gain in nats; positive "
            f"means the data prefer the edit):\n{_edit_table(candidates, data_scores)}\n\n"
            f"Choose at most {k} edits from the candidates that make the graph more correct "
            "(op, cause, effect, rationale). Choose none if the graph looks right; a "
            "deterministic gate accepts an edit only if the data support it.",
        },
    ]


def merge_calibration(
    beliefs: Sequence[EdgeBelief],
    revised: Sequence[EdgeBelief],
    uncertain: Sequence[Edge],
    nodes: Sequence[str],
) -> tuple[list[EdgeBelief], list[str]]:
    """Beliefs after calibration and a note per change.

    A revision replaces every belief on the same unordered pair; revisions naming unknown
    variables or a protected (non-uncertain) pair are dropped.
    """
    known = set(nodes)
    free = {frozenset(p) for p in uncertain}
    kept = {frozenset((r.cause, r.effect)): r for r in revised
            if r.cause in known and r.effect in known and r.cause != r.effect
            and frozenset((r.cause, r.effect)) in free}  # fmt: skip
    out = [b for b in beliefs if frozenset((b.cause, b.effect)) not in kept]
    notes = []
    old = {frozenset((b.cause, b.effect)): b for b in beliefs}
    for pair, r in kept.items():
        out.append(r)
        was = old.get(pair)
        now = f"{r.cause}->{r.effect} present={str(r.present).lower()} {r.confidence:.2f}"
        if was is None:
            notes.append(f"new: {now}")
        elif (was.cause, was.effect, was.present, round(was.confidence, 2)) != (
            r.cause,
            r.effect,
            r.present,
            round(r.confidence, 2),
        ):
            notes.append(f"{was.cause}->{was.effect} present={str(was.present).lower()} "
                         f"{was.confidence:.2f} => {now}")  # fmt: skip
    dropped = len(revised) - len(kept)
    if dropped:
        notes.append(f"dropped {dropped} revision(s) on unknown or protected pairs")
    return out, notes


def plan_edits(
    plan: RepairPlan, candidates: Sequence[Edit], k: int
) -> tuple[list[Edit], list[str]]:
    """The plan's edits that are candidate edits (at most ``k``) and why others were dropped."""
    allowed = {e.label(): e for e in candidates}
    chosen: list[Edit] = []
    dropped: list[str] = []
    for c in plan.edits:
        label = f"{c.op} {c.cause}->{c.effect}"
        if label not in allowed:
            dropped.append(f"{label}: not a local edit of an uncertain pair")
        elif len(chosen) >= k:
            dropped.append(f"{label}: over the bound of {k} edits per round")
        elif all(e.label() != label for e in chosen):
            chosen.append(Edit(op=c.op, edge=(c.cause, c.effect), source="llm"))
    return chosen, dropped


def ask(ctx: RunContext, node: str, msgs: list[dict[str, str]], schema: type[BaseModel]
        ) -> BaseModel | None:  # fmt: skip
    """One sub-agent LLM call; a failure is an event and leaves the round to the data."""
    assert ctx.llm is not None
    try:
        reply = ctx.llm.complete(msgs, schema=schema)
    except (LLMError, BudgetExceeded) as err:
        ctx.tracer.event(f"cbo_{node}_llm", error=f"{type(err).__name__}: {err}")
        return None
    assert isinstance(reply.parsed, schema)
    return reply.parsed
