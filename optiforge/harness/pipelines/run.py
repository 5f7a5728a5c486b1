"""Compile a pipeline to one LangGraph graph and run it durably in one run directory.

Layout of a pipeline run::

    RUN/manifest.json      kind "pipeline", the pipeline spec, the settings
    RUN/events.jsonl       the one event log: the pipeline's own events and every node's,
                           each tagged with its node
    RUN/pipeline.sqlite    the graph's checkpoints (one per finished node)
    RUN/memory.db          the one memory every node reads and writes (memory: run)
    RUN/nodes/ID/          each agent node's complete run directory (report/resume work)
    RUN/summary.json|md    the ledger: every node's status, score, spend; the totals

Every node's LLM calls are charged to one ``Budget`` (the pipeline's caps); a resumed
pipeline first counts the calls already in its event log. A run killed at any point
resumes (``--resume RUN``): finished nodes are not run again (the graph's checkpoint), and
the node that was running resumes its own agent checkpoint.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from pydantic import BaseModel, ConfigDict

from optiforge.config import RunSettings, build_config
from optiforge.errors import ConfigError, OptiforgeError, RunRecordError
from optiforge.harness.pipelines.spec import END, NodeSpec, PipelineSpec, resolve_refs
from optiforge.harness.summary import RunSummary
from optiforge.runs import (
    EVENTS,
    TEE,
    NullTracer,
    RunRecorder,
    TeeTracer,
    iter_events,
    read_manifest,
)

CHECKPOINTS = "pipeline.sqlite"
THREAD = "pipeline"
STOP = "__max_steps__"


class Artifact(BaseModel):
    """What a node hands on: the typed result other nodes reference (``${id.artifact...}``)."""

    model_config = ConfigDict(extra="allow")

    kind: str
    """``program``, ``gp-kernel``, ``triton-kernel``, ``formulation``, ``causal-model``,
    ``diagnosis``, ... (``AgentSpec.artifact``)."""
    node: str
    agent: str | None = None
    task: str | None = None
    score: float | None = None
    metric: str | None = None
    higher_is_better: bool | None = None
    path: str | None = None
    """The best candidate's file, relative to the pipeline run directory."""
    extra: dict[str, Any] = {}
    """The agent's own outcome details (e.g. Kernel Discovery's ``final_kernel``)."""


class PipelineState(TypedDict, total=False):
    results: dict[str, dict[str, Any]]
    artifacts: dict[str, dict[str, Any]]
    path: list[str]
    """Node visits in order."""
    stopped: str


@dataclass
class PipelineContext:
    """Live handles of a pipeline run (never checkpointed)."""

    spec: PipelineSpec
    settings: RunSettings
    run_dir: Path
    recorder: Any
    budget: Any
    memory_url: str | None
    llm: Any | None = None
    """An LLM object every node uses (tests, programmatic use); None: ``settings.model``."""
    on_node: Callable[[str, dict[str, Any]], None] | None = None
    """Called with ``("start" | "done", info)`` around every node."""
    node_progress: Callable[[str, dict[str, Any]], None] | None = None
    """Called with ``(node id, the agent's progress info)`` during an agent node."""
    t0: float = field(default_factory=time.perf_counter)


# ----------------------------------------------------------------------------- nodes


def _visit_dir(ctx: PipelineContext, node_id: str, visit: int) -> Path:
    return ctx.run_dir / "nodes" / (node_id if visit == 0 else f"{node_id}.{visit + 1}")


def node_settings(
    base: RunSettings, node: NodeSpec, sets: dict[str, Any], memory_url: str | None
) -> RunSettings:
    """A node's run settings: the pipeline's, its budget/seed, the one memory, its ``set``."""
    data = base.model_dump(mode="json")
    data["budget"] = node.budget
    data["seed"] = base.seed if node.seed is None else node.seed
    data["memory"] = memory_url or "none"
    # the pipeline's ledger holds the caps; a node's own would count only its share
    data.update(max_llm_calls=None, max_usd=None, max_wall_s=None)
    overrides = [f"{k}={json.dumps(v)}" for k, v in sets.items()]
    return build_config(RunSettings, base=data, overrides=overrides, where=f"node {node.id!r}")


