"""Pipeline steps after a formulation: ``optimize`` and ``report``.

``optimize`` runs a formulated search space (the formulation of its input node, e.g. a
``formulator`` node on a ``bbowp`` word problem) with any optimizer of the portfolio: the
formulation's own, or the one the node's ``set: {method: ...}`` names — ``kernel_search``
is Kernel Discovery's compositional kernel search inside GP-BO, ``gp`` with
``kernel: EXPR`` a fixed kernel expression (e.g. a kernel a Kernel Discovery node found:
``kernel: ${discover.artifact.extra.final_kernel}``). The run is the task's own harness
code in the sandbox (``BBOWPTask.run``); the step writes ``optimization.json`` (every
configuration and value) and hands on an ``optimization`` artifact (best value and
configuration).

``report`` writes ``report.md`` and ``convergence.png`` over every formulation and
optimization node of the pipeline so far: the formulation (variables, ranges, scales,
optimizer), the best value and configuration, and the best-so-far curves on one plot.
For a ``bbowp`` instance it adds the hidden long-run reference best (the benchmark's
ground truth: shown to the user after the fact, never to an agent).
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from optiforge.errors import ConfigError
from optiforge.harness.pipelines.step_input import StepInput
from optiforge.harness.summary import RunSummary

OPTIONS: dict[str, set[str]] = {
    "optimize": {"method", "kernel", "budget"},
    "report": set(),
    "tune": {"iterations", "batch", "runs", "val_tasks", "val_runs", "tasks", "proposer"},
}
"""The options (``set``) each of these steps takes."""


def _formulation(inp: StepInput) -> tuple[dict[str, Any] | None, str | None]:
    """The input node's formulation and task (a formulator node's outcome)."""
    res = inp.results.get(inp.node) or {}
    art = res.get("artifact") or {}
    form = (art.get("extra") or {}).get("formulation") or (
        art if art.get("kind") == "formulation" and art.get("space") else None
    )
    return form, res.get("task") or art.get("task")


def optimize(inp: StepInput) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``optimize`` step (see the module doc)."""
    from optiforge.evals.registry import resolve_task
    from optiforge.sandboxes import get_sandbox
    from optiforge.solvers.blackbox import PORTFOLIO

    form, task_ref = _formulation(inp)
    task_ref = inp.task or task_ref
    if not form:
        raise ConfigError(
            f"optimize: node {inp.node!r} handed on no formulation (a formulator node?)"
        )
    if not task_ref:
        raise ConfigError("optimize: no task (give the node a task, or read a formulator node)")
    task = resolve_task(str(task_ref))
    if not hasattr(task, "run"):
        raise ConfigError(f"optimize: {task_ref} is not a formulated black-box problem (bbowp)")
    opts = dict(inp.options)
    form = dict(form)
    if opts.get("method") is not None:
        if str(opts["method"]) not in PORTFOLIO:
            raise ConfigError(
                f"optimize: method {opts['method']!r} is not one of {', '.join(PORTFOLIO)}"
            )
        form["method"] = str(opts["method"])
        form.pop("pilot", None)  # another optimizer: the final space, the whole budget
        form.pop("kernel", None)
    if opts.get("kernel") is not None:
        form["kernel"] = str(opts["kernel"])
    elif "kernel" in opts:
        # a reference that resolved to nothing (e.g. Kernel Discovery ended on LLM code,
        # which is no expression): said in the log, the method's own start kernel used
        inp.tracer.event("kernel_handoff_empty", method=form.get("method"))
    budget = int(opts.get("budget") or task.budget)
    if budget < 1:
        raise ConfigError(f"optimize: budget must be >= 1, got {budget}")
    run_task = dataclasses.replace(task, budget=budget)
    score = run_task.run(form, get_sandbox(inp.sandbox), observed=True)
    evals = list(score.details.get("evaluations") or [])
    finite = [e for e in evals if e.get("value") is not None]
    best = min(finite, key=lambda e: e["value"]) if finite else None
    record = {
        "task": f"{task.suite}/{task.name}", "input": inp.node, "method": form.get("method"),
        "kernel": form.get("kernel"), "budget": budget, "seed": run_task.seed,
        "passed": score.passed, "reason": score.details.get("reason"),
        "best_value": best["value"] if best else None, "best_config": best["config"] if best else None,
        "trace": score.details.get("trace"), "evaluations": evals, "formulation": form,
    }  # fmt: skip
    inp.out_dir.mkdir(parents=True, exist_ok=True)
    (inp.out_dir / "optimization.json").write_text(json.dumps(record, indent=1, default=str) + "\n")
    inp.tracer.event("optimization", task=record["task"], method=record["method"],
                     budget=budget, best=record["best_value"])  # fmt: skip
    if not score.passed or best is None:
        return ({"status": "failed", "status_reason": f"{form.get('method')}: "
                 f"{score.details.get('reason', 'no feasible evaluation')}"[:300]}, {})  # fmt: skip
    res = {"status": "finished", "best_score": best["value"],
           "status_reason": f"{form.get('method')} reached {best['value']:.6g} in {len(evals)} evaluations"}  # fmt: skip
    art = {"kind": "optimization", "task": record["task"], "score": best["value"],
           "metric": task.metric, "higher_is_better": False,
           "path": str((inp.out_dir / "optimization.json").relative_to(inp.pipeline_dir))
           if inp.pipeline_dir else None,
           "extra": {"method": form.get("method"), "kernel": form.get("kernel"), "budget": budget,
                     "best_config": best["config"]}}  # fmt: skip
    return res, art


