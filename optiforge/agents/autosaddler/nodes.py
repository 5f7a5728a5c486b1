"""AutoSaddler's graph nodes: ``start`` -> ``iterate``* (``more``) -> end; ``outcome``.

Each reads the run's target (the graph's "task") and config from ``runtime.context``
(``Ctx``); see ``agent.py`` for what a round does.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable
from typing import Any

from langgraph.graph import END
from langgraph.runtime import Runtime

from optiforge.agents.autosaddler.config import SaddlerConfig
from optiforge.agents.autosaddler.problem import (
    SaddlerState,
    Target,
    TunedHarness,
    cause_gate,
    item_key,
    repair_gate,
    run_items,
    validation_gate,
)
from optiforge.agents.autosaddler.proposers import (
    Maker,
    choose_rules,
    llm_propose,
    patch_key,
    proposal_prompt,
)
from optiforge.agents.autosaddler.report import SaddlerExtra
from optiforge.agents.kit import RunContext
from optiforge.agents.kit.context import AgentContext
from optiforge.agents.kit.harness import Patch
from optiforge.agents.kit.lineage import record_lesson
from optiforge.agents.spec import AgentOutcome
from optiforge.errors import ConfigError
from optiforge.evals.protocol import Task

Ctx = AgentContext[Target, SaddlerConfig]
"""The graph's runtime context: the run's handles, the target it tunes and the config."""

VAL_SEED = 50_000
"""Validation runs use seeds VAL_SEED + r, the same for every harness (paired results)."""

ON_ROUND = "on_round"
"""The ``ctx.memo`` key of the listener ``agent.tune`` gives each round's record to."""


def _no_listener() -> Callable[[dict[str, Any]], None] | None:
    return None


def dev_tasks(ctx: Ctx) -> dict[str, Task]:
    """The target's dev tasks by name (read once per run)."""
    return ctx.memo("dev", lambda: {t.name: t for t in ctx.task.tasks("dev")})


def val_items(ctx: Ctx, names: list[str]) -> list[tuple[Task, int]]:
    """The validation items of ``names``: ``val_runs`` seeds each, the same for every harness."""
    dev = dev_tasks(ctx)
    return [(dev[n], VAL_SEED + r) for n in names for r in range(ctx.config.val_runs)]


def _brief(ep: dict[str, Any]) -> dict[str, Any]:
    return {
        k: ep.get(k) for k in ("task", "seed", "passed", "stop", "steps", "llm_calls", "tokens")
    }


def _causes(
    target: Target, eps: list[dict[str, Any]], dev: dict[str, Task], mode: str
) -> dict[str, str]:
    return {item_key(dev[e["task"]], e["seed"]): "pass" if e["passed"] else
            str(target.diagnose(e, mode)["category"]) for e in eps}  # fmt: skip


def _targeted(patches: list[Patch], h: TunedHarness, library: dict[str, list[Maker]]) -> set[str]:
    """The failure categories whose library rules propose these patches on ``h``."""
    keys = {patch_key(p) for p in patches}
    out = set()
    for cat, makers in library.items():
        for make in makers:
            p = make(h)
            if p is not None and patch_key(p) in keys:
                out.add(cat)
    return out


