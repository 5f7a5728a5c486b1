"""What ``agent-cbo`` reports: a CBO trace (and the agent's structure record) as ``AgentOutcome``."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, cast

from pydantic import BaseModel

from optiforge.agents.agent_cbo.problem import AgentCBOState, state_trace
from optiforge.agents.kit import AgentOutcome, RunContext
from optiforge.errors import InvalidTask
from optiforge.solvers.cbo import CBOTrace


class CBOTraceExtra(BaseModel):
    """``AgentOutcome.extra`` of a CBO run (the baselines'): the costs and the sets."""

    cumulative_cost: list[float]
    """Cost spent after each trial."""
    exploration_sets: list[list[str]]
    """The sets the optimizer explored (the agent's: its last committed graph's)."""
    wall_s: float
    proposer: str
    """``llm``, ``discovery-only``, ``known-graph`` or ``plain-bo``."""


class AgentCBOExtra(CBOTraceExtra):
    """``AgentOutcome.extra`` of an agent-cbo run: the trace's, plus the structure record."""

    edits: list[dict[str, Any]]
    """Every gate decision (``GateDecision``), rejected LLM choices included."""
    n_accepted: int
    n_rejected: int
    beliefs: list[dict[str, Any]]
    """The LLM's edge beliefs (``EdgeBelief``) at the end (none offline)."""
    pc: dict[str, Any]
    """PC's result (``PCResult``)."""
    backbone: list[tuple[str, str]]
    """The protected backbone (PC and LLM agree)."""
    final_graph: list[list[str]]
    """The committed graph's edges."""
    llm_error: str | None
    """Why the language prior failed (None: it did not)."""


def trace_fields(trace: CBOTrace, wall: float, proposer: str) -> dict[str, Any]:
    """``CBOTraceExtra``'s fields for ``trace``."""
    return {"cumulative_cost": [t.cumulative_cost for t in trace.trials],
            "exploration_sets": trace.exploration_sets, "wall_s": round(wall, 3),
            "proposer": proposer}  # fmt: skip


def cbo_outcome(trace: CBOTrace, stop: str, extra: CBOTraceExtra) -> AgentOutcome:
    """The trace as the candidate, best true value per trial as the trace; costs in ``extra``."""
    best: list[float | None] = [t.best_true for t in trace.trials]
    return AgentOutcome(
        best_candidate=trace.model_dump(), claimed_value=best[-1] if best else None,
        trace=best, n_evaluations=len(trace.trials), stop_reason=stop, extra=extra.model_dump(),
    )  # fmt: skip


def baseline_outcome(trace: CBOTrace, wall: float, proposer: str) -> AgentOutcome:
    """A baseline's outcome: the trace, its costs and sets."""
    return cbo_outcome(trace, "baseline", CBOTraceExtra(**trace_fields(trace, wall, proposer)))


def agent_extra(trace: CBOTrace, wall: float, final: AgentCBOState, proposer: str) -> AgentCBOExtra:
    """The agent's extra from its final graph state: every gate decision (``edits``), the
    beliefs, PC's result, the backbone and the committed graph."""
    decisions = final.get("decisions", [])
    return AgentCBOExtra(
        **trace_fields(trace, wall, proposer), edits=decisions,
        n_accepted=sum(d["accepted"] for d in decisions),
        n_rejected=sum(not d["accepted"] for d in decisions),
        beliefs=final.get("beliefs", []), pc=final.get("pc", {}),
        backbone=final["structure"]["backbone"], final_graph=final["committed"],
        llm_error=final.get("llm_error"),
    )  # fmt: skip


def agent_outcome(state: Mapping[str, Any], ctx: RunContext, *, t0: float) -> AgentOutcome:
    """``AgentRun.outcome``: the run's outcome read from its final state (the state, not a
    session, is the run's record); ``t0``: when the run was built (its wall time)."""
    final = cast(AgentCBOState, state)
    trace = state_trace(final, ctx.seed)
    if not trace.trials:
        raise InvalidTask("agent-cbo ran no intervention")
    proposer = "llm" if ctx.llm is not None else "discovery-only"
    extra = agent_extra(trace, time.perf_counter() - t0, final, proposer)
    return cbo_outcome(trace, final.get("stop_reason", ""), extra)