def _curves(inp: StepInput) -> list[dict[str, Any]]:
    """Every formulation / optimization node so far: its label, formulation and trace."""
    out = []
    for nid, res in inp.results.items():
        art = res.get("artifact") or {}
        d = inp.pipeline_dir / res["dir"] if inp.pipeline_dir and res.get("dir") else None
        if art.get("kind") == "optimization" and d and (d / "optimization.json").is_file():
            rec = json.loads((d / "optimization.json").read_text())
            out.append({"node": nid, "task": rec["task"], "method": rec["method"],
                        "kernel": rec.get("kernel"), "best": rec["best_value"],
                        "config": rec["best_config"], "trace": rec["trace"] or [],
                        "formulation": rec["formulation"]})  # fmt: skip
        elif art.get("kind") == "formulation" and (summ := RunSummary.load_if_any(d)):
            form = summ.extra.get("formulation") or {}
            out.append({"node": nid, "task": res.get("task"), "method": form.get("method"),
                        "kernel": form.get("kernel"), "best": summ.best_score,
                        "config": None, "trace": summ.trace, "formulation": form,
                        "by": summ.extra.get("by")})  # fmt: skip
    return out


def _space_lines(form: dict[str, Any]) -> list[str]:
    lines = ["| variable | type | range / choices | scale |", "|---|---|---|---|"]
    for v in (form.get("space") or {}).get("variables", []):
        if v.get("kind") == "categorical":
            rng = ", ".join(str(c) for c in v.get("choices", []))
        else:
            rng = f"{v.get('low')} .. {v.get('high')}"
        cond = f" (when {v['active_if']})" if v.get("active_if") else ""
        lines.append(
            f"| {v.get('name')}{cond} | {v.get('kind')} | {rng} | {'log' if v.get('log') else 'linear'} |"
        )
    return lines


def report(inp: StepInput) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ``report`` step (see the module doc)."""
    curves = _curves(inp)
    if not curves:
        raise ConfigError("report: no formulation or optimization node has run before it")
    lines = ["# Formulation and optimization report", ""]
    refs: dict[str, float] = {}
    for c in curves:
        task = str(c["task"] or "").split("@")[0]
        if task.startswith("bbowp/"):
            from optiforge.evals.suites.bbowp import reference

            ref = reference().get(task.split("/", 1)[1])
            if ref:
                refs[task] = float(ref["best_value"])
    lines += [
        "| node | task | optimizer | best value | vs the long reference run |",
        "|---|---|---|---|---|",
    ]
    for c in curves:
        task = str(c["task"] or "").split("@")[0]
        ref = refs.get(task)
        best = c["best"]
        gap = (
            f"{best - ref:+.4g} (reference {ref:.6g})"
            if ref is not None and best is not None
            else "-"
        )
        opt = str(c["method"]) + (f" [{c['kernel']}]" if c.get("kernel") else "")
        lines.append(
            f"| {c['node']} | {task} | {opt} | {'-' if best is None else f'{best:.6g}'} | {gap} |"
        )
    for c in curves:
        form = c["formulation"] or {}
        by = f", written by {c['by']}" if c.get("by") else ""
        lines += ["", f"## {c['node']}: {c['method']}{by}", ""]
        if form.get("pilot"):
            p = form["pilot"]
            lines.append(
                f"Revised after a pilot of {p.get('evals')} evaluations with {p.get('method')}.\n"
            )
        lines += _space_lines(form)
        if c.get("config"):
            lines += ["", "Best configuration: `" + json.dumps(c["config"], default=str) + "`"]
    inp.out_dir.mkdir(parents=True, exist_ok=True)
    plot = _plot(curves, refs, inp.out_dir / "convergence.png")
    if plot:
        lines += ["", "![best so far](convergence.png)"]
    (inp.out_dir / "report.md").write_text("\n".join(lines) + "\n")
    best = [c for c in curves if c["best"] is not None]
    top = min(best, key=lambda c: c["best"]) if best else None
    why = (
        f"best {top['best']:.6g} by {top['node']} ({top['method']})"
        if top
        else "no node reached a value"
    )
    return ({"status": "finished", "status_reason": why},
            {"kind": "report", "path": str((inp.out_dir / "report.md").relative_to(inp.pipeline_dir))
             if inp.pipeline_dir else None, "extra": {"nodes": [c["node"] for c in curves]}})  # fmt: skip


def _plot(curves: list[dict[str, Any]], refs: dict[str, float], path: Any) -> bool:
    """Best-so-far against evaluations, one line per node; the reference best dashed."""
    traces = [c for c in curves if any(v is not None and math.isfinite(v) for v in c["trace"])]
    if not traces:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for c in traces:
        ys = [math.nan if v is None else v for v in c["trace"]]
        ax.plot(range(1, len(ys) + 1), ys, label=f"{c['node']} ({c['method']})")
    for task, ref in refs.items():
        ax.axhline(ref, ls="--", c="grey", lw=1, label=f"reference best ({task.split('/')[-1]})")
    ax.set_xlabel("evaluations")
    ax.set_ylabel("best value so far (lower is better)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True
