"""The search graph's nodes: propose -> materialize -> evaluate -> reflect -> select (and
``propose_ahead`` under ``overlap``), each ``(loop, state, runtime) -> update``."""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from optiforge.agents.kit.context import RunContext
from optiforge.agents.kit.lineage import (
    Lesson,
    candidate_batch,
    memory_id,
    record_candidate,
    record_lesson,
    task_id,
    task_signature,
)
from optiforge.agents.kit.recall import recall
from optiforge.agents.kit.search.logs import NO_DIGEST, ids_digest
from optiforge.agents.kit.search.loop import SearchLoop
from optiforge.agents.kit.search.protocols import SearchProblem, pick_proposer, propose
from optiforge.agents.kit.search.records import (
    Evaluated,
    Proposal,
    SearchConfig,
    SearchState,
    is_invalid,
    payload_key,
)
from optiforge.errors import BudgetExceeded, InvalidCandidate, LLMError


def _better(a: float, b: float, higher: bool) -> bool:
    return a > b if higher else a < b


def _sort_key(higher: bool) -> Callable[[dict[str, Any]], float]:
    def key(ev: dict[str, Any]) -> float:
        v = ev.get("value")
        if not ev.get("passed") or v is None or not math.isfinite(v):
            return math.inf
        return -v if higher else v

    return key


def proposals(
    loop: SearchLoop, state: SearchState, ctx: RunContext, n: int, rnd: int
) -> tuple[list[Proposal], str | None]:
    """Round ``rnd``'s proposals (round 0: the problem's seeds; later: up to ``n`` from the
    run's proposer), or why the search stops: a spending cap, or a provider failure after
    its retries, ends the search with what it has."""
    try:
        if rnd == 0:
            return loop.problem.initial(ctx), None
        population = [Evaluated.model_validate(p) for p in state.get("population", [])]

        def history() -> list[Evaluated]:
            return [Evaluated.model_validate(h) for h in loop.history(state, ctx).rows]

        proposer = pick_proposer(loop.proposer, ctx)
        return propose(proposer, loop.problem, history, population, n, rnd, ctx), None
    except BudgetExceeded as err:
        ctx.tracer.event("search_stop", reason=f"budget: {err.limit}", round=rnd)
        return [], f"budget exhausted ({err.limit}): {err}"
    except LLMError as err:
        ctx.tracer.event("search_stop", reason="llm_error", error=str(err), round=rnd)
        return [], f"LLM error: {type(err).__name__}: {err}"


def propose_node(loop: SearchLoop, state: SearchState, runtime: Any) -> dict[str, Any]:
    """Seeds in round 0, then up to ``proposals_per_round`` from the proposer."""
    ctx: RunContext = runtime.context
    config = loop.config
    rnd = state.get("round", 0)
    remaining = config.max_evaluations - state.get("n_evaluations", 0)
    if remaining <= 0:
        return {"proposals": [], "done": True, "stop_reason": "evaluation budget spent"}
    if rnd == 0 and ctx.run_dir is None:
        loop.logs.pop(None, None)  # a graph invoked again without a run: a new search
        loop.inflight = {k: v for k, v in loop.inflight.items() if k[0] != "None"}
    update: dict[str, Any] = {}
    if "recalled" in state:
        ctx.recalled = list(state["recalled"])
    else:  # round 0 of a fresh search: recall once, then it lives in the checkpoint
        ctx.recalled = recall(
            ctx, loop.problem.task, config.memory_recall, provenance=config.recall_provenance
        )
        update["recalled"] = ctx.recalled
    if "overlap" not in state and rnd == 0:
        update["overlap"] = resolve_overlap(config, ctx)
    props, stop = proposals(loop, state, ctx, min(config.proposals_per_round, remaining), rnd)
    if stop is not None:
        return {"proposals": [], "done": True, "stop_reason": stop}
    props = props[:remaining] if rnd > 0 else props
    ctx.tracer.event(
        "proposed", round=rnd, n=len(props), proposer=pick_proposer(loop.proposer, ctx).name
    )
    return {**update, "proposals": [p.model_dump(mode="json") for p in props]}


def resolve_overlap(config: SearchConfig, ctx: RunContext) -> bool:
    """``config.overlap``, or (None) whether the run's executor has more than one worker."""
    if config.overlap is not None:
        return config.overlap
    return int(getattr(ctx.executor, "workers", 1) or 1) > 1


