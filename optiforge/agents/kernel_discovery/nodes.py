"""Kernel Discovery's graph nodes: ``design -> (refresh ->) bo_round -> ... -> finish``.

- ``design``: the initial Sobol design, evaluated (``BOSession.begin``);
- ``refresh``: at round 0 and every ``refresh_every`` rounds, the kernel search on the BO
  data so far (a search graph of its own, thread ``refresh<round>``; ``selection.py``);
- ``bo_round``: one BO round (fit -> qLogEI -> evaluate) with the state's kernel;
- ``finish``: the final out-of-sample comparison and the memory lesson;
- ``route``: which of them runs next; ``outcome``: the run's result from its final state.

Each reads the run's task, config and budget from ``runtime.context`` (``Ctx``); the live
``BOSession`` is a per-run cache of the state's ``bo`` rows (``session``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import torch
from langgraph.runtime import Runtime

from optiforge.agents.kernel_discovery.config import KernelDiscoveryConfig
from optiforge.agents.kernel_discovery.problem import BO_EVALUATIONS, DiscoveryState, spec_of
from optiforge.agents.kernel_discovery.proposers import CompositionalProposer, LLMKernelProposer
from optiforge.agents.kernel_discovery.report import discovery_outcome, remember_lesson
from optiforge.agents.kernel_discovery.selection import final_comparison, refresh_kernels
from optiforge.agents.kit import HistoryProposer, Proposer, RunContext
from optiforge.agents.kit.context import AgentContext
from optiforge.agents.kit.driver import FORCE_RESTART_HINT
from optiforge.agents.spec import AgentOutcome
from optiforge.errors import ConfigError, RunRecordError, SolverError
from optiforge.evals.suites.hdbo.protocol import HDBOTask
from optiforge.solvers.gp import grammar

if TYPE_CHECKING:  # BoTorch loads with the first BO round, not with the agent's spec
    from optiforge.solvers.bo import AcqConfig
    from optiforge.solvers.bo.session import BOSession

Ctx = AgentContext[HDBOTask, KernelDiscoveryConfig]
"""The graph's runtime context: the run's handles, its hdbo task and config."""

_FALLBACKS = (SolverError, RuntimeError, ValueError)
"""What the BO loop turns into a random-point round instead of a crash (a refresh too)."""


def total_evaluations(ctx: Ctx) -> int:
    """The run's evaluation budget (the initial design included): ``build``'s, else the task's."""
    total = ctx.eval_budget or ctx.task.budget
    if total is None:
        raise ConfigError(f"{ctx.task.suite}/{ctx.task.name} has no evaluation budget")
    return total


def acq_config(config: KernelDiscoveryConfig) -> AcqConfig:
    """The acquisition settings of every BO round (and of the BO baselines)."""
    from optiforge.solvers.bo import AcqConfig

    return AcqConfig(num_restarts=config.acq_restarts, raw_samples=config.acq_raw_samples,
                     acquisition=config.acquisition)  # fmt: skip


def seed_kernels(config: KernelDiscoveryConfig) -> list[dict[str, Any]]:
    """The payloads every refresh starts from: RBF-ARD and the configured seed kernels."""
    return [
        {"expression": grammar.canonical(e)}
        for e in dict.fromkeys(["RBF_ARD", *config.seed_kernels])
    ]


def proposer_of(state: DiscoveryState, ctx: Ctx) -> Proposer | HistoryProposer:
    """The kernel proposer of this run: the LLM's when the run has an LLM (and is not the
    ``compositional`` baseline, ``state["offline"]``), else the compositional search."""
    if ctx.llm is not None and not state.get("offline"):
        return LLMKernelProposer(ctx.config)
    return CompositionalProposer(ctx.config)


def _session_kw(ctx: Ctx) -> dict[str, Any]:
    # A run directory makes the session resumable: per-round seeds, the BO log.
    log = ctx.run_dir / BO_EVALUATIONS if ctx.run_dir is not None else None
    return {"budget": total_evaluations(ctx), "n_init": ctx.task.n_init, "seed": ctx.seed,
            "acq_config": acq_config(ctx.config), "name": "kernel-discovery",
            "resumable": log is not None, "log_path": log}  # fmt: skip


@dataclass
class _Live:
    """The run's live BO session (``ctx.memo``): a cache of the state's rows."""

    session: BOSession | None = None


