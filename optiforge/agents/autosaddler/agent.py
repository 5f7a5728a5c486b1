"""AutoSaddler's tuning loop as a durable graph: ``start`` -> ``iterate``* -> end.

- **start**: the dev tasks are shuffled (by the run seed) into training tasks and
  ``val_tasks`` validation tasks; the base harness runs the validation batch once.
- **iterate** (one round): run the current harness on the next mini-batch (``batch``
  training tasks x ``runs`` seeds, fresh seeds each round); diagnose every failed
  trajectory (``diagnosis``: the whole trace, or its last error); propose (the LLM, or the
  rule library: one patch to one part, or ``whole``); apply; gate (``gate.py``: the paired
  validation gate, or the trajectory-repair ablation); record the proposal with its
  diagnosis and result in memory (an ``Experience`` tagged ``autosaddler``) and in the
  run's state; continue from the accepted harness.

The heldout split is never run while tuning (``metrics.measure`` reports it afterwards).
Every episode is scored by the task's own verifier; the loop never reads an agent's claim.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from optiforge.agents.autosaddler.config import SaddlerConfig
from optiforge.agents.autosaddler.gate import cause_gate, repair_gate, validation_gate
from optiforge.agents.autosaddler.problem import item_key, run_items
from optiforge.agents.autosaddler.proposers import (
    choose_rules,
    llm_propose,
    patch_key,
    proposal_prompt,
)
from optiforge.agents.kit import AgentRun, RunContext
from optiforge.agents.kit.lineage import record_lesson
from optiforge.agents.spec import AgentOutcome
from optiforge.errors import ConfigError

VAL_SEED = 50_000
"""Validation runs use seeds VAL_SEED + r, the same for every harness (paired results)."""


class SaddlerState(TypedDict, total=False):
    files: dict[str, str]
    """The current harness's files."""
    base_files: dict[str, str]
    train: list[str]
    val: list[str]
    iteration: int
    cursor: int
    history: list[dict[str, Any]]
    val_cache: dict[str, dict[str, bool]]
    val_causes: dict[str, dict[str, str]]
    """Per harness version: each validation item's ``"pass"`` or diagnosed failure category."""
    tried: list[str]
    """Patches tried on the current harness (emptied when a patch is accepted: a patch
    refused on one harness may help once another part has changed, e.g. a check turn
    that needs turns to spare)."""


def _brief(ep: dict[str, Any]) -> dict[str, Any]:
    return {
        k: ep.get(k) for k in ("task", "seed", "passed", "stop", "steps", "llm_calls", "tokens")
    }


def _causes(
    target: Any, eps: list[dict[str, Any]], dev: dict[str, Any], mode: str
) -> dict[str, str]:
    return {item_key(dev[e["task"]], e["seed"]): "pass" if e["passed"] else
            str(target.diagnose(e, mode)["category"]) for e in eps}  # fmt: skip


def _targeted(patches: list[Any], h: Any, library: dict[str, list[Any]]) -> set[str]:
    """The failure categories whose library rules propose these patches on ``h``."""
    keys = {patch_key(p) for p in patches}
    out = set()
    for cat, makers in library.items():
        for make in makers:
            p = make(h)
            if p is not None and patch_key(p) in keys:
                out.add(cat)
    return out


