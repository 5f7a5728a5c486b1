"""SMITH's graph nodes (``start``, ``build_step``, ``use_step``) and their routes, as
module-level functions reading the run from ``runtime.context`` (``Ctx``).

- **start**: the pool begins with the tools earlier runs stored in memory (``Tool``
  records tagged ``smith``; ``memory_pool``).
- **build_step** (one build task per step): up to ``build_attempts`` tools are written
  (LLM, told why the last one failed; offline, the template library) and validated on the
  task's validation instances in the sandbox (``task.validate``: schema, code and outcome,
  each logged per attempt as a ``smith_build`` event). The first tool passing all three
  axes joins the pool (and memory); a build task whose tools all fail adds nothing. Each
  validation is one evaluation of the budget.
- **use_step** (a chunk of questions per step): each question gets up to
  ``calls_per_question`` function calls against the pool (LLM function calling, or the
  offline matcher). The agent never sees a use question's answer: the harness runs the
  calls and checks them (``task.evaluate``).
"""

from __future__ import annotations

from typing import Any

from langgraph.graph import END
from langgraph.runtime import Runtime

from optiforge.agents.kit.context import AgentContext, RunContext
from optiforge.agents.smith.config import SmithConfig
from optiforge.agents.smith.problem import SmithState, renamed, unique_name
from optiforge.agents.smith.proposers import (
    feedback_text,
    llm_build,
    llm_call,
    offline_build,
    offline_call,
)
from optiforge.evals.suites.procedural.protocol import ProceduralTask

Ctx = AgentContext[ProceduralTask, SmithConfig]
"""SMITH's runtime context: the run's handles, its ``ProceduralTask``, config and budget."""
USE_CHUNK = 8
"""Use questions per ``use_step``."""
AXES = ("schema", "code", "outcome")


def context_of(ctx: RunContext) -> Ctx:
    """``ctx`` as a smith run's context (``AgentRun`` hands its outcome the context it
    drove the graph with: ``AgentRun.context``).

    Raises:
        TypeError: ``ctx`` is a bare ``RunContext`` (no task, config or budget).
    """
    if not isinstance(ctx, AgentContext):
        raise TypeError("a smith outcome needs the run's AgentContext (AgentRun.context)")
    return ctx


def validation_budget(task: ProceduralTask, budget: int | None) -> int:
    """Tool validations a SMITH run may spend (its ``--budget``; None: the task's, else 3
    per build task)."""
    return int(budget or task.budget or 3 * len(task.build_tasks))


def questions(ctx: Ctx) -> list[dict[str, str]]:
    """The task's use questions (read once per run)."""
    return ctx.memo("questions", lambda: ctx.task.use_questions)