def _agent_node(node: NodeSpec) -> Callable[..., dict[str, Any]]:
    def run(state: PipelineState, runtime: Any) -> dict[str, Any]:
        from optiforge.evals.registry import resolve_task
        from optiforge.harness.runner import run_task

        ctx: PipelineContext = runtime.context
        path = list(state.get("path", []))
        visit = path.count(node.id)
        out = _visit_dir(ctx, node.id, visit)
        rel = str(out.relative_to(ctx.run_dir))
        results, artifacts = dict(state.get("results", {})), dict(state.get("artifacts", {}))
        info = {"node": node.id, "agent": node.agent, "task": node.task, "dir": rel}
        if ctx.on_node:
            ctx.on_node("start", info)
        summary: RunSummary | None = None
        error: str | None = None
        if (out / "summary.json").is_file():  # finished before a kill: not run again
            summary = RunSummary.load(out)
        else:
            try:
                scope = {k: {"result": r, "artifact": artifacts.get(k)} for k, r in results.items()}
                sets = resolve_refs(node.set, scope, f"node {node.id!r}")
                method = resolve_refs(node.method, scope, f"node {node.id!r}")
                method = None if method in (None, node.agent) else str(method)
                settings = node_settings(ctx.settings, node, sets, ctx.memory_url)
                task = resolve_task(str(node.task))
                progress = None
                if ctx.node_progress is not None:
                    cb = ctx.node_progress

                    def progress(i: dict[str, Any]) -> None:
                        cb(node.id, i)

                # events written by worker processes (FileTracer) reach the one log too
                out.mkdir(parents=True, exist_ok=True)
                (out / TEE).write_text(json.dumps(
                    {"path": str(ctx.run_dir / EVENTS), "labels": {"node": node.id}}))  # fmt: skip
                summary = run_task(
                    str(node.agent), task, settings, out, method=method,
                    resume=(out / "manifest.json").is_file(), progress=progress,
                    llm=_node_llm(ctx), budget=ctx.budget,
                    tee=TeeTracer(NullTracer(), ctx.recorder, node=node.id),
                    config_extra={"pipeline": ctx.spec.name, "node": node.id},
                )  # fmt: skip
            except KeyboardInterrupt:
                raise
            except OptiforgeError as e:
                error = f"{type(e).__name__}: {e}"
            except Exception as e:  # noqa: BLE001 - one node's crash is that node's failure
                error = f"{type(e).__name__}: {e}"
        result = _result(node, rel, summary, error)
        artifacts.pop(node.id, None)
        if summary is not None and summary.best_score is not None:
            try:
                artifacts[node.id] = _artifact(node, ctx, out, summary).model_dump(mode="json")
            except ConfigError as e:  # a malformed hand-off fails the node that made it
                result = {**result, "status": "failed", "status_reason": str(e), "error": str(e)}
        results[node.id] = result
        ctx.recorder.event("pipeline_node", **{k: result.get(k) for k in (
            "node", "agent", "task", "status", "status_reason", "best_score", "dir")})  # fmt: skip
        if ctx.on_node:
            ctx.on_node("done", result)
        return {"results": results, "artifacts": artifacts, "path": path + [node.id]}

    return run


def _node_llm(ctx: PipelineContext) -> Any | None:
    llm = ctx.llm
    if llm is not None:
        # charged to the pipeline's ledger; its events go to the node's run (rewired per node)
        if hasattr(llm, "budget"):
            llm.budget = ctx.budget
        if hasattr(llm, "tracer"):
            llm.tracer = None
    return llm


def _result(
    node: NodeSpec, rel: str, summary: RunSummary | None, error: str | None
) -> dict[str, Any]:
    method = (summary.method if summary else None) or node.agent
    base = {"node": node.id, "kind": "agent", "agent": node.agent, "method": method,
            "task": node.task, "dir": rel}  # fmt: skip
    if summary is None:
        return {**base, "status": "failed", "status_reason": error or "no summary",
                "best_score": None, "error": error}  # fmt: skip
    keys = ("status", "status_reason", "best_score", "baseline_name", "baseline_score", "metric",
            "higher_is_better", "n_evaluations", "llm_calls", "tokens", "cost_usd",
            "unpriced_calls", "wall_s")  # fmt: skip
    row = summary.row()  # the keys it holds: a hard-stopped run wrote fewer
    return {**base, **{k: row.get(k) for k in keys}}


def _artifact(node: NodeSpec, ctx: PipelineContext, out: Path, summary: RunSummary) -> Artifact:
    from optiforge.agents import get_agent
    from optiforge.harness.pipelines.handoff import check_extra

    best = summary.best_path
    kind = get_agent(str(node.agent)).artifact
    extra = json.loads(json.dumps(summary.extra, default=str))
    return Artifact(
        kind=kind, node=node.id, agent=node.agent, task=node.task,
        score=summary.best_score, metric=summary.metric,
        higher_is_better=summary.higher_is_better,
        path=str((out / best).relative_to(ctx.run_dir)) if best else None,
        extra=check_extra(kind, extra, node.id),
    )  # fmt: skip


