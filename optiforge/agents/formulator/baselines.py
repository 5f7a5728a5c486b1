"""The formulator's baselines: the fixed default (every knob, full ranges, GP-BO: the
paper's comparison point) and the human-designed formulation of the instance."""

from __future__ import annotations

from typing import Any

from optiforge.agents.kit import RunContext
from optiforge.agents.spec import AgentOutcome


def default_baseline(
    task: Any, ctx: RunContext, budget: int | None, config: Any = None
) -> AgentOutcome:
    """The fixed default formulation."""
    form = task.default_formulation()  # the optimizer seed is the harness's
    return AgentOutcome(best_candidate=form, stop_reason="baseline", extra={"formulation": form})


def human_baseline(
    task: Any, ctx: RunContext, budget: int | None, config: Any = None
) -> AgentOutcome:
    """The instance's human-designed formulation."""
    form = dict(task.human)  # the optimizer seed is the harness's (the run's seed)
    return AgentOutcome(best_candidate=form, stop_reason="baseline", extra={"formulation": form})