def start(state: SmithState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """The pool from memory, and the counters at 0."""
    ctx = runtime.context
    pool: list[dict[str, Any]] = []
    if ctx.config.memory_pool and ctx.memory is not None:
        for t in ctx.memory.tools():
            if "smith" in t.tags and t.code:
                pool.append({"build": None, "name": t.name, "description": t.description,
                             "parameters": t.json_schema, "code": t.code})  # fmt: skip
    ctx.tracer.event("smith_start", pooled_from_memory=len(pool),
                     build_tasks=len(ctx.task.build_tasks), questions=len(questions(ctx)))  # fmt: skip
    return {"pool": pool, "builds": 0, "spent": 0, "log": [], "asked": 0, "calls": {}, "errors": [],
            "done": False}  # fmt: skip


def build_step(state: SmithState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """The next build task: write and validate tools until one passes (or the attempts or
    the budget are spent)."""
    ctx = runtime.context
    task, config = ctx.task, ctx.config
    limit, builds = validation_budget(task, ctx.eval_budget), task.build_tasks
    pool, log, errors = list(state["pool"]), list(state["log"]), list(state["errors"])
    spent = int(state["spent"])
    b = builds[int(state["builds"])]
    feedback = None
    for attempt in range(config.build_attempts):
        if spent >= limit:
            errors.append(f"{b['id']}: the budget of {limit} validations is spent")
            break
        if ctx.llm is not None:
            tool, why = llm_build(ctx, b["examples"], feedback)
        else:
            tool, why = offline_build(b["examples"])
        if tool is None:
            errors.append(f"{b['id']} attempt {attempt + 1}: {why}")
            log.append({"build": b["id"], "attempt": attempt + 1, "schema": 0.0, "code": 0.0,
                        "outcome": 0.0, "passed": False, "why": why})  # fmt: skip
            if ctx.llm is None:
                break  # the template library has one answer
            feedback = why
            continue
        check = task.validate(b["id"], tool, ctx.sandbox, seed=ctx.seed)
        spent += 1
        entry = {"build": b["id"], "attempt": attempt + 1, "name": tool.get("name"),
                 **{ax: check[ax] for ax in AXES}, "passed": check["passed"]}  # fmt: skip
        if not check["passed"]:
            entry["why"] = check.get("schema_error") or check.get("limits") or "wrong answers"
        log.append(entry)
        ctx.tracer.event("smith_build", **entry)
        if check["passed"]:
            taken = {str(t["name"]) for t in pool}
            tool = renamed(tool, unique_name(str(tool["name"]), taken))
            pool.append({"build": b["id"], **tool})
            remember_tool(ctx, tool)
            break
        feedback = feedback_text(check)
        if ctx.llm is None:
            break
    done_builds = int(state["builds"]) + 1
    if ctx.progress:
        ctx.progress({"evaluations": spent, "max_evaluations": limit,
                      "best": sum(1 for t in pool if t.get("build")) / len(builds)})  # fmt: skip
    return {"pool": pool, "log": log, "errors": errors[-30:], "spent": spent, "builds": done_builds}


def remember_tool(ctx: Ctx, tool: dict[str, Any]) -> None:
    """Store a validated tool in memory (``remember``); a name memory holds already keeps
    the older tool there."""
    if not ctx.config.remember or ctx.memory is None:
        return
    from optiforge.memory.records import Tool

    try:
        ctx.memory.add_tool(Tool(name=str(tool["name"]), description=str(tool.get("description") or ""),
                                 json_schema=tool["parameters"], code=tool["code"], author_agent="smith",
                                 tags=["smith"]))  # fmt: skip
    except Exception as e:  # noqa: BLE001 - a name taken in memory keeps the older tool there
        ctx.tracer.event(
            "smith_remember_skipped", tool=tool["name"], why=f"{type(e).__name__}: {e}"[:200]
        )


def use_step(state: SmithState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """The next ``USE_CHUNK`` questions: function calls against the pool."""
    ctx = runtime.context
    config, qs = ctx.config, questions(ctx)
    pool, calls, errors = list(state["pool"]), dict(state["calls"]), list(state["errors"])
    first = int(state["asked"])
    for q in qs[first : first + USE_CHUNK]:
        made: list[dict[str, Any]] = []
        for k in range(config.calls_per_question if ctx.llm is not None else 1):
            if not pool:
                errors.append(f"{q['id']}: the pool is empty (no tool to call)")
                break
            if ctx.llm is not None:
                call, why = llm_call(ctx, q["question"], pool, k)
            else:
                call, why = offline_call(q["question"], pool), "no pool tool fits the question"
            if call is None:
                errors.append(f"{q['id']}: {why}")
                continue
            made.append(call)
        calls[q["id"]] = made
        ctx.tracer.event("smith_use", question=q["id"], calls=[c.get("name") for c in made])
    asked = min(first + USE_CHUNK, len(qs))
    return {"calls": calls, "errors": errors[-30:], "asked": asked, "done": asked >= len(qs)}


def after_start(state: SmithState, runtime: Runtime[Ctx]) -> str:
    """Build first (when the config builds and the task has build tasks), else use."""
    ctx = runtime.context
    return "build" if ctx.task.build_tasks and ctx.config.build else "use"


def after_build(state: SmithState, runtime: Runtime[Ctx]) -> str:
    """The next build task, or the questions once every build task is done."""
    return "build" if state["builds"] < len(runtime.context.task.build_tasks) else "use"


def after_use(state: SmithState, runtime: Runtime[Ctx]) -> str:
    """The next chunk of questions, or the end."""
    return END if state.get("done") or not questions(runtime.context) else "use"