def materialize_node(loop: SearchLoop, state: SearchState, runtime: Any) -> dict[str, Any]:
    """Proposals -> evaluable payloads; invalid ones fail here, duplicates are dropped."""
    ctx: RunContext = runtime.context
    seen = loop.history(state, ctx).keys  # the earlier rounds' payload keys
    batch, n_dup, n_invalid = _materialize(
        loop, ctx, state.get("round", 0), state.get("proposals", []), seen,
        state.get("n_duplicates", 0), state.get("n_invalid", 0),
    )  # fmt: skip
    return {"batch": batch, "n_duplicates": n_dup, "n_invalid": n_invalid}


def _materialize(
    loop: SearchLoop,
    ctx: RunContext,
    rnd: int,
    proposals: list[dict[str, Any]],
    seen: set[str],
    n_dup: int,
    n_invalid: int,
) -> tuple[list[dict[str, Any]], int, int]:
    """Round ``rnd``'s proposals as its batch (and the updated duplicate / invalid
    counts): rejected ones logged with their reason, those whose key is in ``seen`` or
    earlier in the round dropped."""
    logs = loop.run_logs(ctx)
    fresh: set[str] = set()
    batch: list[dict[str, Any]] = []
    for i, raw in enumerate(proposals):
        prop = Proposal.model_validate(raw)
        # Ids are deterministic in (round, position) so a resumed run re-creates them.
        digest = uuid.uuid5(uuid.NAMESPACE_OID, json.dumps(raw, sort_keys=True, default=str))
        cid = f"{loop.id_prefix}r{rnd}c{i}-{ctx.seed}-{digest.hex[:8]}"
        lineage = Evaluated(
            id=cid, key="", payload={}, round=rnd, parent_ids=prop.parent_ids,
            origin=prop.origin, rationale=prop.rationale,
        )  # fmt: skip
        try:
            if prop.error is not None:
                raise InvalidCandidate(prop.error)
            payload = loop.problem.materialize(prop, ctx)
        except InvalidCandidate as err:
            n_invalid += 1
            ev = lineage.model_copy(
                update={"key": payload_key(prop.payload), "payload": prop.payload,
                        "error": f"invalid: {err}"}
            )  # fmt: skip
            ctx.tracer.event("candidate_invalid", id=cid, reason=str(err), round=rnd)
            rec = ev.model_dump(mode="json")
            logs.rejected.append_new(rec)  # not again when a resume re-runs the node
            batch.append(rec)
            continue
        key = payload_key(payload)
        if key in seen or key in fresh:
            n_dup += 1
            ctx.tracer.event("candidate_duplicate", id=cid, key=key, round=rnd)
            continue
        fresh.add(key)
        ev = lineage.model_copy(update={"key": key, "payload": payload})
        batch.append(ev.model_dump(mode="json"))
    return batch, n_dup, n_invalid


def propose_ahead_node(loop: SearchLoop, state: SearchState, runtime: Any) -> dict[str, Any]:
    """``overlap``: propose round+1 from the rounds before this one, materialize it and
    submit it, so its evaluations start as soon as a worker frees up."""
    ctx: RunContext = runtime.context
    ctx.recalled = list(state.get("recalled", []))
    config = loop.config
    rnd = state.get("round", 0)
    nxt = rnd + 1
    batch = state.get("batch", [])
    # This round's candidates start first (round 1: not submitted yet), so the workers
    # evaluate them while the LLM proposes the next round, in proposal order.
    loop.submit(ctx, [b for b in batch if b.get("error") is None], rnd, True)
    pending = sum(1 for b in batch if not is_invalid(b))
    remaining = config.max_evaluations - state.get("n_evaluations", 0) - pending
    if remaining <= 0 or nxt >= config.max_rounds or _budget_spent(ctx):
        return {"ahead": [], "ahead_proposed": False}
    props, stop = proposals(loop, state, ctx, min(config.proposals_per_round, remaining), nxt)
    if stop is not None:
        return {"ahead": [], "ahead_proposed": False, "pending_stop": stop}
    props = props[:remaining]
    proposer = pick_proposer(loop.proposer, ctx).name
    ctx.tracer.event("proposed", round=nxt, n=len(props), proposer=proposer, ahead=True)
    raw = [p.model_dump(mode="json") for p in props]
    # Seen: the history's keys and this round's (in flight, not yet in the history).
    seen = set(loop.history(state, ctx).keys) | {b["key"] for b in batch if not is_invalid(b)}
    ahead, n_dup, n_invalid = _materialize(
        loop, ctx, nxt, raw, seen, state.get("n_duplicates", 0), state.get("n_invalid", 0)
    )
    loop.submit(ctx, [a for a in ahead if a.get("error") is None], nxt, True)
    return {"ahead": ahead, "ahead_proposed": True, "n_duplicates": n_dup,
            "n_invalid": n_invalid}  # fmt: skip


