"""The formulator's baselines: the fixed default (every knob, full ranges, GP-BO: the
paper's comparison point) and the human-designed formulation of the instance."""

from __future__ import annotations

from optiforge.agents.formulator.config import FormulatorConfig
from optiforge.agents.formulator.report import FormulationExtra
from optiforge.agents.kit import AgentOutcome, RunContext
from optiforge.evals.suites.bbowp.protocol import WordProblemTask


def default_baseline(
    task: WordProblemTask, ctx: RunContext, budget: int | None, config: FormulatorConfig
) -> AgentOutcome:
    """The fixed default formulation."""
    form = task.default_formulation()  # the optimizer seed is the harness's
    extra = FormulationExtra(formulation=form).model_dump()
    return AgentOutcome(best_candidate=form, stop_reason="baseline", extra=extra)


def human_baseline(
    task: WordProblemTask, ctx: RunContext, budget: int | None, config: FormulatorConfig
) -> AgentOutcome:
    """The instance's human-designed formulation."""
    form = dict(task.human)  # the optimizer seed is the harness's (the run's seed)
    extra = FormulationExtra(formulation=form).model_dump()
    return AgentOutcome(best_candidate=form, stop_reason="baseline", extra=extra)