def _step_node(node: NodeSpec, source: str) -> Callable[..., dict[str, Any]]:
    def run(state: PipelineState, runtime: Any) -> dict[str, Any]:
        from optiforge.harness.pipelines.step_input import StepInput
        from optiforge.harness.pipelines.steps import STEPS

        ctx: PipelineContext = runtime.context
        path = list(state.get("path", []))
        out = _visit_dir(ctx, node.id, path.count(node.id))
        results, artifacts = dict(state.get("results", {})), dict(state.get("artifacts", {}))
        src = results.get(source) if source else {}
        if ctx.on_node:
            ctx.on_node(
                "start", {"node": node.id, "step": node.step, "input": source, "task": node.task}
            )
        if src is None:
            res: dict[str, Any] = {
                "status": "failed",
                "status_reason": f"input node {source!r} has not run",
            }
            art = None
        else:
            tracer = TeeTracer(NullTracer(), ctx.recorder, node=node.id)
            try:
                scope = {k: {"result": r, "artifact": artifacts.get(k)} for k, r in results.items()}
                inp = StepInput(
                    node=source, result=src, task=node.task,
                    run_dir=ctx.run_dir / src["dir"] if src.get("dir") else None,
                    out_dir=out, llm=_step_llm(ctx, tracer), memory_url=ctx.memory_url,
                    tracer=tracer, options=resolve_refs(node.set, scope, f"node {node.id!r}"),
                    results={k: {**r, "artifact": artifacts.get(k)} for k, r in results.items()},
                    pipeline_dir=ctx.run_dir, sandbox=ctx.settings.sandbox,
                )  # fmt: skip
                res, art = STEPS[str(node.step)](inp)
            except KeyboardInterrupt:
                raise
            except Exception as e:  # noqa: BLE001 - a step's crash is that step's failure
                res, art = {"status": "failed", "status_reason": f"{type(e).__name__}: {e}"}, None
        result = {"node": node.id, "kind": "step", "step": node.step, "input": source or None,
                  "task": node.task,
                  "dir": str(out.relative_to(ctx.run_dir)), "best_score": None, **res}  # fmt: skip
        results[node.id] = result
        if art is not None:
            artifacts[node.id] = Artifact(node=node.id, **art).model_dump(mode="json")
        ctx.recorder.event("pipeline_node", node=node.id, step=node.step, status=result["status"],
                           status_reason=result.get("status_reason"))  # fmt: skip
        if ctx.on_node:
            ctx.on_node("done", result)
        return {"results": results, "artifacts": artifacts, "path": path + [node.id]}

    return run


def _step_llm(ctx: PipelineContext, tracer: Any) -> Any | None:
    """The step's LLM (None offline), charged to the ledger, its calls in the one log."""
    if ctx.llm is not None:
        if hasattr(ctx.llm, "budget"):
            ctx.llm.budget = ctx.budget
        if hasattr(ctx.llm, "tracer"):
            ctx.llm.tracer = tracer
        return ctx.llm
    if ctx.settings.model == "offline":
        return None
    from optiforge.harness.context import make_run_llm

    return make_run_llm(ctx.settings, ctx.budget, tracer)


def _stop_node(state: PipelineState, runtime: Any) -> dict[str, Any]:
    ctx: PipelineContext = runtime.context
    reason = f"stopped after {ctx.spec.max_steps} node visits (max_steps)"
    ctx.recorder.event("pipeline_stop", reason=reason)
    return {"stopped": reason}


# ----------------------------------------------------------------------------- edges


def meets(when: str, result: dict[str, Any]) -> bool:
    """Whether a node's result meets an edge condition (see ``NextRule.when``)."""
    ok = result.get("status") in ("finished", "stopped") and (
        result.get("kind") == "step" or result.get("best_score") is not None
    )
    if when == "always":
        return True
    if when == "succeeded":
        return ok
    if when == "failed":
        return not ok
    score, base = result.get("best_score"), result.get("baseline_score")
    beat = (
        ok and score is not None and base is not None
        and (score > base if result.get("higher_is_better") else score < base)
    )  # fmt: skip
    return beat if when == "beat_baseline" else not beat