def evaluate_node(loop: SearchLoop, state: SearchState, runtime: Any) -> dict[str, Any]:
    """Score the batch through the executor; each result is logged the moment it lands."""
    ctx: RunContext = runtime.context
    log = loop.run_logs(ctx).evaluated
    batch = [dict(b) for b in state.get("batch", [])]
    todo = [b for b in batch if b.get("error") is None and b["id"] not in log.done]
    if todo:
        _check_sandbox_budget(ctx)
    loop.wait(
        ctx, [b for b in batch if b.get("error") is None], state.get("round", 0),
        loop.overlapping(state),
    )  # fmt: skip
    evaluated = [b if b.get("error") is not None else log.done[b["id"]] for b in batch]
    _remember(ctx, loop.problem, evaluated)
    n_new = sum(1 for e in evaluated if not is_invalid(e))
    # The round joins the history (its records are in the logs by now).
    return {
        "batch": evaluated,
        "history_round": state.get("round", 0) + 1,
        "n_history": state.get("n_history", 0) + len(evaluated),
        "history_digest": ids_digest(
            [e["id"] for e in evaluated], state.get("history_digest", NO_DIGEST)
        ),
        "n_evaluations": state.get("n_evaluations", 0) + n_new,
    }


def reflect_node(loop: SearchLoop, state: SearchState, runtime: Any) -> dict[str, Any]:
    """The problem's lessons from this round, stored in memory."""
    ctx: RunContext = runtime.context
    batch = [Evaluated.model_validate(b) for b in state.get("batch", [])]
    population = [Evaluated.model_validate(p) for p in state.get("population", [])]
    try:
        got = loop.problem.reflect(batch, population, ctx) if batch else []
        lessons = [Lesson.of(item) for item in got]
    except (BudgetExceeded, LLMError) as err:
        ctx.tracer.event("reflect_skipped", reason=str(err))
        lessons = []
    if lessons and ctx.memory is not None:
        store_lessons(ctx, loop, lessons, batch)
    return {"lessons": list(state.get("lessons", [])) + [les.text for les in lessons]}


def select_node(loop: SearchLoop, state: SearchState, runtime: Any) -> dict[str, Any]:
    """Keep the best ``population_size``; decide whether the search stops and why."""
    ctx: RunContext = runtime.context
    config, higher = loop.config, loop.problem.higher_is_better
    rnd = state.get("round", 0)
    pool = list(state.get("population", [])) + list(state.get("batch", []))
    passing = [p for p in pool if p.get("passed") and p.get("value") is not None]
    passing.sort(key=_sort_key(higher))
    population = passing[: config.population_size]
    old_best = state.get("best")
    best = population[0] if population else old_best
    improved = best is not None and (
        old_best is None or _better(best["value"], old_best["value"], higher)
    )
    stale = 0 if improved else state.get("stale_rounds", 0) + 1
    batch_new = [b for b in state.get("batch", []) if not is_invalid(b)]
    dup_rounds = 0 if batch_new else state.get("duplicate_rounds", 0) + 1
    done, reason = bool(state.get("done")), state.get("stop_reason", "")
    ahead_proposed = loop.overlapping(state) and bool(state.get("ahead_proposed"))
    draining = bool(state.get("draining"))
    if draining:  # the round in flight at the stop is evaluated: now the search is done
        done = True
    elif not done:
        if state.get("pending_stop"):
            done, reason = True, str(state["pending_stop"])
        elif state.get("n_evaluations", 0) >= config.max_evaluations:
            done, reason = True, "evaluation budget spent"
        elif rnd + 1 >= config.max_rounds:
            done, reason = True, "max rounds reached"
        elif config.patience is not None and stale >= config.patience:
            done, reason = True, f"no improvement in {stale} rounds"
        elif dup_rounds >= config.max_duplicate_rounds:
            done, reason = True, f"{dup_rounds} rounds without a new candidate"
        elif spent := _budget_spent(ctx):
            done, reason = True, f"budget exhausted ({spent})"
        if done and ahead_proposed:  # round+1 is submitted (paid for): evaluate it first
            done, draining = False, True
    if done:
        loop.close()
    best_value = best["value"] if best else None
    if ctx.progress is not None:
        ctx.progress(
            {
                "round": rnd,
                "evaluations": state.get("n_evaluations", 0),
                "max_evaluations": config.max_evaluations,
                "best": best_value,
            }
        )
    ctx.tracer.event(
        "round_done", round=rnd, best=best_value, evaluations=state.get("n_evaluations", 0),
        done=done, reason=reason,
    )  # fmt: skip
    return {
        "population": population,
        "best": best,
        "stale_rounds": stale,
        "duplicate_rounds": dup_rounds,
        "round": rnd + 1,
        "proposals": [],
        "batch": list(state.get("ahead", [])) if ahead_proposed else [],
        "batch_ready": ahead_proposed,
        "ahead": [],
        "ahead_proposed": False,
        "pending_stop": "",
        "draining": draining,
        "done": done,
        "stop_reason": reason,
    }


