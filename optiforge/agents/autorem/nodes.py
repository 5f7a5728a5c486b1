"""AutoREM's graph nodes (wired in ``agent.py``): model -> retrieve -> write -> run ->
(write | reflect | finish).

- ``model`` (text-only tasks): the modelling step writes the nominal model, with its
  uncertainty sets, from the statement (``modeller.py``; lessons tagged ``modelling`` are
  retrieved into its prompt); offline the reference modeller parses the model sheet.
- ``retrieve``: experience entries from memory (agent ``autorem``, tags = the set types of
  the model: the given JSON, or the model the agent wrote), and the first prompt
  (statement + the model as JSON + I/O protocol + the entries as "Lessons").
- ``write``: the LLM writes cvxpy code (one fenced block; with tools it may run drafts
  first), or after a rejection repairs it with the verdict's reasons; offline the
  reference reformulator as code (``proposers.counterpart_program``).
- ``run``: the program runs in the sandbox (reading the agent's own model on text-only
  tasks) and the task's verifier judges it against the ground truth; every attempt is an
  ``ATTEMPT_EVENT`` (``autorem_attempt``) event and a memory ``Candidate`` (parent = the previous attempt).
- ``reflect`` (``reflect="on_failure"``): a trajectory with a failed attempt is diagnosed
  into ``ExperienceEntry`` records written to memory; on a text-only training task whose
  model was wrong, the fields that differ (paths, no values) become modelling lessons.

Every node reads the task, config and handles from ``runtime.context``
(``AgentContext[ROTask, AutoREMConfig]``); the graph state holds only serializable data.
"""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

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
from optiforge.agents.autorem.problem import AutoREMState, model_view
from optiforge.agents.autorem.proposers import (
    counterpart_program,
    extract_code,
    first_prompt,
    render_lessons,
    repair_message,
)
from optiforge.agents.kit import RunContext
from optiforge.agents.kit.context import AgentContext
from optiforge.agents.kit.lineage import memory_id, record_candidate, task_id
from optiforge.agents.kit.tools import ToolReply, build_registry, complete_with_tools
from optiforge.errors import (
    BudgetExceeded,
    ConfigError,
    InvalidTask,
    LLMError,
    StructuredOutputError,
)
from optiforge.evals.suites.autoro.protocol import ROTask
from optiforge.llm.structured import CODE_STOP
from optiforge.llm.types import Completion
from optiforge.memory.provenance import Provenance
from optiforge.sandboxes import get_sandbox
from optiforge.solvers.robust.instance import ROInstance
from optiforge.solvers.robust.model import ROProblem, parse_problem

Ctx = AgentContext[ROTask, AutoREMConfig]


def own_problem(state: AutoREMState, task: ROTask) -> ROProblem:
    """The model the agent works on: its own (text-only) or the given JSON."""
    model = state.get("model")
    return parse_problem(model) if model is not None else task.instance.problem


def seen_instance(state: AutoREMState, task: ROTask) -> ROInstance:
    """The instance as the agent may see it: on a text-only task its own model's view."""
    return model_view(task, own_problem(state, task)) if task.text_only else task.instance


