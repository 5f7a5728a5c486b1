"""The formulator's baselines: the fixed default (every knob, full ranges, GP-BO: the
paper's comparison point) and the human-designed formulation of the instance; on ``train``
tasks, AdamW at its defaults (``adamw``; ERM with uniform weights on a bilevel problem) and
every applicable catalogue method tuned by random search on a validation split
(``tuned``, the strong reference); on ``rl`` tasks the problem posed as the words state it
with ``ppo-lag`` (online) or ``linear-scalarization`` (offline) at defaults (``default``)
and every applicable RL method tuned on validation episodes (``tuned``)."""

from __future__ import annotations

from optiforge.agents.formulator.config import FormulatorConfig
from optiforge.agents.formulator.report import FormulationExtra, PlanExtra
from optiforge.agents.kit import AgentOutcome, RunContext
from optiforge.agents.spec import TaskFamily
from optiforge.evals.suites.bbowp.protocol import WordProblemTask
from optiforge.evals.suites.rl.protocol import RLPlanTask
from optiforge.evals.suites.train.protocol import TrainPlanTask


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


def adamw_baseline(
    task: TrainPlanTask, ctx: RunContext, budget: int | None, config: FormulatorConfig
) -> AgentOutcome:
    """AdamW at its catalogue defaults (the fixed default)."""
    plan = task.default_plan()
    extra = PlanExtra(plan=plan, by="adamw").model_dump()
    return AgentOutcome(best_candidate=plan, stop_reason="baseline", extra=extra)


def tuned_baseline(
    task: TrainPlanTask, ctx: RunContext, budget: int | None, config: FormulatorConfig
) -> AgentOutcome:
    """Every applicable method tuned by ``config.tune_trials`` random-search trials on a
    validation split (from the run's seed); the best plan."""
    found = task.tuned_plan(config.tune_trials, ctx.seed)
    plan = {"optimizer": found["optimizer"], "hparams": found["hparams"]}
    extra = PlanExtra(plan=plan, by="tuned", search=found.get("search")).model_dump()
    n = len(found.get("search") or [])
    return AgentOutcome(best_candidate=plan, stop_reason="baseline", extra=extra, n_evaluations=n)


TRAIN_FAMILY = TaskFamily(TrainPlanTask, "train", baselines={"adamw": adamw_baseline, "tuned": tuned_baseline})  # fmt: skip
"""The formulator on ``train`` tasks, with the baselines measured there."""


def rl_default_baseline(
    task: RLPlanTask, ctx: RunContext, budget: int | None, config: FormulatorConfig
) -> AgentOutcome:
    """The problem as the words state it, ``ppo-lag`` (online) or ``linear-scalarization``
    (offline) at its catalogue defaults."""
    plan = task.default_plan()
    extra = PlanExtra(plan=plan, by="default").model_dump()
    return AgentOutcome(best_candidate=plan, stop_reason="baseline", extra=extra)


def rl_tuned_baseline(
    task: RLPlanTask, ctx: RunContext, budget: int | None, config: FormulatorConfig
) -> AgentOutcome:
    """Every applicable RL method tuned by ``config.tune_trials`` random-search trials on
    validation episodes (from the run's seed); the best plan."""
    found = task.tuned_plan(config.tune_trials, ctx.seed)
    plan = {k: v for k, v in found.items() if k != "search"}
    extra = PlanExtra(plan=plan, by="tuned", search=found.get("search")).model_dump()
    n = len(found.get("search") or [])
    return AgentOutcome(best_candidate=plan, stop_reason="baseline", extra=extra, n_evaluations=n)


RL_FAMILY = TaskFamily(RLPlanTask, "rl", baselines={"default": rl_default_baseline, "tuned": rl_tuned_baseline})  # fmt: skip
"""The formulator on ``rl`` tasks, with the baselines measured there."""
FAMILIES = (TRAIN_FAMILY, RL_FAMILY)
"""The formulator's families beside its word problems (``AgentSpec.families``)."""