def session(state: DiscoveryState, ctx: Ctx) -> BOSession:
    """The live ``BOSession`` the state's ``bo`` rows describe: the run's cached one when it
    is that one, else (a resume) rebuilt from the rows (``BOSession.restore``, which checks
    them against the BO log and never calls the objective)."""
    from optiforge.solvers.bo.session import BOSession

    live = ctx.memo("bo_session", _Live)
    rows = list(state.get("bo", []))
    s = live.session
    if s is not None and len(s.rows) == len(rows) and s.rows[-1:] == rows[-1:]:
        return s
    try:
        s = BOSession.restore(ctx.task.problem(ctx.seed), rows, **_session_kw(ctx))
    except SolverError as err:
        raise RunRecordError(f"{err}; {FORCE_RESTART_HINT}") from None
    live.session = s
    return s


def design(state: DiscoveryState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """The initial design, evaluated; the refresh record starts empty (RBF-ARD incumbent)."""
    from optiforge.solvers.bo.session import BOSession

    ctx = runtime.context
    s = BOSession(ctx.task.problem(ctx.seed), **_session_kw(ctx))
    ctx.memo("bo_session", _Live).session = s
    row = s.begin()
    return {"bo": [row], "kernel": None, "refresh_failed": None,
            "incumbent": {"expression": "RBF_ARD"}, "carried": [], "refreshes": []}  # fmt: skip


def refresh(state: DiscoveryState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """A kernel search on the BO data so far; a failed one makes the round a fallback."""
    from optiforge.solvers.bo.loop import standardize

    ctx = runtime.context
    s = session(state, ctx)
    rnd = s.round
    try:
        return {**refresh_kernels(ctx.task, ctx, ctx.config, proposer_of(state, ctx),
                                  seed_kernels(ctx.config), state, s.Xu, standardize(s.y), rnd),
                "refresh_failed": None}  # fmt: skip
    except _FALLBACKS:
        return {"refresh_failed": rnd}  # the round falls back to a random point


def bo_round(state: DiscoveryState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """One BO round (fit -> qLogEI -> evaluate) with the state's kernel."""
    from optiforge.solvers.bo.loop import kernel_model

    ctx = runtime.context
    s = session(state, ctx)
    payload = state.get("kernel")
    failed = state.get("refresh_failed") == s.round or payload is None
    spec = None if failed else spec_of(payload or {}, ctx, acq_config(ctx.config))
    used: list[str] = []

    def model(Xu: torch.Tensor, target: torch.Tensor, rnd: int) -> Any:
        if spec is None:
            raise SolverError(f"the kernel refresh of round {rnd} failed")
        used.append(spec.expression)
        return kernel_model(spec, Xu, target, rnd, seed=ctx.seed, gp_restarts=1,  # type: ignore[arg-type]
                            resumable=s.resumable)  # fmt: skip

    return {"bo": [*state.get("bo", []), s.step(model, used)]}


def finish(state: DiscoveryState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """The final comparison with RBF-ARD and the run's memory lesson."""
    ctx = runtime.context
    trace = session(state, ctx).trace()
    if ctx.progress is not None:
        ctx.progress({"evaluations": int(trace.y.numel()), "best": trace.best_value})
    final = final_comparison(ctx.task, trace, state.get("carried", []), ctx, ctx.config,
                             state.get("refreshes", []))  # fmt: skip
    remember_lesson(ctx.task, ctx, state.get("refreshes", []), final)
    return {"final": final}


def route(state: DiscoveryState, runtime: Runtime[Ctx]) -> str:
    """``finish`` once the budget is spent, ``refresh`` when one is due, else ``bo_round``."""
    rows = state.get("bo", [])
    if sum(len(r["y"]) for r in rows) >= total_evaluations(runtime.context):
        return "finish"
    rnd = len(rows) - 1
    due = state.get("kernel") is None or rnd % runtime.context.config.refresh_every == 0
    return "refresh" if due else "bo_round"


def outcome(state: dict[str, Any], ctx: RunContext) -> AgentOutcome:
    """The run's outcome: the BO trace, the refreshes' record and the final comparison."""
    actx = cast(Ctx, ctx)  # AgentRun.outcome is called with the graph's own context
    final = cast(DiscoveryState, state)
    trace = session(final, actx).trace()
    name = proposer_of(final, actx).name
    return discovery_outcome(trace, name, final.get("refreshes", []), final.get("final", {}))
