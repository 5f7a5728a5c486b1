"""SMITH's baselines: the template library alone (the no-learning baseline, whatever the
model) and answering without tools (the model answers each question directly; offline,
nothing answers)."""

from __future__ import annotations

from typing import Any

from optiforge.agents.kit import RunContext
from optiforge.agents.smith.config import SmithConfig
from optiforge.agents.smith.nodes import validation_budget
from optiforge.agents.smith.proposers import llm_answer, offline_build, offline_call
from optiforge.agents.smith.report import SmithExtra
from optiforge.agents.spec import AgentOutcome, Baseline
from optiforge.evals.suites.procedural.protocol import ProceduralTask


def templates(
    task: ProceduralTask, ctx: RunContext, budget: int | None, config: SmithConfig | None = None
) -> AgentOutcome:
    """Template tools matched by signature, offline use policy; no validation, no LLM.

    ``budget``: the agent's validations; the agent builds at most one tool per validation,
    so the baseline builds for the same first ``budget`` build tasks at most (unlimited,
    it was compared with a budget-6 agent on all of them).
    """
    limit = validation_budget(task, budget)
    pool = []
    for b in task.build_tasks[:limit]:
        tool, _ = offline_build(b["examples"])
        if tool is not None:
            pool.append({"build": b["id"], **tool})
    calls = {}
    for q in task.use_questions:
        call = offline_call(q["question"], pool)
        calls[q["id"]] = [call] if call else []
    extra = SmithExtra(pool=[t["name"] for t in pool], built=len(pool),
                       build_tasks=len(task.build_tasks), budget=limit)  # fmt: skip
    return AgentOutcome(best_candidate={"tools": pool, "calls": calls}, stop_reason="baseline",
                        extra=extra.dump())  # fmt: skip


def no_tools(
    task: ProceduralTask, ctx: RunContext, budget: int | None, config: SmithConfig | None = None
) -> AgentOutcome:
    """Every question answered directly by the model (offline: no answers)."""
    calls: dict[str, list[dict[str, Any]]] = {}
    errors = []
    for q in task.use_questions:
        if ctx.llm is None:
            calls[q["id"]] = []
            continue
        value, why = llm_answer(ctx, q["question"])
        calls[q["id"]] = [{"answer": value}] if not why else []
        if why:
            errors.append(why)
    extra = SmithExtra(pool=[], built=0, build_tasks=len(task.build_tasks), errors=errors[-5:])
    return AgentOutcome(best_candidate={"tools": [], "calls": calls}, stop_reason="baseline",
                        extra=extra.dump())  # fmt: skip


BASELINES: dict[str, Baseline[ProceduralTask, SmithConfig]] = {
    "templates": templates,
    "no-tools": no_tools,
}
