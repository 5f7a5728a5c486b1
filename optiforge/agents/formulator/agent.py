"""The formulator's graph: ``formulate`` (the LLM's formulation, or the fixed default
offline) -> end. Its candidate is the formulation; the harness's re-measurement is the
optimization run itself (``Task.evaluate`` runs it in the sandbox), so the score of a
formulator run is the best value its formulation reached."""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from optiforge.agents.formulator.config import FormulatorConfig
from optiforge.agents.formulator.proposers import llm_formulation
from optiforge.agents.kit import AgentRun, RunContext
from optiforge.agents.spec import AgentOutcome
from optiforge.errors import BudgetExceeded, LLMError


class FormulatorState(TypedDict, total=False):
    formulation: dict[str, Any]
    by: str
    reasks: int
    error: str


def build(task: Any, config: BaseModel, budget: int | None) -> AgentRun:
    assert isinstance(config, FormulatorConfig)

    def formulate(state: FormulatorState, runtime: Any) -> dict[str, Any]:
        ctx: RunContext = runtime.context
        if ctx.llm is None:
            return {"formulation": task.default_formulation(), "by": "default", "reasks": 0}
        try:
            form, reasks = llm_formulation(task, ctx, config.max_reasks, config.max_variables)
        except (ValueError, LLMError, BudgetExceeded) as e:
            ctx.tracer.event("formulation_failed", error=str(e)[:300])
            return {"formulation": {}, "by": "llm", "error": f"{type(e).__name__}: {e}"[:300]}
        return {"formulation": form, "by": "llm", "reasks": reasks}

    g: StateGraph[Any, Any, Any, Any] = StateGraph(FormulatorState, context_schema=RunContext)
    g.add_node("formulate", formulate)  # type: ignore[call-overload]
    g.add_edge(START, "formulate")
    g.add_edge("formulate", END)

    def outcome(state: dict[str, Any], ctx: RunContext) -> AgentOutcome:
        form = state.get("formulation") or None
        if form:
            form = {**form, "seed": ctx.seed}  # the optimization run's seed is the run's
        return AgentOutcome(
            best_candidate=form, n_evaluations=0, stop_reason="formulated" if form else "no formulation",
            failure=state.get("error"),
            extra={"formulation": form, "by": state.get("by"), "reasks": state.get("reasks", 0)},
        )  # fmt: skip

    return AgentRun(graph=g, outcome=outcome, what="a formulator run",
                    checkpoints="formulator_checkpoints.sqlite")  # fmt: skip
