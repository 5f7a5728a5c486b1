"""The formulator graph's nodes: ``formulate`` then ``revise`` on a word problem, ``plan``
on a ``train`` task, ``control_plan`` on an ``rl`` task (see ``agent.py``).

Each node reads the run's task, config and handles from ``runtime.context``
(``AgentContext[WordProblemTask, FormulatorConfig]``, or ``TrainPlanTask`` for ``plan``,
``RLPlanTask`` for ``control_plan``).
"""

from __future__ import annotations

import json
from typing import Any

from langgraph.runtime import Runtime

from optiforge.agents.formulator.config import FormulatorConfig
from optiforge.agents.formulator.heuristic import heuristic_formulation
from optiforge.agents.formulator.problem import FormulatorState
from optiforge.agents.formulator.proposers import llm_formulation, revision_prompt
from optiforge.agents.formulator.rl_plan import heuristic_rl_plan, llm_rl_plan
from optiforge.agents.formulator.train_plan import heuristic_plan, llm_plan
from optiforge.agents.kit.context import AgentContext
from optiforge.errors import BudgetExceeded, LLMError
from optiforge.evals.suites.bbowp.protocol import WordProblemTask
from optiforge.evals.suites.rl.protocol import RLPlanTask
from optiforge.evals.suites.train.protocol import TrainPlanTask

Ctx = AgentContext[WordProblemTask, FormulatorConfig]
TrainCtx = AgentContext[TrainPlanTask, FormulatorConfig]
RLCtx = AgentContext[RLPlanTask, FormulatorConfig]


def formulate(state: FormulatorState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """The first formulation: the LLM's, offline the heuristic's (or the fixed default)."""
    ctx = runtime.context
    task, config = ctx.task, ctx.config
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


def revise(state: FormulatorState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """With an LLM and ``revise_after``: a pilot run of the formulation, then the LLM's
    revision for the rest of the budget (the revised formulation carries its pilot)."""
    ctx = runtime.context
    task, config = ctx.task, ctx.config
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


def plan(state: FormulatorState, runtime: Runtime[TrainCtx]) -> dict[str, Any]:
    """A training plan: the LLM's (re-asked when invalid), offline the heuristic's rules."""
    ctx = runtime.context
    task, config = ctx.task, ctx.config
    if ctx.llm is None:
        p = heuristic_plan(task, config.optimizer)
        rationale = str(p.pop("rationale"))
        ctx.tracer.event("heuristic_plan", optimizer=p["optimizer"], rationale=rationale)
        return {"plan": p, "by": "heuristic", "reasks": 0, "rationale": rationale}
    try:
        p, reasks = llm_plan(task, ctx, config.max_reasks, config.optimizer)
    except (ValueError, LLMError, BudgetExceeded) as e:
        ctx.tracer.event("plan_failed", error=str(e)[:300])
        return {"plan": {}, "by": "llm", "error": f"{type(e).__name__}: {e}"[:300]}
    ctx.tracer.event("llm_plan", optimizer=p["optimizer"], hparams=p["hparams"])
    return {"plan": p, "by": "llm", "reasks": reasks}


def control_plan(state: FormulatorState, runtime: Runtime[RLCtx]) -> dict[str, Any]:
    """A control plan (the posed problem and an RL method): the LLM's (re-asked when
    invalid), offline the heuristic's rules."""
    ctx = runtime.context
    task, config = ctx.task, ctx.config
    if ctx.llm is None:
        try:
            p = heuristic_rl_plan(task, config.rl_method)
        except ValueError as e:
            ctx.tracer.event("plan_failed", error=str(e)[:300])
            return {"plan": {}, "by": "heuristic", "error": f"ValueError: {e}"[:300]}
        rationale = str(p.pop("rationale"))
        ctx.tracer.event("heuristic_plan", method=p["method"], rationale=rationale)
        return {"plan": p, "by": "heuristic", "reasks": 0, "rationale": rationale}
    try:
        p, reasks = llm_rl_plan(task, ctx, config.max_reasks, config.rl_method)
    except (ValueError, LLMError, BudgetExceeded) as e:
        ctx.tracer.event("plan_failed", error=str(e)[:300])
        return {"plan": {}, "by": "llm", "error": f"{type(e).__name__}: {e}"[:300]}
    ctx.tracer.event("llm_plan", method=p["method"], posed=p["kind"], hparams=p["hparams"])
    return {"plan": p, "by": "llm", "reasks": reasks}
