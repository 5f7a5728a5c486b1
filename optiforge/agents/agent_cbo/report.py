"""What ``agent-cbo`` reports: a CBO trace (and the agent's structure record) as ``AgentOutcome``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from optiforge.agents.spec import AgentOutcome
from optiforge.solvers.cbo import CBOTrace


def cbo_outcome(trace: CBOTrace, stop: str, wall: float, extra: dict[str, Any]) -> AgentOutcome:
    """The trace as the candidate, best true value per trial as the trace; costs in ``extra``."""
    best: list[float | None] = [t.best_true for t in trace.trials]
    return AgentOutcome(
        best_candidate=trace.model_dump(), claimed_value=best[-1] if best else None,
        trace=best, n_evaluations=len(trace.trials), stop_reason=stop,
        extra={
            "cumulative_cost": [t.cumulative_cost for t in trace.trials],
            "exploration_sets": trace.exploration_sets, "wall_s": round(wall, 3), **extra,
        },
    )  # fmt: skip


def agent_extra(final: Mapping[str, Any], proposer: str) -> dict[str, Any]:
    """The agent's structure record from its final graph state: every gate decision
    (``edits``), the beliefs, PC's result, the backbone and the committed graph."""
    decisions = final.get("decisions", [])
    return {
        "proposer": proposer,
        "edits": decisions,
        "n_accepted": sum(d["accepted"] for d in decisions),
        "n_rejected": sum(not d["accepted"] for d in decisions),
        "beliefs": final.get("beliefs", []), "pc": final.get("pc", {}),
        "backbone": final["structure"]["backbone"], "final_graph": final["committed"],
        "llm_error": final.get("llm_error"),
    }  # fmt: skip