def model(state: AutoREMState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """Text-only tasks: write the model from the statement (else only the start values)."""
    ctx = runtime.context
    task, config = ctx.task, ctx.config
    start: dict[str, Any] = {"attempts": [], "llm_calls": 0, "tokens": 0, "model": None}
    if not task.text_only:
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


def retrieve(state: AutoREMState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """Retrieve experience entries for the model; the first prompt shows them as lessons."""
    ctx = runtime.context
    task, config = ctx.task, ctx.config
    view = seen_instance(state, task)
    found: list[tuple[str, ExperienceEntry]] = []
    if config.use_memory and ctx.memory is not None:
        found = retrieve_entries(ctx.memory, view, config.k_entries)
    ctx.tracer.event("autorem_retrieved", task=task.name, n=len(found), ids=[i for i, _ in found])
    model = state.get("model")
    return {
        "retrieved": [{"id": i, "entry": e.model_dump(mode="json")} for i, e in found],
        "messages": first_prompt(
            task, [e for _, e in found], model=parse_problem(model) if model else None
        ),
    }


def write(state: AutoREMState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """The next program: the LLM's (a repair after a rejection), offline the reference's."""
    ctx = runtime.context
    task, config = ctx.task, ctx.config
    attempts = list(state.get("attempts", []))
    messages = list(state.get("messages", []))
    index = len(attempts)
    if ctx.llm is None:
        # offline: the reference reformulator as code (measures the checker)
        code, origin = counterpart_program(own_problem(state, task)), "reference"
        attempts.append(
            {"reply": code, "code": code, "origin": origin, "tokens": 0, "index": index}
        )
        return {"attempts": attempts}
    if attempts:
        messages.append({"role": "assistant", "content": attempts[-1]["reply"]})
        messages.append(repair_message(attempts[-1]["reasons"]))
    reply: Completion | ToolReply
    try:
        registry = build_registry(ctx, config.tools)
        if registry is not None:  # the model may run its drafts before it answers
            reply = complete_with_tools(ctx, messages, registry, config.tools.max_steps,
                                        stop=CODE_STOP)  # fmt: skip
            calls = len(reply.records)
        else:
            reply = ctx.llm.complete(messages, stop=CODE_STOP)
            calls = 1
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
        "llm_calls": state.get("llm_calls", 0) + calls + reply.reasks,
        "tokens": state.get("tokens", 0) + tokens,
    }


def run(state: AutoREMState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """Run the last program in the sandbox; the task's verifier judges it."""
    ctx = runtime.context
    task = ctx.task
    attempts = [dict(a) for a in state.get("attempts", [])]
    att = attempts[-1]
    sandbox = ctx.sandbox if ctx.sandbox is not None else get_sandbox("local", tracer=ctx.tracer)
    model = state.get("model")
    candidate: Any = {"model": model, "code": att["code"]} if task.text_only else att["code"]
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
    remember_attempt(ctx, task, att)
    # the offline writer is deterministic: repeating it after a rejection is pointless
    offline = att["origin"] == "reference"
    done = att["passed"] or offline or len(attempts) >= ctx.config.max_attempts
    reason = "correct" if att["passed"] else ""
    if done and not att["passed"]:
        reason = "reference program rejected (no repair offline)" if offline else "attempts spent"
    return {"attempts": attempts, "done": done, "stop_reason": reason}


def reflect(state: AutoREMState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """Diagnose a trajectory with a failure into experience entries (written to memory)."""
    ctx = runtime.context
    attempts = state.get("attempts", [])
    traj = [Attempt.model_validate(attempt_fields(a)) for a in attempts]
    view = seen_instance(state, ctx.task)
    fields: list[str] = next((a["model_fields"] for a in attempts if a.get("model_fields")), [])
    written, calls, tokens = reflect_trajectory(ctx, ctx.config, view, traj, model_fields=fields)
    return {
        "reflected": written,
        "llm_calls": state.get("llm_calls", 0) + calls,
        "tokens": state.get("tokens", 0) + tokens,
    }


def finish(state: AutoREMState) -> dict[str, Any]:
    """The end (one node the routes meet at)."""
    return {}


def after_model(state: AutoREMState, runtime: Runtime[Ctx]) -> str:
    """Route after ``model``: retrieve, or (modelling failed) reflect on it or finish."""
    if not state.get("done"):
        return "retrieve"
    ctx = runtime.context
    return "reflect" if ctx.config.reflect == "on_failure" and ctx.task.text_only else "finish"


def after_write(state: AutoREMState) -> str:
    """Route after ``write``: run the program (finish when the LLM failed)."""
    return "finish" if state.get("done") else "run"


def after_run(state: AutoREMState, runtime: Runtime[Ctx]) -> str:
    """Route after ``run``: repair, or reflect on a failed trajectory, or finish."""
    if not state.get("done"):
        return "write"
    failed = any(not a.get("passed") for a in state.get("attempts", []))
    return "reflect" if failed and runtime.context.config.reflect == "on_failure" else "finish"


def attempt_fields(a: dict[str, Any]) -> dict[str, Any]:
    """An attempt of the state as ``Attempt``'s fields (not run: not passed)."""
    keys = ("index", "code", "passed", "reasons", "origin", "tokens")
    out = {k: a[k] for k in keys if k in a}
    out.setdefault("passed", False)
    return out


def cand_id(ctx: RunContext, task: ROTask, index: int) -> str:
    """The memory id of attempt ``index`` of this run on ``task``."""
    return memory_id(ctx, f"{task.name}:{ctx.seed}:{index}", prefix="cand_autorem")


def remember_attempt(ctx: RunContext, task: ROTask, att: dict[str, Any]) -> None:
    """One memory ``Candidate`` per attempt, parent = previous attempt (idempotent)."""
    metrics = {k: v for k, v in att.get("metrics", {}).items()}
    metrics["attempt"] = float(att["index"])
    record_candidate(
        ctx,
        mem_id=cand_id(ctx, task, att["index"]),
        agent=AGENT,
        task=task_id(task),
        code=att["code"],
        parent_ids=[cand_id(ctx, task, att["index"] - 1)] if att["index"] > 0 else [],
        metrics=metrics,
        score=1.0 if att["passed"] else 0.0,
        status="accepted" if att["passed"] else "rejected",
        tags=[AGENT, att["origin"], *sorted(set(task.instance.set_types))],
    )


def reflect_trajectory(
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
        return write_entries(ctx, inst, traj, modelling, "rules"), 0, 0
    use_llm = config.reflector == "llm" or (config.reflector == "auto" and ctx.llm is not None)
    if use_llm and ctx.llm is None:
        raise ConfigError("reflector 'llm' needs an LLM (use reflector: rules offline)")
    entries: list[ExperienceEntry]
    calls = tokens = 0
    if not any(not a.passed for a in traj):
        entries = []  # only the model was wrong (no attempt failed): nothing to diagnose
    elif use_llm:
        assert ctx.llm is not None  # refused above
        try:
            entry, calls, tokens = diagnose_llm(ctx.llm, inst, traj)
        except (BudgetExceeded, LLMError) as err:
            ctx.tracer.event("autorem_reflect_skipped", task=inst.id, reason=str(err))
            return write_entries(ctx, inst, traj, modelling, "rules"), 1, 0
        entries = [entry]
    else:
        entries = diagnose_rules(inst, traj)
    reflector = "llm" if use_llm else "rules"
    return write_entries(ctx, inst, traj, entries + modelling, reflector), calls, tokens


def write_entries(
    ctx: RunContext,
    inst: ROInstance,
    traj: list[Attempt],
    entries: list[ExperienceEntry],
    reflector: str,
) -> list[str]:
    """Store the entries not yet in memory (content-addressed); returns the new ids."""
    assert ctx.memory is not None
    model = ctx.llm.model if ctx.llm is not None else "offline"
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
