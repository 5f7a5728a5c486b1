"""The eval runner behind ``optiforge run`` and ``optiforge eval``.

``run_task`` runs one agent (or baseline) on one task in its own run directory and writes
``summary.json``. ``run_eval`` runs every task x seed x method of a suite split —
concurrently through the executor, resumable (rows already in ``results.jsonl`` are
skipped, and each row's own run directory resumes its search checkpoint) — then writes
``summary.json``, ``summary.md`` and PNG plots.

Every reported number is re-measured by the harness: the best candidate an agent returns
is scored again with ``Task.evaluate`` in a fresh sandbox; the agent's own claim is kept
as ``claimed_score`` for diagnosis only.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from optiforge import deadline
from optiforge.agents import get_agent
from optiforge.agents.kit import RunContext
from optiforge.agents.spec import AgentOutcome, AgentSpec
from optiforge.config import RunSettings, build_config
from optiforge.errors import ConfigError, OptiforgeError
from optiforge.evals.registry import get_benchmark
from optiforge.evals.stats import mean_ci95
from optiforge.harness.best import write_best
from optiforge.harness.context import build_context, close_context
from optiforge.harness.resume import resumed_settings
from optiforge.harness.status import eval_status, run_status
from optiforge.harness.summary import SUMMARY, RunSummary
from optiforge.runs import RunRecorder, read_jsonl, read_manifest, to_json_line

RESULTS = "results.jsonl"


# ----------------------------------------------------------------------------- budget


def run_budget(task: Any, spec: AgentSpec, settings: RunSettings) -> int:
    """Evaluations of one run: ``--budget``, else the task's own, else the agent's default."""
    return int(settings.budget or task.budget or spec.default_budget)


# ----------------------------------------------------------------------------- one run


def _verify(
    task: Any, outcome: AgentOutcome, ctx: RunContext
) -> tuple[float | None, bool, dict[str, Any]]:
    """Re-score the returned candidate ourselves (never trust the agent's number)."""
    if outcome.best_candidate is None:
        return None, False, {"reason": "no candidate passed"}
    # A task whose scoring runs a seeded optimizer takes the run's seed from here, never
    # from the candidate (bbowp: a formulation could otherwise pick a lucky seed).
    kw = {"seed": ctx.seed} if getattr(task, "seeded_by_harness", False) else {}
    score = task.evaluate(outcome.best_candidate, ctx.sandbox, **kw)
    value = float(score.value) if score.passed and math.isfinite(score.value) else None
    return value, bool(score.passed), {"metrics": score.metrics, "details": score.details}


def run_task(
    agent: str | AgentSpec,
    task: Any,
    settings: RunSettings,
    out_dir: str | Path,
    *,
    method: str | None = None,
    resume: bool = False,
    progress: Callable[[dict[str, Any]], None] | None = None,
    with_baseline: bool = True,
    llm: Any | None = None,
    budget: Any | None = None,
    tee: Any | None = None,
    config_extra: dict[str, Any] | None = None,
) -> RunSummary:
    """Run ``method`` (the agent itself, or one of its baselines) on ``task``.

    Writes ``out_dir/summary.json`` and returns it (``RunSummary``). With ``resume``, an interrupted run in
    ``out_dir`` continues from its checkpoint. ``budget`` and ``tee``: a ledger and a log
    shared with other runs (a pipeline's nodes); the summary counts this run's share.
    ``config_extra``: recorded in the manifest beside the run's own config.
    """
    spec = agent if isinstance(agent, AgentSpec) else get_agent(agent)
    method = method or spec.name
    # Validate before anything is written: a typo must not leave a half-made run dir.
    spec.check_task(task)
    baselines = spec.baselines_for(task)  # the task family's (an agent may read several)
    if method != spec.name and method not in baselines:
        raise ConfigError(
            f"{spec.name} has no method {method!r} (baselines: {', '.join(baselines)})"
        )
    config = build_config(spec.config_model, base=settings.agent, where=f"{spec.name} config")
    out = Path(out_dir)
    if resume and (out / "manifest.json").exists():
        recorder = RunRecorder.open(out)
        cfg = read_manifest(out).get("config", {})
        # the recorded run's settings; a resume may change only its spending caps
        settings = resumed_settings(cfg.get("settings"), settings)
    else:
        if (out / SUMMARY).exists() and not resume:
            raise ConfigError(
                f"{out} already holds a finished run; choose another --out or pass --resume"
            )
        recorder = RunRecorder.create(
            out.parent,
            kind="run",
            run_dir=out,
            config={
                "agent": spec.name,
                "method": method,
                "task": _task_ref(task),
                "settings": settings.model_dump(mode="json"),
                **(config_extra or {}),
            },
            seed=settings.seed,
            provider=settings.model,
        )
    t0 = time.perf_counter()
    warm = tuple(getattr(task, "warm_modules", None) or ())
    ctx = build_context(settings, recorder, spec.name, llm=llm, warm=warm, budget=budget, tee=tee)
    # a shared ledger's owner (a pipeline) restores it on a resume, from its event log
    ctx.ledger_restored = budget is not None
    # a shared ledger (a pipeline) already holds other runs' spend: count this run's share
    snap0 = ctx.budget.snapshot() if ctx.budget is not None else {}

    def spent(key: str) -> float:
        snap = ctx.budget.snapshot() if ctx.budget is not None else {}
        return _snap(snap, key) - _snap(snap0, key)

    if progress is not None:

        def with_spend(info: dict[str, Any]) -> None:
            progress(
                {**info, "llm_calls": int(spent("calls")), "cost_usd": spent("usd"),
                 "unpriced_calls": int(spent("unpriced_calls"))}
            )  # fmt: skip

        ctx.progress = with_spend
    budget = run_budget(task, spec, settings)
    try:
        if method == spec.name:
            run = spec.build(task, config, budget)
            run_ctx = run.context(ctx)  # the handles plus task, config, budget
            final = run.drive(run_ctx, resume=resume)  # run_graph: checkpoint, resume, close
            outcome = run.outcome(final.state, run_ctx)
        else:
            outcome = baselines[method](task, ctx, budget, config)
        _phase(ctx, "re-measuring the best candidate", "in a fresh sandbox")
        with deadline.harness_grace():  # a wall cap leaves the re-measurement its margin
            value, passed, verification = _verify(task, outcome, ctx)
        baseline_name, baseline_score, baseline_trace = None, None, None
        if deadline.expired():  # the wall cap is up: no baseline run after it
            with_baseline = False
        primary = next(iter(baselines), None)
        if with_baseline and method == spec.name and primary:
            baseline_name = primary
            _phase(ctx, f"baseline {baseline_name}", f"a budget of {budget} evaluations")
            b_out = baselines[baseline_name](task, ctx, budget, config)
            _phase(ctx, f"re-measuring baseline {baseline_name}", "in a fresh sandbox")
            baseline_score, _, b_verification = _verify(task, b_out, ctx)
            baseline_trace = _harness_trace(b_verification) or b_out.trace
        status, status_reason = run_status(
            value, outcome.stop_reason, outcome.failure, outcome.llm_proposals
        )
        summary = RunSummary(
            agent=spec.name,
            method=method,
            benchmark=task.suite,
            task=task.name,
            split=task.split,
            seed=settings.seed,
            model=settings.model,
            metric=task.metric,
            higher_is_better=task.higher_is_better,
            best_score=value,
            verified=passed,
            claimed_score=outcome.claimed_value,
            baseline_name=baseline_name,
            baseline_score=baseline_score,
            baseline_trace=baseline_trace,
            n_evaluations=outcome.n_evaluations,
            llm_calls=int(spent("calls")),
            tokens=int(spent("tokens")),
            cost_usd=float(spent("usd")),
            unpriced_calls=int(spent("unpriced_calls")),
            sandbox_s=float(spent("sandbox_s")),
            wall_s=round(time.perf_counter() - t0, 3),
            stop_reason=outcome.stop_reason,
            # the LLM's proposals as the agent counts them ({"made", "valid"}; None: no count)
            llm_proposals=outcome.llm_proposals,
            # what the budget or the agent changed about what was measured (one line each)
            notes=list(outcome.notes),
            status=status,
            status_reason=status_reason,
            # The harness's own best-so-far curve when the task re-measures one (e.g. noiseless
            # values at the run's points); otherwise the agent's observed curve.
            trace=_harness_trace(verification) or outcome.trace,
            observed_trace=outcome.trace,
            extra=outcome.extra,
            verification=verification,
        )
        best_file = write_best(out, summary, outcome.best_candidate)
        summary.best_path = str(best_file.relative_to(out)) if best_file else None
        summary.write(out)
        recorder.finish(status, best_score=value, status_reason=status_reason)
        return summary
    except KeyboardInterrupt:
        recorder.finish("interrupted")
        raise
    except BaseException as err:
        recorder.finish("failed", error=f"{type(err).__name__}: {err}")
        raise
    finally:
        close_context(ctx)


def _phase(ctx: RunContext, name: str, status: str) -> None:
    """Tell the progress display that a new wait starts (the CLI opens a bar for it): the
    re-measurement and the baseline run after the agent's bar is full, for up to minutes."""
    if ctx.progress is not None:
        ctx.progress({"phase": name, "status": status})


def _harness_trace(verification: dict[str, Any]) -> list[float | None] | None:
    trace = (verification.get("details") or {}).get("trace")
    if isinstance(trace, list) and trace and all(isinstance(v, int | float) for v in trace):
        return [float(v) for v in trace]
    return None


def _snap(snap: dict[str, Any], key: str) -> float:
    v = snap.get(key)
    if isinstance(v, dict):
        v = v.get("used", 0)
    return float(v or 0)


def _task_ref(task: Any) -> str:
    return f"{task.suite}/{task.name}@{task.split}"


# ----------------------------------------------------------------------------- eval


def _row_worker(args: tuple[str, str, str, str, str, dict[str, Any], str]) -> dict[str, Any]:
    """One task x seed x method row, in a worker process."""
    agent, method, suite, split, task_name, settings_json, row_dir = args
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    settings = RunSettings.model_validate(settings_json)
    task = next(t for t in get_benchmark(suite).tasks(split) if t.name == task_name)
    resume = (Path(row_dir) / "manifest.json").exists()
    try:
        return run_task(
            agent, task, settings, row_dir, method=method, resume=resume, with_baseline=False
        ).row()
    except OptiforgeError as err:
        return {
            "error": f"{type(err).__name__}: {err}",
            "task": task_name,
            "method": method,
            "seed": settings.seed,
        }


def run_eval(
    agent: str,
    bench: str,
    settings: RunSettings,
    out_dir: str | Path,
    *,
    split: str = "dev",
    seeds: int = 3,
    baselines: list[str] | None = None,
    workers: int = 1,
    tasks: list[str] | None = None,
    progress: Callable[[str, dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """All tasks x seeds x methods of ``bench``/``split``; resumable; returns the summary."""
    spec = get_agent(agent)
    benchmark = get_benchmark(bench)
    task_list = benchmark.tasks(split)
    known = dict(spec.baselines)
    if task_list:
        spec.check_task(task_list[0])
        known = spec.baselines_for(task_list[0])  # the suite's family's baselines
    if tasks:
        task_list = [t for t in task_list if t.name in set(tasks)]
        if not task_list:
            raise ConfigError(f"none of {tasks} is a task of {bench}/{split}")
    notes: list[str] = []
    if baselines is None:
        baselines = list(known)
        offline = settings.model in (None, "", "offline") and settings.replay is None
        if offline and spec.offline_equivalent in baselines:
            baselines.remove(spec.offline_equivalent)
            notes.append(
                f"Offline, {spec.name} runs its non-LLM proposer, which is the "
                f"'{spec.offline_equivalent}' baseline: it is not run a second time."
            )
    methods = [spec.name] + baselines
    for m in methods[1:]:
        if m not in known:
            raise ConfigError(f"{spec.name} has no baseline {m!r} (known: {', '.join(known)})")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    results_path = out / RESULTS
    done = _done_rows(results_path)
    (out / "eval.json").write_text(
        json.dumps(
            {
                "agent": spec.name,
                "benchmark": bench,
                "split": split,
                "seeds": seeds,
                "methods": methods,
                "settings": settings.model_dump(mode="json"),
            },
            indent=2,
            default=str,
        )
    )
    jobs = []
    for task in task_list:
        for seed in range(seeds):
            for m in methods:
                if (task.name, seed, m) in done:
                    continue
                row_settings = settings.model_copy(update={"seed": seed, "workers": 1})
                row_dir = out / "runs" / f"{task.name}--{m}--s{seed}"
                jobs.append(
                    (
                        spec.name,
                        m,
                        bench,
                        split,
                        task.name,
                        row_settings.model_dump(mode="json"),
                        str(row_dir),
                    )
                )
    total = len(task_list) * seeds * len(methods)
    if progress:
        progress("start", {"total": total, "done": total - len(jobs)})
    ray_owner = None
    if settings.executor == "ray" and jobs:
        if workers > 1:
            raise ConfigError(
                "--executor ray spreads each run's evaluations over Ray: run the eval's runs "
                "one at a time (--workers 1), or use --workers N without --executor ray"
            )
        from optiforge.sandboxes import RayExecutor

        # one Ray for the whole eval: every run's executor joins it
        ray_owner = RayExecutor(
            settings.ray_address, num_cpus=None if settings.ray_address else os.cpu_count()
        )
    with results_path.open("a") as fh:

        def record(row: dict[str, Any]) -> None:
            fh.write(to_json_line(row))
            fh.flush()
            if progress:
                progress("row", row)

        if workers <= 1:
            for job in jobs:
                record(_row_worker(job))
        else:
            from optiforge.sandboxes import ProcessExecutor

            with ProcessExecutor(workers) as ex:
                futures = [ex.submit(_row_worker, job) for job in jobs]
                for fut in futures:
                    record(fut.result())
    if ray_owner is not None:
        ray_owner.shutdown()
    rows = [r for r in read_jsonl(results_path) if "error" not in r]
    summary = summarize(rows, agent=spec.name, benchmark=bench, split=split, methods=methods)
    latest = {(r.get("task"), r.get("seed"), r.get("method")): r for r in read_jsonl(results_path)}
    summary["errors"] = [r for r in latest.values() if "error" in r]
    summary["status"], summary["status_reason"] = eval_status(list(latest.values()), spec.name)
    summary["notes"] = notes + list(benchmark.notes(split, settings))
    if spec.summary_notes is not None:
        summary["notes"] += list(spec.summary_notes(rows))
    suite_metrics = benchmark.suite_metrics(rows)
    if suite_metrics is not None:
        summary["suite_metrics"] = suite_metrics
    sections = list(benchmark.report_sections(summary))
    if sections:
        summary["report_sections"] = sections
    (out / SUMMARY).write_text(json.dumps(summary, indent=2, default=str) + "\n")
    from optiforge.harness.report import write_markdown, write_plots

    write_plots(summary, rows, out)
    benchmark.report_plots(summary, rows, out)
    write_markdown(summary, out, summary.get("report_sections"))
    return summary


def _done_rows(path: Path) -> set[tuple[str, int, str]]:
    return {(r["task"], int(r["seed"]), r["method"]) for r in read_jsonl(path) if "error" not in r}


# ----------------------------------------------------------------------------- statistics


def average_ranks(means: dict[str, dict[str, float]], higher: dict[str, bool]) -> dict[str, float]:
    """Average over tasks of each method's rank by mean (1 = best; ties share the mean rank).

    ``means[task][method]``; methods missing a task are ranked last on it.
    """
    methods = sorted({m for per in means.values() for m in per})
    totals = {m: 0.0 for m in methods}
    for task, per in means.items():
        hib = higher[task]
        worst = -math.inf if hib else math.inf
        vals = {
            m: per.get(m, worst)
            if per.get(m) is not None and math.isfinite(per.get(m, math.nan))
            else worst
            for m in methods
        }
        ordered = sorted(methods, key=lambda m: -vals[m] if hib else vals[m])
        i = 0
        while i < len(ordered):
            j = i
            while j + 1 < len(ordered) and vals[ordered[j + 1]] == vals[ordered[i]]:
                j += 1
            rank = (i + j) / 2 + 1
            for k in range(i, j + 1):
                totals[ordered[k]] += rank
            i = j + 1
    n = max(len(means), 1)
    return {m: totals[m] / n for m in methods}


def summarize(
    rows: list[dict[str, Any]], *, agent: str, benchmark: str, split: str, methods: list[str]
) -> dict[str, Any]:
    """Per-task mean and 95% interval over seeds for each method, and average ranks."""
    tasks: dict[str, dict[str, Any]] = {}
    means: dict[str, dict[str, float]] = {}
    higher: dict[str, bool] = {}
    for r in rows:
        t = tasks.setdefault(
            r["task"],
            {"metric": r["metric"], "higher_is_better": r["higher_is_better"], "methods": {}},
        )
        t["methods"].setdefault(r["method"], []).append(r)
    per_task: dict[str, Any] = {}
    for name, t in sorted(tasks.items()):
        higher[name] = t["higher_is_better"]
        entry: dict[str, Any] = {
            "metric": t["metric"],
            "higher_is_better": t["higher_is_better"],
            "methods": {},
        }
        for m, mrows in t["methods"].items():
            vals = [float(r["best_score"]) for r in mrows if r.get("best_score") is not None]
            mean, half = mean_ci95(vals)
            entry["methods"][m] = {
                "mean": mean if vals else None,
                "ci95": half,
                "n_seeds": len(mrows),
                "n_failed": len(mrows) - len(vals),
                "values": vals,
                "llm_calls": sum(r.get("llm_calls", 0) for r in mrows) / len(mrows),
                "cost_usd": sum(r.get("cost_usd", 0.0) for r in mrows) / len(mrows),
                "wall_s": sum(r.get("wall_s", 0.0) for r in mrows) / len(mrows),
            }
            if vals:
                means.setdefault(name, {})[m] = mean
        per_task[name] = entry
    ranks = average_ranks(means, higher) if means else {}
    wins = {}
    for m in methods[1:]:
        w = sum(
            1
            for name, per in means.items()
            if agent in per
            and m in per
            and (per[agent] > per[m] if higher[name] else per[agent] < per[m])
        )
        wins[m] = {
            "agent_better_on": w,
            "of_tasks": sum(1 for per in means.values() if agent in per and m in per),
        }
    return {
        "agent": agent,
        "benchmark": benchmark,
        "split": split,
        "methods": methods,
        "tasks": per_task,
        "average_rank": ranks,
        "agent_vs_baselines": wins,
        "n_rows": len(rows),
    }