def _router(spec: PipelineSpec, node: NodeSpec) -> Callable[[PipelineState], str]:
    rules = node.rules(spec.following(node.id))

    def route(state: PipelineState) -> str:
        result = state.get("results", {}).get(node.id, {})
        for rule in rules:
            if meets(rule.when, result):
                if rule.to == END:
                    return END
                return STOP if len(state.get("path", [])) >= spec.max_steps else rule.to
        return END

    return route


def build_graph(spec: PipelineSpec) -> Any:
    """The pipeline as one uncompiled LangGraph ``StateGraph`` (context: PipelineContext)."""
    from langgraph.graph import END as G_END
    from langgraph.graph import START, StateGraph

    g: StateGraph[Any, Any, Any, Any] = StateGraph(PipelineState, context_schema=PipelineContext)
    ids = [n.id for n in spec.nodes]
    for i, node in enumerate(spec.nodes):
        if node.kind == "agent":
            g.add_node(node.id, _agent_node(node))  # type: ignore[call-overload]
        else:
            source = node.input or ("" if node.step == "formulate" else ids[i - 1])
            g.add_node(node.id, _step_node(node, source))  # type: ignore[call-overload]
    g.add_node(STOP, _stop_node)  # type: ignore[call-overload]
    g.add_edge(START, ids[0])
    for node in spec.nodes:
        targets = {t: (G_END if t == END else t) for t in [*ids, END, STOP]}
        g.add_conditional_edges(node.id, _router(spec, node), targets)  # type: ignore[arg-type]
    g.add_edge(STOP, G_END)
    return g


# ----------------------------------------------------------------------------- driver


def _spent_so_far(run_dir: Path) -> dict[str, float]:
    """Usage already in the pipeline's event log (every node's calls are tagged there)."""
    tot = {"calls": 0.0, "tokens": 0.0, "usd": 0.0, "unpriced_calls": 0.0}
    for e in iter_events(run_dir, "llm_call"):
        if e.get("cached"):
            continue
        tot["calls"] += 1
        tot["tokens"] += int(e.get("tokens_in") or 0) + int(e.get("tokens_out") or 0)
        tot["usd"] += float(e.get("cost_usd") or 0.0)
        tot["unpriced_calls"] += 0 if e.get("cost_known", True) else 1
    return tot