def build_tuning(
    target: Any,
    config: SaddlerConfig,
    on_round: Callable[[dict[str, Any]], None] | None = None,
) -> AgentRun:
    """The tuning run for ``target`` (drive it with a ``RunContext``: its ``llm`` is the
    proposer, None for the rule library; its ``memory`` receives every proposal)."""
    dev = {t.name: t for t in target.tasks("dev")}
    if len(dev) <= config.val_tasks:
        raise ConfigError(f"{target.name}: {len(dev)} dev tasks cannot give {config.val_tasks} "
                          "validation tasks and a training set")  # fmt: skip

    def val_items(names: list[str]) -> list[tuple[Any, int]]:
        return [(dev[n], VAL_SEED + r) for n in names for r in range(config.val_runs)]

    def start(state: SaddlerState, runtime: Any) -> dict[str, Any]:
        ctx: RunContext = runtime.context
        names = sorted(dev)
        random.Random(ctx.seed).shuffle(names)
        val, train = sorted(names[: config.val_tasks]), names[config.val_tasks :]
        base = target.base()
        cache: dict[str, dict[str, bool]] = {}
        causes: dict[str, dict[str, str]] = {}
        if config.gate == "validation":
            eps = run_items(target, base, val_items(val), config.workers)
            cache[base.version] = {item_key(dev[e["task"]], e["seed"]): e["passed"] for e in eps}
            causes[base.version] = _causes(target, eps, dev, config.diagnosis)
        ctx.tracer.event(
            "saddler_start", target=target.name, train=train, val=val, base=base.version
        )
        return {"files": base.files(), "base_files": base.files(), "train": train, "val": val,
                "iteration": 0, "cursor": 0, "history": [], "val_cache": cache, "tried": [],
                "val_causes": causes}  # fmt: skip

    def iterate(state: SaddlerState, runtime: Any) -> dict[str, Any]:
        ctx: RunContext = runtime.context
        it = int(state["iteration"])
        h = target.load(state["files"])
        train = state["train"]
        names = [
            train[(state["cursor"] + i) % len(train)] for i in range(min(config.batch, len(train)))
        ]
        items = [(dev[n], 1000 * (it + 1) + r) for n in names for r in range(config.runs)]
        eps = run_items(target, h, items, config.workers)
        failed = [e for e in eps if not e["passed"]]
        rec: dict[str, Any] = {"iteration": it + 1, "harness": h.version, "batch": [_brief(e) for e in eps],
                               "batch_pass": sum(e["passed"] for e in eps), "batch_n": len(eps),
                               "accepted": False, "patches": [], "result": ""}  # fmt: skip
        tried = list(state["tried"])
        cache = dict(state["val_cache"])
        causes = dict(state.get("val_causes") or {})
        files = state["files"]
        if not failed:
            rec["result"] = "no failures in the mini-batch"
        else:
            diags = [target.diagnose(e, config.diagnosis) for e in failed]
            rec["diagnoses"] = dict(Counter(d["category"] for d in diags))
            rec["evidence"] = [d["evidence"] for d in diags[:3]]
            use_llm = config.proposer == "llm" or (
                config.proposer == "auto" and ctx.llm is not None
            )
            if use_llm:
                if ctx.llm is None:
                    raise ConfigError("proposer=llm needs an LLM (--model)")
                shown = [
                    target.render(e, config.diagnosis) for e in failed[: config.traces_per_prompt]
                ]
                prompt = proposal_prompt(h, target.parts_doc, target.categories, shown, state["history"],
                                         mode=config.diagnosis, scope=config.scope)  # fmt: skip
                diag, patches, err = llm_propose(ctx.llm, h, prompt, scope=config.scope)
                rec["proposer"] = "llm"
                rec["llm_diagnosis"] = diag
                targeted = {str(diag.get("category", ""))} - {""}
                if err:
                    rec["proposal_errors"] = err
                patches = [p for p in patches if patch_key(p) not in tried]
            else:
                rec["proposer"] = "rules"
                patches = choose_rules(
                    [d["category"] for d in diags], h, target.library, set(tried), config.scope
                )
                targeted = _targeted(patches, h, target.library)
            if not patches:
                rec["result"] = "no new patch proposed" + (
                    f" ({rec.get('proposal_errors')})" if rec.get("proposal_errors") else ""
                )
            else:
                new = h
                for p in patches:
                    new = new.apply(p)
                tried += [patch_key(p) for p in patches]
                rec["patches"] = [p.model_dump() for p in patches]
                if config.gate == "validation":
                    if h.version not in cache or h.version not in causes:
                        eps0 = run_items(target, h, val_items(state["val"]), config.workers)
                        cache[h.version] = {
                            item_key(dev[e["task"]], e["seed"]): e["passed"] for e in eps0
                        }
                        causes[h.version] = _causes(target, eps0, dev, config.diagnosis)
                    eps1 = run_items(target, new, val_items(state["val"]), config.workers)
                    after = {item_key(dev[e["task"]], e["seed"]): e["passed"] for e in eps1}
                    verdict = validation_gate(cache[h.version], after, config.margin_sd)
                    rec["result"] = (f"validation {verdict['before']}/{verdict['n']} -> {verdict['after']}/{verdict['n']} "
                                     f"(wins {verdict['wins']}, losses {verdict['losses']}, lead needed {verdict['need']})")  # fmt: skip
                    after_causes = _causes(target, eps1, dev, config.diagnosis)
                    if (not verdict["accepted"] and config.cause_gate
                            and verdict["wins"] >= verdict["losses"]):  # fmt: skip
                        cv = cause_gate(causes[h.version], after_causes, targeted, config.margin_sd)
                        verdict = {**verdict, "cause": cv, "accepted": cv["accepted"]}
                        rec["result"] += (f"; root cause {'/'.join(cv['targeted']) or '?'}: removed on "
                                          f"{cv['fixed']}, new on {cv['new']}, lead needed {cv['need']}")  # fmt: skip
                    if verdict["accepted"]:
                        cache[new.version] = after
                        causes[new.version] = after_causes
                else:
                    again = run_items(
                        target, new, [(dev[e["task"]], e["seed"]) for e in failed], config.workers
                    )
                    verdict = repair_gate(
                        {item_key(dev[e["task"]], e["seed"]): e["passed"] for e in again}
                    )
                    rec["result"] = (
                        f"repaired {verdict['fixed']} of {verdict['n']} failed trajectories"
                    )
                rec["gate"] = verdict
                rec["accepted"] = bool(verdict["accepted"])
                if rec["accepted"]:
                    files = new.files()
                    rec["new_harness"] = new.version
                    tried = []
                for p in patches:
                    record_lesson(ctx, task=f"autosaddler:{target.name}", agent="autosaddler",
                                  lesson=f"{p.target} {p.op} {p.value!r}: {p.why}"[:500],
                                  trajectory_summary="; ".join(rec.get("evidence", []))[:1000],
                                  outcome="accepted" if rec["accepted"] else "rejected",
                                  # the evidence quotes trajectories' stdout/stderr tails
                                  provenance="candidate",
                                  tags=["autosaddler", target.name, *rec.get("diagnoses", {})],
                                  score=float(verdict.get("wins", verdict.get("fixed", 0)) - verdict.get("losses", 0)))  # fmt: skip
        ctx.tracer.event("saddler_round", **{k: v for k, v in rec.items() if k != "batch"})
        if on_round is not None:
            on_round(rec)
        return {"files": files, "iteration": it + 1, "cursor": (state["cursor"] + len(names)) % len(train),
                "history": [*state["history"], rec], "val_cache": cache, "tried": tried,
                "val_causes": causes}  # fmt: skip

    g: StateGraph[Any, Any, Any, Any] = StateGraph(SaddlerState, context_schema=RunContext)
    g.add_node("start", start)  # type: ignore[call-overload]
    g.add_node("iterate", iterate)  # type: ignore[call-overload]
    g.add_edge(START, "start")
    g.add_edge("start", "iterate")
    g.add_conditional_edges(
        "iterate", lambda s: "iterate" if s["iteration"] < config.iterations else END
    )

    def outcome(state: dict[str, Any], ctx: RunContext) -> AgentOutcome:
        hist = state.get("history") or []
        accepted = [r for r in hist if r.get("accepted")]
        return AgentOutcome(
            best_candidate=state.get("files"), n_evaluations=len(hist),
            stop_reason=f"{len(hist)} rounds", claimed_value=None,
            extra={"accepted": len(accepted), "history": hist, "base_files": state.get("base_files"),
                   "train": state.get("train"), "val": state.get("val")},
        )  # fmt: skip

    return AgentRun(graph=g, outcome=outcome, what="an autosaddler run", thread_id=f"saddler-{target.name}",
                    recursion_limit=config.iterations + 10)  # fmt: skip


def tune(target: Any, config: SaddlerConfig, ctx: RunContext, *, resume: bool = False,
         on_round: Callable[[dict[str, Any]], None] | None = None) -> AgentOutcome:  # fmt: skip
    """Run (or resume, with ``ctx.run_dir``) a tuning run; the outcome's ``best_candidate``
    is the tuned harness's files."""
    run = build_tuning(target, config, on_round)
    final = run.drive(ctx, resume=resume)
    return run.outcome(final.state, ctx)