def _check_sandbox_budget(ctx: RunContext) -> None:
    if ctx.budget is not None:
        ctx.budget.check_sandbox()


def _budget_spent(ctx: RunContext) -> str | None:
    """The cap that is spent (``calls``, ``usd``, ``wall_s``, ...), None while none is."""
    if ctx.budget is None:
        return None
    try:
        ctx.budget.check_before_call()
        ctx.budget.check_sandbox()
    except BudgetExceeded as err:
        return str(err.limit or "budget")
    return None


def _remember(ctx: RunContext, problem: SearchProblem, evaluated: list[dict[str, Any]]) -> None:
    """Write each candidate to memory with its lineage (idempotent on resume)."""
    if ctx.memory is None:
        return
    task = task_id(problem.task)
    with candidate_batch(ctx):  # one transaction for the round's candidates
        for ev in evaluated:
            payload = ev["payload"]
            code = payload.get("code") if isinstance(payload.get("code"), str) else None
            config = {k: v for k, v in payload.items() if k != "code"} or None
            record_candidate(
                ctx,
                mem_id=memory_id(ctx, ev["id"]),
                task=task,
                code=code,
                config=config,
                parent_ids=[memory_id(ctx, p) for p in ev.get("parent_ids", [])],
                metrics=dict(ev.get("metrics") or {}),
                score=ev.get("value"),
                status="evaluated" if ev.get("passed") else "failed",
                tags=[t for t in (ev.get("origin"), f"round-{ev.get('round', 0)}") if t],
            )


def store_lessons(
    ctx: RunContext, loop: SearchLoop, lessons: Sequence[str | Lesson], batch: list[Evaluated]
) -> None:
    """Store the round's lessons; with a run directory their ids are stable, so a round
    re-run after a kill (between the memory write and the node's checkpoint) does not
    store them twice, and later prompts see the memory an uninterrupted run would."""
    # ids and measured values only: an error text here would be candidate output in a
    # record whose provenance is the lesson's
    summary = "; ".join(
        f"{ev.id}: failed" if ev.error else f"{ev.id}: value={ev.value:.6g}"
        if ev.value is not None else ev.id
        for ev in batch[:6]
    )  # fmt: skip
    rnd = batch[0].round if batch else 0
    for i, les in enumerate(map(Lesson.of, lessons)):
        digest = hashlib.sha256(les.text.encode()).hexdigest()[:12]
        local = f"{loop.id_prefix}lesson-r{rnd}-{i}-{ctx.seed}-{digest}"
        record_lesson(
            ctx,
            mem_id=memory_id(ctx, local, prefix="exp") if ctx.run_dir else None,
            task=task_signature(loop.problem.task),
            lesson=les.text,
            trajectory_summary=summary,
            outcome=f"round {rnd}",
            provenance=les.provenance,
            tags=[ctx.agent, getattr(loop.problem.task, "suite", "task")],
        )
