"""``SearchLoop``: what every node of one search graph reads, and where its evaluations
run (submitted to the executor, each result logged the moment it lands)."""

from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Callable
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optiforge.agents.kit.context import RunContext
from optiforge.agents.kit.search.logs import CandidateLogs, History
from optiforge.agents.kit.search.protocols import AnyProposer, SearchProblem
from optiforge.agents.kit.search.records import SearchConfig, SearchState
from optiforge.evals.protocol import Score


@dataclass
class SearchLoop:
    """What every node of one search graph reads (fixed for the graph's life)."""

    problem: SearchProblem
    proposer: AnyProposer
    config: SearchConfig
    id_prefix: str
    evaluator: Callable[[dict[str, Any]], Score]
    logs: dict[Path | None, CandidateLogs] = field(default_factory=dict)
    bound: dict[str, Callable[[dict[str, Any]], Score]] = field(default_factory=dict)
    inflight: dict[tuple[str, str], tuple[Future[Score], float]] = field(default_factory=dict)
    """Submitted evaluations by (run dir, candidate id): live only in this process (a
    resume submits again whatever its logs do not hold)."""
    own_pool: Any = None
    """``overlap`` with no executor in the context: one evaluator thread of the loop's own,
    so the next round's proposals overlap this round's evaluations."""

    def run_logs(self, ctx: RunContext) -> CandidateLogs:
        """The run's candidate logs, read once per graph (not once per round)."""
        if ctx.run_dir not in self.logs:
            self.logs[ctx.run_dir] = CandidateLogs(ctx.run_dir)
        return self.logs[ctx.run_dir]

    def history(self, state: SearchState | dict[str, Any], ctx: RunContext) -> History:
        """The search's history as of ``state`` (see ``CandidateLogs.checked_history``)."""
        return self.run_logs(ctx).checked_history(self.id_prefix, state)

    def overlapping(self, state: SearchState | dict[str, Any]) -> bool:
        """Whether this search pipelines its rounds (see ``SearchState.overlap``)."""
        return bool(state.get("overlap", self.config.overlap))

    def pool(self, ctx: RunContext, overlap: bool) -> Any:
        """Where evaluations run: the run's executor; with none, inline (lock-step
        rounds) or, under ``overlap``, one thread of the loop's own."""
        if ctx.executor is not None or not overlap:
            return ctx.executor
        if self.own_pool is None:
            from optiforge.sandboxes.executors import ThreadExecutor

            self.own_pool = ThreadExecutor(1)
        return self.own_pool

    def submit(self, ctx: RunContext, items: list[dict[str, Any]], rnd: int, overlap: bool) -> None:
        """Start evaluating ``items`` (not logged, not in flight); each result is logged
        the moment it lands, by whichever thread sees it first (``record``)."""
        pool = self.pool(ctx, overlap)
        log = self.run_logs(ctx).evaluated
        fn = self.evaluator_for(ctx)
        for item in items:
            key = (str(ctx.run_dir), item["id"])
            if item["id"] in log.done or key in self.inflight:
                continue
            t0 = time.perf_counter()
            if pool is None:
                fut: Future[Score] = Future()
                try:
                    fut.set_result(fn(item["payload"]))
                except Exception as err:  # noqa: BLE001 - a crashing evaluator fails its candidate
                    fut.set_exception(err)
            else:
                fut = pool.submit(fn, item["payload"])
            self.inflight[key] = (fut, t0)
            fut.add_done_callback(functools.partial(self._landed, ctx, item, rnd, t0))

    def _landed(
        self, ctx: RunContext, item: dict[str, Any], rnd: int, t0: float, fut: Future[Score]
    ) -> None:
        if fut.cancelled():  # the pool was shut down (Ctrl-C, a cap, a crash): not run
            return
        try:
            self.record(ctx, item, rnd, t0, fut)
        except Exception as err:  # noqa: BLE001 - a callback must not die silently
            ctx.tracer.event("evaluation_log_error", id=item["id"], error=repr(err))

    def record(
        self, ctx: RunContext, item: dict[str, Any], rnd: int, t0: float, fut: Future[Score]
    ) -> dict[str, Any]:
        """The finished evaluation's record, logged (once), charged and traced.

        Raises:
            CancelledError: the evaluation was cancelled, never run (nothing is logged: a
                resume runs it).
        """
        log = self.run_logs(ctx).evaluated
        if fut.cancelled():
            raise CancelledError(f"the evaluation of {item['id']} was cancelled")
        try:
            score: Score | BaseException = fut.result()
        except Exception as err:  # noqa: BLE001 - a crashing evaluator fails its candidate
            score = err
        rec = merge_score(item, score, time.perf_counter() - t0)
        if not log.append_new(rec):
            return log.done[item["id"]]
        sandbox_s = float(rec["metrics"].get("sandbox_s", 0.0))
        if ctx.budget is not None and sandbox_s > 0:
            ctx.budget.charge_sandbox(sandbox_s)
        ctx.tracer.event(
            "evaluation", id=item["id"], passed=rec["passed"], value=rec["value"],
            eval_s=rec["eval_s"], round=rnd, error=rec["error"],
        )  # fmt: skip
        return rec

    def wait(self, ctx: RunContext, items: list[dict[str, Any]], rnd: int, overlap: bool) -> None:
        """Submit what is not yet running and wait for all of ``items`` to be logged."""
        self.submit(ctx, items, rnd, overlap)
        log = self.run_logs(ctx).evaluated
        from concurrent.futures import as_completed

        futs = {
            self.inflight[(str(ctx.run_dir), it["id"])]: it
            for it in items
            if (str(ctx.run_dir), it["id"]) in self.inflight
        }
        by_future = {fut: (item, t0) for (fut, t0), item in futs.items()}
        for fut in as_completed(by_future):
            item, t0 = by_future[fut]
            if item["id"] not in log.done:  # landed before its callback logged it
                self.record(ctx, item, rnd, t0, fut)
            self.inflight.pop((str(ctx.run_dir), item["id"]), None)

    def close(self) -> None:
        """Stop the loop's own evaluator thread (if it started one)."""
        if self.own_pool is not None:
            self.own_pool.shutdown()
            self.own_pool = None

    def evaluator_for(self, ctx: RunContext) -> Callable[[dict[str, Any]], Score]:
        """The problem's evaluator bound to the run (``for_run(ctx)``, when it has one:
        e.g. tracing its sandbox runs to the run's events file)."""
        key = str(ctx.run_dir)
        if key not in self.bound:
            bind = getattr(self.evaluator, "for_run", None)
            self.bound[key] = bind(ctx) if callable(bind) else self.evaluator
        return self.bound[key]


def merge_score(b: dict[str, Any], score: Score | BaseException, share_s: float) -> dict[str, Any]:
    rec = dict(b)
    if isinstance(score, BaseException):
        rec.update(
            passed=False, value=None, error=f"evaluator crashed: {type(score).__name__}: {score}"
        )
        rec["eval_s"] = share_s
        return rec
    value = float(score.value) if score.value is not None else None
    finite = value is not None and math.isfinite(value)
    rec.update(
        passed=bool(score.passed and finite),
        value=value if finite else None,
        metrics={k: float(v) for k, v in score.metrics.items()},
        details=json.loads(json.dumps(score.details, default=str)),
        error=None
        if (score.passed and finite)
        else str(score.details.get("reason", "did not pass")),
        eval_s=float(score.metrics.get("eval_s", share_s)),
    )
    return rec