def run_pipeline(
    spec: PipelineSpec,
    settings: RunSettings,
    out_dir: str | Path,
    *,
    resume: bool = False,
    llm: Any | None = None,
    source: str | None = None,
    on_node: Callable[[str, dict[str, Any]], None] | None = None,
    node_progress: Callable[[str, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Run (or resume) ``spec`` in ``out_dir``; writes and returns its summary.

    Raises:
        ConfigError: a fresh run over an existing one, or a resume of something else.
    """
    from optiforge.agents.kit.driver import graph_finished, open_checkpointer
    from optiforge.llm import Budget
    from optiforge.memory.scope import scoped_url

    out = Path(out_dir)
    if resume:
        if not (out / "manifest.json").is_file():
            raise ConfigError(f"--resume {out}: not a run directory (no manifest.json)")
        if read_manifest(out).get("kind") != "pipeline":
            raise ConfigError(f"--resume {out}: not a pipeline run (use `optiforge run --resume`)")
        recorder = RunRecorder.open(out)
    else:
        if (out / "manifest.json").exists():
            raise ConfigError(f"{out} already holds a run; pass --resume {out} or another --out")
        recorder = RunRecorder.create(
            out.parent, kind="pipeline", run_dir=out, seed=settings.seed, provider=settings.model,
            config={"pipeline": spec.model_dump(mode="json"), "file": source,
                    "settings": settings.model_dump(mode="json")},
        )  # fmt: skip
    b = spec.budget
    budget = Budget(max_calls=b.max_llm_calls, max_usd=b.max_usd, max_wall_s=b.max_wall_s)
    if resume:
        s = _spent_so_far(out)
        budget.restore(calls=int(s["calls"]), tokens=int(s["tokens"]), usd=s["usd"],
                       unpriced_calls=int(s["unpriced_calls"]))  # fmt: skip
    memory_url = scoped_url(spec.memory, out)
    ctx = PipelineContext(spec=spec, settings=settings, run_dir=out, recorder=recorder,
                          budget=budget, memory_url=memory_url, llm=llm, on_node=on_node,
                          node_progress=node_progress)  # fmt: skip
    ray_owner = None
    if settings.executor == "ray":
        from optiforge.sandboxes import RayExecutor

        # one Ray for every node (each node's executor joins it instead of starting its own)
        ray_owner = RayExecutor(
            settings.ray_address, num_cpus=None if settings.ray_address else settings.workers
        )
    conn, saver = open_checkpointer(out / CHECKPOINTS)
    # the recorder marks the run interrupted or failed on the way out of an exception
    with recorder:
        try:
            graph = build_graph(spec).compile(checkpointer=saver)
            cfg = {"configurable": {"thread_id": THREAD}, "recursion_limit": 4 * spec.max_steps + 8}
            snap = graph.get_state(cfg)
            if snap.values and not resume:
                raise RunRecordError(f"{out} already holds a pipeline; pass --resume {out}")
            if snap.values and graph_finished(snap):
                final = dict(snap.values)
            else:
                start: dict[str, Any] | None = (
                    None if snap.values else {"results": {}, "artifacts": {}, "path": []}
                )
                final = dict(graph.invoke(start, cfg, context=ctx, durability="sync"))
            summary = _summary(spec, out, final, budget, ctx)
            (out / "summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n")
            (out / "summary.md").write_text(render_summary(summary))
            recorder.finish(summary["status"], status_reason=summary["status_reason"])
            return summary
        finally:
            conn.close()
            if ray_owner is not None:
                ray_owner.shutdown()


def _summary(
    spec: PipelineSpec, out: Path, final: dict[str, Any], budget: Any, ctx: PipelineContext
) -> dict[str, Any]:
    results = final.get("results", {})
    agents = [r for r in results.values() if r.get("kind") == "agent"]
    failed = [r["node"] for r in agents if r.get("status") == "failed"]
    stopped = [r["node"] for r in agents if r.get("status") == "stopped"]
    if final.get("stopped"):
        status, reason = "stopped", final["stopped"]
    elif failed:
        status, reason = "failed", f"node(s) {', '.join(failed)} failed"
    elif stopped:
        status, reason = "stopped", f"node(s) {', '.join(stopped)} stopped at a cap"
    else:
        status, reason = "finished", f"{len(final.get('path', []))} node visit(s)"
    snap = budget.snapshot()
    return {
        "pipeline": spec.name,
        "status": status,
        "status_reason": reason,
        "path": final.get("path", []),
        "nodes": results,
        "artifacts": final.get("artifacts", {}),
        "totals": {
            "llm_calls": int(snap["calls"]["used"]),
            "tokens": int(snap["tokens"]["used"]),
            "cost_usd": float(snap["usd"]["used"]),
            "unpriced_calls": int(snap["unpriced_calls"]["used"]),
            "evaluations": sum(int(r.get("n_evaluations") or 0) for r in agents),
        },
        "caps": {k: snap[k]["cap"] for k in ("calls", "usd", "wall_s")},
        "memory": ctx.memory_url,
        "model": ctx.settings.model,
        "wall_s": round(time.perf_counter() - ctx.t0, 3),
    }


def render_summary(summary: dict[str, Any]) -> str:
    """``summary.md``: the ledger of a pipeline run."""
    t = summary["totals"]
    lines = [f"# Pipeline {summary['pipeline']}: {summary['status']}", "",
             f"{summary['status_reason']} · model {summary['model']} · memory {summary['memory']}", "",
             "| node | runs | task | status | score | baseline | evals | LLM calls | tokens | cost |",
             "|---|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for nid in dict.fromkeys(summary["path"]):
        r = summary["nodes"][nid]
        what = r.get("method") or r.get("step")
        score = "-" if r.get("best_score") is None else f"{r['best_score']:.6g}"
        base = (
            "-"
            if r.get("baseline_score") is None
            else f"{r['baseline_name']} {r['baseline_score']:.6g}"
        )
        cost = "-" if r.get("cost_usd") is None else f"${r['cost_usd']:.4f}"
        lines.append(f"| {nid} | {what} | {r.get('task') or r.get('input', '')} | {r['status']} | "
                     f"{score} | {base} | {r.get('n_evaluations', '-') or '-'} | "
                     f"{r.get('llm_calls', '-')} | {r.get('tokens', '-')} | {cost} |")  # fmt: skip
    lines += ["", f"Totals: {t['evaluations']} evaluations, {t['llm_calls']} LLM calls, "
              f"{t['tokens']} tokens, ${t['cost_usd']:.4f}"
              + (f" ({t['unpriced_calls']} calls unpriced)" if t["unpriced_calls"] else ""), ""]  # fmt: skip
    for nid, a in summary["artifacts"].items():
        lines.append(
            f"- artifact of {nid}: {a['kind']}" + (f" at {a['path']}" if a.get("path") else "")
        )
    return "\n".join(lines) + "\n"
