"""The formulator's graph: ``formulate`` (the LLM's formulation; offline the heuristic
formulator's reading of the description, or the fixed default with ``offline: default``) -> ``revise`` (with an LLM and ``revise_after`` > 0: a pilot run of the
formulation, made by the harness in the sandbox, then the LLM's revision for the rest of
the budget) -> end. Its candidate is the formulation; the harness's re-measurement is the
optimization run itself (``Task.evaluate`` runs it in the sandbox; a revised formulation
carries its ``pilot``, so the re-measurement runs both stages within the one budget), so
the score of a formulator run is the best value its formulation reached."""

from __future__ import annotations

import json
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from optiforge.agents.formulator.config import FormulatorConfig
from optiforge.agents.formulator.heuristic import heuristic_formulation
from optiforge.agents.formulator.proposers import llm_formulation, revision_prompt
from optiforge.agents.kit import AgentRun, RunContext
from optiforge.agents.spec import AgentOutcome
from optiforge.errors import BudgetExceeded, LLMError


class FormulatorState(TypedDict, total=False):
    formulation: dict[str, Any]
    by: str
    reasks: int
    error: str
    pilot: dict[str, Any]
    """What the revision step did: ``{"evals", "best"}`` or ``{"evals": 0, "error"}``."""


def build(task: Any, config: BaseModel, budget: int | None) -> AgentRun:
    assert isinstance(config, FormulatorConfig)

    def formulate(state: FormulatorState, runtime: Any) -> dict[str, Any]:
        ctx: RunContext = runtime.context
        if ctx.llm is None:
            if config.offline == "default":
                return {"formulation": task.default_formulation(), "by": "default", "reasks": 0}
            form = heuristic_formulation(task)
            ctx.tracer.event("heuristic_formulation", rationale=form.pop("rationale"))
            return {"formulation": form, "by": "heuristic", "reasks": 0}
        try:
            form, reasks = llm_formulation(task, ctx, config.max_reasks, config.max_variables)
        except (ValueError, LLMError, BudgetExceeded) as e:
            ctx.tracer.event("formulation_failed", error=str(e)[:300])
            return {"formulation": {}, "by": "llm", "error": f"{type(e).__name__}: {e}"[:300]}
        return {"formulation": form, "by": "llm", "reasks": reasks}

    def revise(state: FormulatorState, runtime: Any) -> dict[str, Any]:
        ctx: RunContext = runtime.context
        form = state.get("formulation")
        if ctx.llm is None or not config.revise_after or not form or state.get("pilot"):
            return {}
        pilot = task.pilot(form, config.revise_after, ctx.sandbox, seed=ctx.seed)
        seen = list(pilot.details.get("evaluations") or [])
        ctx.tracer.event("pilot", evaluations=len(seen), best=pilot.value if pilot.passed else None,
                         reason=pilot.details.get("reason"))  # fmt: skip
        if not seen:  # the pilot did not run: keep the first formulation, the whole budget
            return {"pilot": {"evals": 0, "error": str(pilot.details.get("reason", ""))[:300]}}
        reply = json.dumps({k: form[k] for k in ("space", "method") if k in form})
        try:
            new, reasks = llm_formulation(task, ctx, config.max_reasks, config.max_variables,
                                          messages=revision_prompt(task, form, seen, reply))  # fmt: skip
        except (ValueError, LLMError, BudgetExceeded) as e:
            # the first formulation keeps the whole budget (the pilot was information only)
            ctx.tracer.event("revision_failed", error=str(e)[:300])
            return {"pilot": {"evals": 0, "error": f"{type(e).__name__}: {e}"[:300]}}
        ctx.tracer.event("revision", method=new["method"], variables=len(new["space"]["variables"]))
        return {"formulation": {**new, "pilot": {**form, "evals": len(seen)}},
                "pilot": {"evals": len(seen), "best": pilot.value if pilot.passed else None},
                "reasks": state.get("reasks", 0) + reasks}  # fmt: skip

    g: StateGraph[Any, Any, Any, Any] = StateGraph(FormulatorState, context_schema=RunContext)
    g.add_node("formulate", formulate)  # type: ignore[call-overload]
    g.add_node("revise", revise)  # type: ignore[call-overload]
    g.add_edge(START, "formulate")
    g.add_edge("formulate", "revise")
    g.add_edge("revise", END)

    # A formulation is scored by the instance's own optimization run (``Task.evaluate``),
    # whose budget the benchmark fixes: a different ``--budget`` is not spent, and says so.
    spent = getattr(task, "budget", None)
    notes = ([f"--budget {budget} is not used: a formulation is scored by the instance's own "
              f"optimization run of {spent} evaluations"]
             if budget is not None and spent is not None and int(budget) != int(spent) else [])  # fmt: skip

    def outcome(state: dict[str, Any], ctx: RunContext) -> AgentOutcome:
        form = state.get("formulation") or None
        return AgentOutcome(
            best_candidate=form, n_evaluations=0, stop_reason="formulated" if form else "no formulation",
            failure=state.get("error"), notes=notes,
            extra={"formulation": form, "by": state.get("by"), "reasks": state.get("reasks", 0),
                   "pilot": state.get("pilot"), "budget": spent, "budget_asked": budget},
        )  # fmt: skip

    return AgentRun(graph=g, outcome=outcome, what="a formulator run",
                    checkpoints="formulator_checkpoints.sqlite")  # fmt: skip
