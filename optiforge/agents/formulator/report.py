"""What the formulator reports: its outcome (``FormulatorExtra``) and, for evals, which
optimizers the formulations chose."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from optiforge.agents.kit import AgentOutcome, RunContext


class FormulationExtra(BaseModel):
    """``AgentOutcome.extra`` of the baselines: the formulation they wrote."""

    formulation: dict[str, Any] | None


class FormulatorExtra(FormulationExtra):
    """``AgentOutcome.extra`` of a formulator run."""

    by: str | None
    """Who wrote it: ``llm``, ``heuristic`` or ``default``."""
    reasks: int
    """Re-asks of the LLM for a valid formulation (both steps)."""
    pilot: dict[str, Any] | None
    """The revision step's pilot: ``{"evals", "best"}`` or ``{"evals": 0, "error"}``."""
    budget: int | None
    """Evaluations the instance's own optimization run spends (what scores it)."""
    budget_asked: int | None
    """The ``--budget`` the run was given (not spent when it differs)."""


def budget_notes(spent: int | None, asked: int | None) -> list[str]:
    """A note when the ``--budget`` asked for is not what the formulation's run spends."""
    if asked is None or spent is None or int(asked) == int(spent):
        return []
    return [f"--budget {asked} is not used: a formulation is scored by the instance's own "
            f"optimization run of {spent} evaluations"]  # fmt: skip


def formulator_outcome(
    state: Mapping[str, Any], ctx: RunContext, *, spent: int | None, asked: int | None
) -> AgentOutcome:
    """The run's outcome: its formulation is the candidate (the harness runs it)."""
    # A formulation is scored by the instance's own optimization run (``Task.evaluate``),
    # whose budget the benchmark fixes: a different ``--budget`` is not spent, and says so.
    form = state.get("formulation") or None
    extra = FormulatorExtra(formulation=form, by=state.get("by"), reasks=state.get("reasks", 0),
                            pilot=state.get("pilot"), budget=spent, budget_asked=asked)  # fmt: skip
    return AgentOutcome(
        best_candidate=form, n_evaluations=0, stop_reason="formulated" if form else "no formulation",
        failure=state.get("error"), notes=budget_notes(spent, asked), extra=extra.model_dump(),
    )  # fmt: skip


class PlanExtra(BaseModel):
    """``AgentOutcome.extra`` on a ``train`` or ``rl`` task (the baselines fill ``plan``
    only)."""

    plan: dict[str, Any] | None
    """The training plan ``{"optimizer", "hparams"}`` or the control plan ``{"kind",
    "limits"|"objective", "method", "hparams"}``."""
    by: str | None = None
    """Who wrote it: ``llm``, ``heuristic``, or the baseline's name."""
    reasks: int = 0
    rationale: str | None = None
    search: list[dict[str, Any]] | None = None
    """The ``tuned`` baseline: every random-search trial (plan and validation score)."""


def plan_outcome(
    state: Mapping[str, Any], ctx: RunContext, *, spent: int | None, asked: int | None
) -> AgentOutcome:
    """A ``train`` run's outcome: its plan is the candidate (the task trains and scores it)."""
    plan = state.get("plan") or None
    extra = PlanExtra(plan=plan, by=state.get("by"), reasks=state.get("reasks", 0),
                      rationale=state.get("rationale"))  # fmt: skip
    notes = [f"--budget {asked} is not used: a plan is scored by the task's own training run "
             f"of {spent} steps"] if asked is not None and spent is not None and asked != spent else []  # fmt: skip
    return AgentOutcome(
        best_candidate=plan, n_evaluations=0, stop_reason="planned" if plan else "no plan",
        failure=state.get("error"), notes=notes, extra=extra.model_dump(),
    )  # fmt: skip


def summary_notes(rows: list[dict[str, Any]]) -> list[str]:
    """One line per method: the optimizers its formulations (or training plans) named."""
    out = []
    by_method: dict[str, Counter[str]] = {}
    for r in rows:
        extra = r.get("extra") or {}
        form = extra.get("formulation") or {}
        if form.get("method"):
            by_method.setdefault(str(r.get("method")), Counter())[str(form["method"])] += 1
        plan = extra.get("plan") or {}
        chosen = plan.get("optimizer") or plan.get("method")  # a training or a control plan
        if chosen:
            by_method.setdefault(str(r.get("method")), Counter())[str(chosen)] += 1
    for method, counts in sorted(by_method.items()):
        out.append(f"{method} chose: " + ", ".join(f"{k} x{v}" for k, v in counts.most_common()))
    return out
