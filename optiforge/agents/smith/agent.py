"""SMITH's graph: ``start`` -> ``build`` (one build task per step) -> ``use`` (a chunk of
questions per step) -> end.

- **start**: the pool begins with the tools earlier runs stored in memory (``Tool``
  records tagged ``smith``; ``memory_pool``).
- **build**: for each build task, up to ``build_attempts`` tools are written (LLM, told
  why the last one failed; offline, the template library) and validated on the task's
  validation instances in the sandbox (``task.validate``: schema, code and outcome, each
  logged per attempt as a ``smith_build`` event). The first tool passing all three axes
  joins the pool (and memory); a build task whose tools all fail adds nothing. Each
  validation is one evaluation of the budget.
- **use**: each question gets up to ``calls_per_question`` function calls against the
  pool (LLM function calling, or the offline matcher). The agent never sees a use
  question's answer: the harness runs the calls and checks them (``task.evaluate``).

The candidate is ``{"tools": pool, "calls": {question id: [call, ...]}}``.
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from optiforge.agents.kit import AgentRun, RunContext
from optiforge.agents.smith.config import SmithConfig
from optiforge.agents.smith.problem import renamed, unique_name
from optiforge.agents.smith.proposers import (
    feedback_text,
    llm_build,
    llm_call,
    offline_build,
    offline_call,
)
from optiforge.agents.spec import AgentOutcome

USE_CHUNK = 8
AXES = ("schema", "code", "outcome")


class SmithState(TypedDict, total=False):
    pool: list[dict[str, Any]]
    builds: int
    """Build tasks done."""
    spent: int
    """Validations made (the budget's evaluations)."""
    log: list[dict[str, Any]]
    """Every build rollout: build id, attempt, the three axes, passed."""
    asked: int
    """Use questions done."""
    calls: dict[str, list[dict[str, Any]]]
    errors: list[str]
    done: bool


def build(task: Any, config: BaseModel, budget: int | None) -> AgentRun:
    assert isinstance(config, SmithConfig)
    limit = int(budget or task.budget or 3 * len(task.build_tasks))
    builds = task.build_tasks
    questions = task.use_questions

    def start(state: SmithState, runtime: Any) -> dict[str, Any]:
        ctx: RunContext = runtime.context
        pool: list[dict[str, Any]] = []
        if config.memory_pool and ctx.memory is not None:
            for t in ctx.memory.tools():
                if "smith" in t.tags and t.code:
                    pool.append({"build": None, "name": t.name, "description": t.description,
                                 "parameters": t.json_schema, "code": t.code})  # fmt: skip
        ctx.tracer.event("smith_start", pooled_from_memory=len(pool), build_tasks=len(builds),
                         questions=len(questions))  # fmt: skip
        return {"pool": pool, "builds": 0, "spent": 0, "log": [], "asked": 0, "calls": {}, "errors": [],
                "done": False}  # fmt: skip

    def build_step(state: SmithState, runtime: Any) -> dict[str, Any]:
        ctx: RunContext = runtime.context
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
                _remember(ctx, tool)
                break
            feedback = feedback_text(check)
            if ctx.llm is None:
                break
        done_builds = int(state["builds"]) + 1
        if ctx.progress:
            ctx.progress({"evaluations": spent, "max_evaluations": limit,
                          "best": sum(1 for t in pool if t.get("build")) / len(builds)})  # fmt: skip
        return {
            "pool": pool,
            "log": log,
            "errors": errors[-30:],
            "spent": spent,
            "builds": done_builds,
        }

    def _remember(ctx: RunContext, tool: dict[str, Any]) -> None:
        if not config.remember or ctx.memory is None:
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

    def use_step(state: SmithState, runtime: Any) -> dict[str, Any]:
        ctx: RunContext = runtime.context
        pool, calls, errors = list(state["pool"]), dict(state["calls"]), list(state["errors"])
        first = int(state["asked"])
        for q in questions[first : first + USE_CHUNK]:
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
        asked = min(first + USE_CHUNK, len(questions))
        return {
            "calls": calls,
            "errors": errors[-30:],
            "asked": asked,
            "done": asked >= len(questions),
        }

    g: StateGraph[Any, Any, Any, Any] = StateGraph(SmithState, context_schema=RunContext)
    g.add_node("start", start)  # type: ignore[call-overload]
    g.add_node("build", build_step)  # type: ignore[call-overload]
    g.add_node("use", use_step)  # type: ignore[call-overload]
    g.add_edge(START, "start")
    g.add_conditional_edges("start", lambda s: "build" if builds and config.build else "use")
    g.add_conditional_edges("build", lambda s: "build" if s["builds"] < len(builds) else "use")
    g.add_conditional_edges("use", lambda s: END if s.get("done") or not questions else "use")

    def outcome(state: dict[str, Any], ctx: RunContext) -> AgentOutcome:
        pool = state.get("pool")
        if pool is None:
            return AgentOutcome(stop_reason="no pool", failure="the run built nothing")
        log = state.get("log") or []
        built = [t for t in pool if t.get("build")]
        failure = None
        if ctx.llm is not None and not built and log and config.build:
            last = log[-1]
            why = last.get("why") or (f"schema {last['schema']:.0f}, code {last['code']:.2f}, "
                                      f"outcome {last['outcome']:.2f}")  # fmt: skip
            failure = f"no tool the model wrote passed validation (last attempt: {why})"
        means = {f"build_{ax}": sum(r[ax] for r in log) / len(log) for ax in AXES} if log else {}
        return AgentOutcome(
            best_candidate={"tools": pool, "calls": state.get("calls") or {}},
            claimed_value=len(built) / max(len(builds), 1), n_evaluations=int(state.get("spent", 0)),
            stop_reason="episode done" if state.get("done") else "stopped", failure=failure,
            notes=[f"budget {limit} validations < {len(builds)} build tasks: at most {limit} tools "
                   f"can be built (the templates baseline is limited to the same first {limit})"]
            if config.build and limit < len(builds) else [],
            # every build attempt is the model's tool (offline: the template library's)
            llm_proposals={"made": len(log), "valid": sum(1 for r in log if r.get("passed"))}
            if ctx.llm is not None and config.build and log else None,
            extra={"pool": [t["name"] for t in pool], "built": len(built), "build_tasks": len(builds),
                   "rollouts": log[-60:], **means, "errors": (state.get("errors") or [])[-5:]},
        )  # fmt: skip

    return AgentRun(graph=g, outcome=outcome, what="a smith run",
                    recursion_limit=len(builds) + len(questions) // USE_CHUNK + 20,
                    checkpoints="smith_checkpoints.sqlite")  # fmt: skip
