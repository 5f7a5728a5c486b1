"""The AutoREM agent: one LangGraph graph per instance (model -> retrieve -> write -> run -> reflect).

Per instance: [text-only tasks: the modelling step writes the nominal model, with its
uncertainty sets, from the statement (``modeller.py``; lessons tagged ``modelling`` are
retrieved into its prompt)] -> retrieve experience entries from memory (agent
``autorem``, tags = the set types of the model: the given JSON, or the model the agent
wrote) -> prompt (statement + the model as JSON + I/O protocol + the entries as
"Lessons") -> the LLM writes cvxpy code (one fenced block) -> it runs in the sandbox
(reading the agent's own model on text-only tasks) and the verifier judges it against the
ground truth -> if wrong, a bounded number of repair attempts with the verdict reasons fed
back. With ``reflect="on_failure"`` (offline adaptation) a trajectory with a failed
attempt is diagnosed into ``ExperienceEntry`` records written to memory; on a text-only
training task whose model was wrong, the fields that differ (paths, no values: the
training label) become modelling lessons (``experience.diagnose_model``).

Every attempt is recorded: an ``autorem_attempt`` event and a memory ``Candidate``
(parent = the previous attempt). The graph state holds only serializable data; the
task, LLM, sandbox and memory travel outside it (closure and ``Runtime[RunContext]``).

Offline (no LLM) the modeller is the reference modeller (a parser of the model sheet's
grammar, ``modeller.reference_modeller``) and the writer is the reference reformulator
emitted as code (``proposers.counterpart_program``): offline accuracy measures the sheet
round trip and the checker, not an LLM.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypedDict, cast

from pydantic import BaseModel

from optiforge.agents.autorem.config import AutoREMConfig
from optiforge.agents.autorem.events import ATTEMPT_EVENT
from optiforge.agents.autorem.experience import (
    AGENT,
    Attempt,
    ExperienceEntry,
    diagnose_llm,
    diagnose_model,
    diagnose_rules,
    experience_id,
    retrieve_entries,
    retrieve_modelling_entries,
    to_experience,
)
from optiforge.agents.autorem.modeller import model_messages, model_with_llm, reference_modeller
from optiforge.agents.autorem.problem import AutoROTask, load_task, model_view
from optiforge.agents.autorem.proposers import (
    counterpart_program,
    extract_code,
    first_prompt,
    render_lessons,
    repair_message,
)
from optiforge.agents.autorem.report import outcome_from_state
from optiforge.agents.kit import AgentRun, RunContext
from optiforge.agents.kit.lineage import memory_id, record_candidate, task_id
from optiforge.agents.kit.tools import build_registry, complete_with_tools
from optiforge.agents.spec import AgentOutcome
from optiforge.errors import (
    BudgetExceeded,
    ConfigError,
    InvalidTask,
    LLMError,
    StructuredOutputError,
)
from optiforge.evals.protocol import Task
from optiforge.llm.structured import CODE_STOP
from optiforge.memory.provenance import Provenance
from optiforge.solvers.robust.instance import ROInstance
from optiforge.solvers.robust.model import ROProblem, parse_problem

CHECKPOINTS = "autorem_checkpoints.sqlite"


class AutoREMState(TypedDict, total=False):
    """Graph state (serializable only)."""

    messages: list[dict[str, Any]]
    model: dict[str, Any] | None
    """Text-only tasks: the model the agent wrote (ROProblem JSON); None otherwise."""
    model_origin: str
    """``llm`` or ``reference-modeller`` (text-only tasks)."""
    model_retrieved: list[str]
    """Ids of the modelling lessons shown to the modelling step."""
    retrieved: list[dict[str, Any]]
    """``{"id", "entry"}`` for every retrieved entry."""
    attempts: list[dict[str, Any]]
    reflected: list[str]
    """Ids of the experience records written by this trajectory."""
    llm_calls: int
    tokens: int
    done: bool
    stop_reason: str


# ----------------------------------------------------------------------------- graph


def _cand_id(ctx: RunContext, task: AutoROTask, index: int) -> str:
    return memory_id(ctx, f"{task.name}:{ctx.seed}:{index}", prefix="cand_autorem")


def build_graph(task: AutoROTask, config: AutoREMConfig) -> Any:
    """The per-instance graph, uncompiled: retrieve -> write -> run -> (write | reflect | end)."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.runtime import Runtime

    if task.timeout_s != config.timeout_s:
        # the agent's own attempts use the configured limit; the harness keeps the task's
        task = dataclasses.replace(task, timeout_s=config.timeout_s)
    inst = task.instance
    max_attempts = config.max_attempts
    text_only = bool(task.text_only)

    def own_problem(state: AutoREMState) -> ROProblem:
        """The model the agent works on: its own (text-only) or the given JSON."""
        model = state.get("model")
        return parse_problem(model) if model is not None else inst.problem

    def model(state: AutoREMState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        ctx = runtime.context
        start: dict[str, Any] = {"attempts": [], "llm_calls": 0, "tokens": 0, "model": None}
        if not text_only:
            return start
        found: list[tuple[str, ExperienceEntry]] = []
        if config.use_memory and ctx.memory is not None:
            found = retrieve_modelling_entries(ctx.memory, task.statement, config.k_entries)
        start["model_retrieved"] = [i for i, _ in found]
        try:
            if ctx.llm is None:
                problem, origin = reference_modeller(task.statement), "reference-modeller"
            else:
                msgs = model_messages(task.statement, render_lessons([e for _, e in found]))
                problem, reply = model_with_llm(ctx.llm, msgs)
                origin = "llm"
                start["llm_calls"] = 1 + int(reply.reasks)
                start["tokens"] = int(reply.record.tokens)
        except (BudgetExceeded, LLMError, StructuredOutputError, InvalidTask) as err:
            ctx.tracer.event("autorem_model", task=task.name, ok=False, reason=str(err)[:300])
            calls = 1 if ctx.llm is not None else 0
            return {**start, "llm_calls": calls, "done": True,
                    "stop_reason": f"modelling failed: {type(err).__name__}: {str(err)[:200]}"}  # fmt: skip
        ctx.tracer.event(
            "autorem_model", task=task.name, ok=True, origin=origin, n=problem.n,
            set_types=problem.set_types(), lessons=len(found),
        )  # fmt: skip
        return {**start, "model": problem.model_dump(mode="json"), "model_origin": origin}

    def retrieve(state: AutoREMState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        ctx = runtime.context
        view = model_view(task, own_problem(state)) if text_only else inst
        found: list[tuple[str, ExperienceEntry]] = []
        if config.use_memory and ctx.memory is not None:
            found = retrieve_entries(ctx.memory, view, config.k_entries)
        ctx.tracer.event(
            "autorem_retrieved", task=task.name, n=len(found), ids=[i for i, _ in found]
        )
        model = state.get("model")
        return {
            "retrieved": [{"id": i, "entry": e.model_dump(mode="json")} for i, e in found],
            "messages": first_prompt(
                task, [e for _, e in found], model=parse_problem(model) if model else None
            ),
        }

    def write(state: AutoREMState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        ctx = runtime.context
        attempts = list(state.get("attempts", []))
        messages = list(state.get("messages", []))
        index = len(attempts)
        if ctx.llm is None:
            # offline: the reference reformulator as code (measures the checker)
            code, origin, tokens = counterpart_program(own_problem(state)), "reference", 0
        else:
            if attempts:
                messages.append({"role": "assistant", "content": attempts[-1]["reply"]})
                messages.append(repair_message(attempts[-1]["reasons"]))
            try:
                registry = build_registry(ctx, config.tools)
                reply: Any
                if registry is not None:  # the model may run its drafts before it answers
                    reply = complete_with_tools(ctx, messages, registry, config.tools.max_steps,
                                                stop=CODE_STOP)  # fmt: skip
                else:
                    reply = ctx.llm.complete(messages, stop=CODE_STOP)
            except (BudgetExceeded, LLMError) as err:
                ctx.tracer.event("autorem_stop", task=task.name, reason=str(err))
                return {"done": True, "stop_reason": f"{type(err).__name__}: {err}"}
            code = extract_code(reply.text)
            origin = "repair" if attempts else "llm"
            tokens = int(reply.record.tokens)
            attempts.append({"reply": reply.text})
            attempts[-1].update(code=code, origin=origin, tokens=tokens, index=index)
            return {
                "messages": messages,
                "attempts": attempts,
                "llm_calls": state.get("llm_calls", 0)
                + len(getattr(reply, "records", [None]))
                + reply.reasks,
                "tokens": state.get("tokens", 0) + tokens,
            }
        attempts.append(
            {"reply": code, "code": code, "origin": origin, "tokens": 0, "index": index}
        )
        return {"attempts": attempts}

    def run(state: AutoREMState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        ctx = runtime.context
        attempts = [dict(a) for a in state.get("attempts", [])]
        att = attempts[-1]
        sandbox = ctx.sandbox
        if sandbox is None:
            from optiforge.sandboxes import get_sandbox

            sandbox = get_sandbox("local", tracer=ctx.tracer)
        model = state.get("model")
        candidate: Any = {"model": model, "code": att["code"]} if text_only else att["code"]
        score = task.evaluate(candidate, sandbox)
        att["passed"] = bool(score.passed)
        att["reasons"] = list(score.details.get("reasons", []))
        att["metrics"] = {k: float(v) for k, v in score.metrics.items()}
        att["tolerance"] = str(score.details.get("tolerance", task.tolerance_line()))
        if "model_fields" in score.details:  # training label; read only by reflection
            att["model_fields"] = list(score.details["model_fields"])
        ctx.tracer.event(
            ATTEMPT_EVENT,
            task=task.name,
            attempt=att["index"],
            origin=att["origin"],
            passed=att["passed"],
            reasons=att["reasons"][:3],
            tokens=att["tokens"],
        )
        _remember_attempt(ctx, task, att)
        # the offline writer is deterministic: repeating it after a rejection is pointless
        offline = att["origin"] == "reference"
        done = att["passed"] or offline or len(attempts) >= max_attempts
        reason = "correct" if att["passed"] else ""
        if done and not att["passed"]:
            reason = (
                "reference program rejected (no repair offline)" if offline else "attempts spent"
            )
        return {"attempts": attempts, "done": done, "stop_reason": reason}

    def reflect(state: AutoREMState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        ctx = runtime.context
        attempts = state.get("attempts", [])
        traj = [Attempt.model_validate(_attempt_fields(a)) for a in attempts]
        view = model_view(task, own_problem(state)) if text_only else inst
        fields: list[str] = next((a["model_fields"] for a in attempts if a.get("model_fields")), [])
        written, calls, tokens = _reflect(ctx, config, view, traj, model_fields=fields)
        return {
            "reflected": written,
            "llm_calls": state.get("llm_calls", 0) + calls,
            "tokens": state.get("tokens", 0) + tokens,
        }

    def after_model(state: AutoREMState) -> str:
        if not state.get("done"):
            return "retrieve"
        return "reflect" if config.reflect == "on_failure" and text_only else "finish"

    def after_write(state: AutoREMState) -> str:
        return "finish" if state.get("done") else "run"

    def after_run(state: AutoREMState) -> str:
        if not state.get("done"):
            return "write"
        failed = any(not a.get("passed") for a in state.get("attempts", []))
        return "reflect" if failed and config.reflect == "on_failure" else "finish"

    def finish(state: AutoREMState) -> dict[str, Any]:
        return {}

    graph = StateGraph(AutoREMState, context_schema=RunContext)
    graph.add_node("model", model)
    graph.add_node("retrieve", retrieve)
    graph.add_node("write", write)
    graph.add_node("run", run)
    graph.add_node("reflect", reflect)
    graph.add_node("finish", finish)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", after_model, ["retrieve", "reflect", "finish"])
    graph.add_edge("retrieve", "write")
    graph.add_conditional_edges("write", after_write, ["run", "finish"])
    graph.add_conditional_edges("run", after_run, ["write", "reflect", "finish"])
    graph.add_edge("reflect", "finish")
    graph.add_edge("finish", END)
    return graph


def _attempt_fields(a: dict[str, Any]) -> dict[str, Any]:
    keys = ("index", "code", "passed", "reasons", "origin", "tokens")
    out = {k: a[k] for k in keys if k in a}
    out.setdefault("passed", False)
    return out


def _remember_attempt(ctx: RunContext, task: AutoROTask, att: dict[str, Any]) -> None:
    """One memory ``Candidate`` per attempt, parent = previous attempt (idempotent)."""
    metrics = {k: v for k, v in att.get("metrics", {}).items()}
    metrics["attempt"] = float(att["index"])
    record_candidate(
        ctx,
        mem_id=_cand_id(ctx, task, att["index"]),
        agent=AGENT,
        task=task_id(task),
        code=att["code"],
        parent_ids=[_cand_id(ctx, task, att["index"] - 1)] if att["index"] > 0 else [],
        metrics=metrics,
        score=1.0 if att["passed"] else 0.0,
        status="accepted" if att["passed"] else "rejected",
        tags=[AGENT, att["origin"], *sorted(set(task.instance.set_types))],
    )


def _reflect(
    ctx: RunContext,
    config: AutoREMConfig,
    inst: ROInstance,
    traj: list[Attempt],
    *,
    model_fields: list[str] | None = None,
) -> tuple[list[str], int, int]:
    """Diagnose a trajectory with a failure and write the entries.

    model_fields: on a text-only training task, the model fields that differ from the
    ground truth (paths only): they become modelling lessons (``diagnose_model``).
    Returns the new experience ids, and the LLM calls and tokens the diagnosis took.
    """
    if ctx.memory is None:
        return [], 0, 0
    modelling = diagnose_model(model_fields or [])
    if not traj:  # the modelling step failed: nothing ran, only modelling lessons apply
        return _write_entries(ctx, inst, traj, modelling, "rules"), 0, 0
    use_llm = config.reflector == "llm" or (config.reflector == "auto" and ctx.llm is not None)
    if use_llm and ctx.llm is None:
        raise ConfigError("reflector 'llm' needs an LLM (use reflector: rules offline)")
    entries: list[ExperienceEntry]
    calls = tokens = 0
    if not any(not a.passed for a in traj):
        entries = []  # only the model was wrong (no attempt failed): nothing to diagnose
    elif use_llm:
        try:
            entry, calls, tokens = diagnose_llm(ctx.llm, inst, traj)
        except (BudgetExceeded, LLMError) as err:
            ctx.tracer.event("autorem_reflect_skipped", task=inst.id, reason=str(err))
            return _write_entries(ctx, inst, traj, modelling, "rules"), 1, 0
        entries = [entry]
    else:
        entries = diagnose_rules(inst, traj)
    reflector = "llm" if use_llm else "rules"
    return _write_entries(ctx, inst, traj, entries + modelling, reflector), calls, tokens


def _write_entries(
    ctx: RunContext,
    inst: ROInstance,
    traj: list[Attempt],
    entries: list[ExperienceEntry],
    reflector: str,
) -> list[str]:
    """Store the entries not yet in memory (content-addressed); returns the new ids."""
    assert ctx.memory is not None
    model = getattr(ctx.llm, "model", "offline") if ctx.llm is not None else "offline"
    written: list[str] = []
    for entry in entries:
        eid = experience_id(entry)
        if ctx.memory.find(eid) is not None:
            continue  # the same lesson is already in memory
        prov: Provenance = "distilled" if reflector == "llm" else "agent"
        ctx.memory.add_experience(to_experience(entry, inst, traj, model, provenance=prov))
        written.append(eid)
    ctx.tracer.event(
        "autorem_reflected",
        task=inst.id,
        n_entries=len(entries),
        written=written,
        reflector=reflector,
    )
    return written


def instance_run(
    task: AutoROTask, config: AutoREMConfig, *, thread_id: str | None = None
) -> AgentRun:
    """The graph on one instance as an ``AgentRun`` (checkpoints in ``ctx.run_dir`` when set)."""
    thread = thread_id or f"autorem-{task.name}"

    def outcome(state: dict[str, Any], ctx: RunContext) -> AgentOutcome:
        used = config.use_memory and ctx.memory is not None
        return outcome_from_state(cast(AutoREMState, state), memory_used=used)

    return AgentRun(
        graph=build_graph(task, config), outcome=outcome, thread_id=thread,
        what=f"AutoREM thread {thread!r}", checkpoints=CHECKPOINTS,
    )  # fmt: skip


def run_instance(
    task: AutoROTask,
    ctx: RunContext,
    config: AutoREMConfig,
    *,
    resume: bool = False,
    thread_id: str | None = None,
) -> AutoREMState:
    """Run the graph on one instance and return its final state (the ``autorem solve`` CLI)."""
    run = instance_run(task, config, thread_id=thread_id)
    return cast(AutoREMState, run.drive(ctx, resume=resume).state)


def build(task: Task, config: BaseModel, budget: int | None) -> AgentRun:
    """One AutoRO instance: retrieve, write code, verify in the sandbox, repair.

    budget: caps the code attempts (evaluations) below ``config.max_attempts``. Input the
    agent cannot read raises ``InvalidTask`` here (``load_task``).
    """
    assert isinstance(config, AutoREMConfig)
    atask = load_task(task)
    cfg = config
    if budget is not None:
        cfg = config.model_copy(update={"max_attempts": max(1, min(config.max_attempts, budget))})
    return instance_run(atask, cfg)