def start(state: SaddlerState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """Split the dev tasks into training and validation tasks (by the run seed); with the
    validation gate, run the base harness on the validation batch once."""
    ctx = runtime.context
    target, config, dev = ctx.task, ctx.config, dev_tasks(ctx)
    names = sorted(dev)
    random.Random(ctx.seed).shuffle(names)
    val, train = sorted(names[: config.val_tasks]), names[config.val_tasks :]
    base = target.base()
    cache: dict[str, dict[str, bool]] = {}
    causes: dict[str, dict[str, str]] = {}
    if config.gate == "validation":
        eps = run_items(target, base, val_items(ctx, val), config.workers)
        cache[base.version] = {item_key(dev[e["task"]], e["seed"]): e["passed"] for e in eps}
        causes[base.version] = _causes(target, eps, dev, config.diagnosis)
    ctx.tracer.event("saddler_start", target=target.name, train=train, val=val, base=base.version)
    return {"files": base.files(), "base_files": base.files(), "train": train, "val": val,
            "iteration": 0, "cursor": 0, "history": [], "val_cache": cache, "tried": [],
            "val_causes": causes}  # fmt: skip


def propose_patches(
    ctx: Ctx, h: TunedHarness, failed: list[dict[str, Any]], diags: list[dict[str, Any]],
    state: SaddlerState, tried: list[str], rec: dict[str, Any],
) -> tuple[list[Patch], set[str]]:  # fmt: skip
    """The round's new patches (none tried on ``h`` yet) and the failure categories they
    target: the LLM's (shown the failed traces), or the rule library's. Notes who proposed
    (and the LLM's diagnosis and errors) in ``rec``."""
    target, config = ctx.task, ctx.config
    use_llm = config.proposer == "llm" or (config.proposer == "auto" and ctx.llm is not None)
    if not use_llm:
        rec["proposer"] = "rules"
        patches = choose_rules(
            [d["category"] for d in diags], h, target.library, set(tried), config.scope
        )
        return patches, _targeted(patches, h, target.library)
    if ctx.llm is None:
        raise ConfigError("proposer=llm needs an LLM (--model)")
    shown = [target.render(e, config.diagnosis) for e in failed[: config.traces_per_prompt]]
    prompt = proposal_prompt(h, target.parts_doc, target.categories, shown, state["history"],
                             mode=config.diagnosis, scope=config.scope)  # fmt: skip
    diag, patches, err = llm_propose(ctx.llm, h, prompt, scope=config.scope)
    rec["proposer"] = "llm"
    rec["llm_diagnosis"] = diag
    targeted = {str(diag.get("category", ""))} - {""}
    if err:
        rec["proposal_errors"] = err
    return [p for p in patches if patch_key(p) not in tried], targeted


def gate_patch(
    ctx: Ctx, h: TunedHarness, new: TunedHarness, failed: list[dict[str, Any]], state: SaddlerState,
    cache: dict[str, dict[str, bool]], causes: dict[str, dict[str, str]], targeted: set[str],
    rec: dict[str, Any],
) -> dict[str, Any]:  # fmt: skip
    """The gate's verdict on the patched harness ``new`` against ``h`` (``config.gate``):
    the paired validation gate (then the root-cause gate, when on), or the repair gate.
    Adds validation results to ``cache``/``causes``; writes ``rec["result"]``."""
    target, config, dev = ctx.task, ctx.config, dev_tasks(ctx)
    if config.gate != "validation":
        again = run_items(
            target, new, [(dev[e["task"]], e["seed"]) for e in failed], config.workers
        )
        verdict = repair_gate({item_key(dev[e["task"]], e["seed"]): e["passed"] for e in again})
        rec["result"] = f"repaired {verdict['fixed']} of {verdict['n']} failed trajectories"
        return verdict
    if h.version not in cache or h.version not in causes:
        eps0 = run_items(target, h, val_items(ctx, state["val"]), config.workers)
        cache[h.version] = {item_key(dev[e["task"]], e["seed"]): e["passed"] for e in eps0}
        causes[h.version] = _causes(target, eps0, dev, config.diagnosis)
    eps1 = run_items(target, new, val_items(ctx, state["val"]), config.workers)
    after = {item_key(dev[e["task"]], e["seed"]): e["passed"] for e in eps1}
    verdict = validation_gate(cache[h.version], after, config.margin_sd)
    rec["result"] = (f"validation {verdict['before']}/{verdict['n']} -> {verdict['after']}/{verdict['n']} "
                     f"(wins {verdict['wins']}, losses {verdict['losses']}, lead needed {verdict['need']})")  # fmt: skip
    after_causes = _causes(target, eps1, dev, config.diagnosis)
    if not verdict["accepted"] and config.cause_gate and verdict["wins"] >= verdict["losses"]:
        cv = cause_gate(causes[h.version], after_causes, targeted, config.margin_sd)
        verdict = {**verdict, "cause": cv, "accepted": cv["accepted"]}
        rec["result"] += (f"; root cause {'/'.join(cv['targeted']) or '?'}: removed on "
                          f"{cv['fixed']}, new on {cv['new']}, lead needed {cv['need']}")  # fmt: skip
    if verdict["accepted"]:
        cache[new.version] = after
        causes[new.version] = after_causes
    return verdict


def iterate(state: SaddlerState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """One round: the next mini-batch, diagnoses of its failures, a patch
    (``propose_patches``), the gate (``gate_patch``), memory."""
    ctx = runtime.context
    target, config, dev = ctx.task, ctx.config, dev_tasks(ctx)
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
        patches, targeted = propose_patches(ctx, h, failed, diags, state, tried, rec)
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
            verdict = gate_patch(ctx, h, new, failed, state, cache, causes, targeted, rec)
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
    on_round = ctx.memo(ON_ROUND, _no_listener)
    if on_round is not None:
        on_round(rec)
    return {"files": files, "iteration": it + 1, "cursor": (state["cursor"] + len(names)) % len(train),
            "history": [*state["history"], rec], "val_cache": cache, "tried": tried,
            "val_causes": causes}  # fmt: skip


def more(state: SaddlerState, runtime: Runtime[Ctx]) -> str:
    """Another round until ``config.iterations`` rounds ran."""
    return "iterate" if state["iteration"] < runtime.context.config.iterations else END


def outcome(state: dict[str, Any], ctx: RunContext) -> AgentOutcome:
    """The tuned harness's files as the candidate; every round's record in ``extra``."""
    hist = state.get("history") or []
    accepted = [r for r in hist if r.get("accepted")]
    extra = SaddlerExtra(accepted=len(accepted), history=hist, base_files=state.get("base_files"),
                         train=state.get("train"), val=state.get("val"))  # fmt: skip
    return AgentOutcome(
        best_candidate=state.get("files"), n_evaluations=len(hist),
        stop_reason=f"{len(hist)} rounds", claimed_value=None, extra=extra.model_dump(),
    )  # fmt: skip
