"""Kernel Discovery: LLM-evolved GP kernels for high-dimensional Bayesian optimization.

The agent runs BO on an ``hdbo`` task; every ``refresh_every`` BO rounds it refreshes the
GP kernel by a short evolutionary search on the shared loop (population, selection by
leave-one-out CRPS on the BO data seen so far, mutation and crossover), and the
acquisition (qLogEI) uses the best kernel found.

Proposers (``proposers.py``):

- ``LLMKernelProposer`` works in two stages, as in the paper: one call proposes a novel
  *mathematical form* (shown the parents' forms and scores; mutation or crossover), a
  second call turns that form into code (``def kernel(x1, x2, params)`` plus
  ``HYPERPARAMETERS``), which is validated in the sandbox (symmetric, PSD, finite values
  and gradients, hyperparameter bound) and re-asked with the reason when invalid.
- ``CompositionalProposer`` (offline) is the classic compositional kernel search over base
  kernels with ``+`` and ``*`` (see ``grammar``).

Functional duplicates (kernels whose fitted, normalised Gram matrices agree on the data)
are counted per refresh and kept out of the carried population.

Selection margin: a refresh keeps the incumbent kernel (the previous refresh's choice,
RBF-ARD at round 0) unless the search's best beats the incumbent's LOO-CRPS by more than
``selection_margin * |incumbent|`` (selection on 10-25 points overfits).

Trust boundary: LLM-written kernel code never runs in this process. The parent handles it
as text, and as numbers computed by trusted code here or received from a harness program
the candidate runs in, inside the sandbox:

- validation for the re-ask loop: ``optiforge.solvers.gp.validate_cli`` in the sandbox
  (shipped with ``package_files``; its verdict only decides whether to re-ask);
- scoring: the hdbo harness (``evals.suites.hdbo.scoring``) fits the kernel in one sandbox
  run, has its Gram matrix computed in another (which never sees ``y``) and computes the
  LOO-CRPS itself from that matrix; a printed score is never read;
- BO with a selected LLM kernel: each round's GP fit and qLogEI optimisation run in one
  sandbox run (``harness/bo_round.py``, ``SandboxedKernel``); the loop gets back only the
  proposed points, checks them and evaluates the objective here.

Library kernels (the compositional grammar) are parsed by ``grammar`` (an AST whitelist of
base-kernel names, ``+`` and ``*``, no exec) and built here from library code. The prompt
shows the LLM the task's opaque ``agent_name`` and leak-free ``description`` only, never
the CLI id (``levy4_in_25``), the function, its effective dimensions or the embedding.

Resume: with a run directory, the BO loop appends each evaluation to
``bo_evaluations.jsonl`` and each refresh's search checkpoints under
``thread_id=refresh<round>``; ``--resume`` reloads the evaluations (the objective is not
called again for them), replays finished refreshes from their checkpoints and continues.
"""

from __future__ import annotations

import json
from typing import Any, TypedDict

import numpy as np
import torch
from pydantic import BaseModel

from optiforge.agents.kernel_discovery import grammar
from optiforge.agents.kernel_discovery.config import KernelDiscoveryConfig
from optiforge.agents.kernel_discovery.problem import (
    _SHIPPED,
    KernelEvaluator,
    KernelSearchProblem,
    _sandbox_env,
    _sandbox_of,
    describe,
    functional_clusters,
)
from optiforge.agents.kernel_discovery.proposers import CompositionalProposer, LLMKernelProposer
from optiforge.agents.kernel_discovery.report import _remember_lesson, discovery_outcome
from optiforge.agents.kit import (
    AgentRun,
    Evaluated,
    LLMOrOffline,
    RunContext,
    SearchConfig,
    run_search,
)
from optiforge.agents.kit.search import pick_proposer
from optiforge.agents.spec import AgentOutcome
from optiforge.errors import ConfigError

BO_EVALUATIONS = "bo_evaluations.jsonl"
"""The BO loop's evaluation log in the run directory (what ``--resume`` reloads)."""


def build(task: Any, config: BaseModel, budget: int | None) -> AgentRun:
    """BO on an hdbo task with the kernel refreshed by evolutionary search every k rounds."""
    assert isinstance(config, KernelDiscoveryConfig)
    proposer = LLMOrOffline(llm=LLMKernelProposer(config), offline=CompositionalProposer(config))
    return discovery_run(task, config, budget, proposer)


def discovery_run(
    task: Any, config: KernelDiscoveryConfig, budget: int | None, proposer: Any
) -> AgentRun:
    from langgraph.graph import END, START, StateGraph
    from langgraph.runtime import Runtime

    def discover(state: dict[str, Any], runtime: Runtime[RunContext]) -> dict[str, Any]:
        ctx = runtime.context
        resume = ctx.run_dir is not None and (ctx.run_dir / BO_EVALUATIONS).exists()
        out = _discover(task, ctx, config, budget, resume, pick_proposer(proposer, ctx))
        return {"outcome": out.model_dump(mode="json")}

    graph = StateGraph(_OneNode, context_schema=RunContext)
    graph.add_node("discover", discover)
    graph.add_edge(START, "discover")
    graph.add_edge("discover", END)
    return AgentRun(
        graph=graph, outcome=lambda state, ctx: AgentOutcome.model_validate(state["outcome"]),
        start={"outcome": None}, thread_id="kernel_discovery", what="a kernel-discovery run",
    )  # fmt: skip


class _OneNode(TypedDict, total=False):
    outcome: dict[str, Any] | None


def _discover(
    task: Any,
    ctx: RunContext,
    config: KernelDiscoveryConfig,
    budget: int | None,
    resume: bool,
    proposer: Any,
) -> AgentOutcome:
    from optiforge.solvers.bo import AcqConfig, BOLoop

    seeds = [
        {"expression": grammar.canonical(e)}
        for e in dict.fromkeys(["RBF_ARD", *config.seed_kernels])
    ]
    carried: list[dict[str, Any]] = []
    incumbent: dict[str, Any] = {"expression": "RBF_ARD"}
    refreshes: list[dict[str, Any]] = []
    events = str(ctx.run_dir / "events.jsonl") if ctx.run_dir else None
    progress = ctx.progress
    total = budget or task.budget
    resume_path = ctx.run_dir / BO_EVALUATIONS if ctx.run_dir else None
    if resume_path is not None and resume_path.exists() and not resume:
        raise ConfigError(
            f"{ctx.run_dir} already holds BO evaluations; pass resume=True (--resume)"
        )

    def provider(Xu: torch.Tensor, y: torch.Tensor, rnd: int) -> Any:
        nonlocal carried, incumbent
        # The incumbent is always re-scored on the new data: the margin compares like with like.
        start = list(dict.fromkeys(map(_key, [*seeds, incumbent, *carried])))
        start_payloads = [json.loads(k) for k in start]
        problem = KernelSearchProblem(
            task,
            Xu.detach().clone(),
            y.detach().clone(),
            start_payloads,
            config,
            seed=ctx.seed,
            events_path=events,
        )
        search = SearchConfig(
            max_evaluations=max(config.kernel_evals_per_refresh, len(start)),
            proposals_per_round=config.proposals_per_round,
            population_size=config.population_size,
        )
        res = run_search(
            problem,
            proposer,
            ctx,
            search,
            thread_id=f"refresh{rnd}",
            resume=resume or ctx.run_dir is not None,
        )
        clusters = functional_clusters(res.history, config.dedup_tol)
        distinct = [c[0] for c in clusters]
        ref = next(
            (e for e in res.history if e.payload.get("expression") == "RBF_ARD" and e.passed), None
        )
        inc = next(
            (e for e in res.history if e.payload == incumbent and e.passed and e.value is not None),
            None,
        )
        best = res.best
        chosen = select_kernel(best, inc, config.selection_margin)
        # Payloads, not identity: res.best and the history entries are separate objects.
        kept = chosen is not None and best is not None and chosen.payload != best.payload
        if chosen is not None:
            incumbent = chosen.payload
        # The chosen kernel heads the carried set (the final comparison refits carried[0]).
        rest = [ev.payload for ev in distinct if chosen is None or ev.payload != chosen.payload]
        head = [chosen.payload] if chosen is not None else []
        carried = (head + rest)[: max(config.carry_over, len(head))]
        info = {
            "round": rnd,
            "n_data": int(Xu.shape[0]),
            "evaluated": res.n_evaluations,
            "invalid": res.n_invalid,
            "syntactic_duplicates": res.n_duplicates,
            "functional_duplicates": sum(len(c) - 1 for c in clusters),
            "best": describe(chosen) if chosen else None,
            "best_loo_crps": chosen.value if chosen else None,
            "search_best": describe(best) if best else None,
            "search_best_loo_crps": best.value if best else None,
            "kept_incumbent": kept,
            "rbf_ard_loo_crps": ref.value if ref else None,
            "stop": res.stop_reason,
        }
        refreshes.append(info)
        ctx.tracer.event("kernel_refresh", **info)
        if progress is not None:
            progress({"evaluations": int(Xu.shape[0]), "best": None})
        if chosen is None:
            return grammar.build_kernel("RBF_ARD")
        return _spec_of(chosen.payload, ctx, acq)

    # BOLoop directly rather than task.run_bo: same settings, plus the resumable evaluation log.
    acq = AcqConfig(num_restarts=config.acq_restarts, raw_samples=config.acq_raw_samples)
    ctx.progress = None  # the kernel searches' rounds are not BO progress
    try:
        trace = BOLoop(
            task.problem(ctx.seed),
            budget=total,
            n_init=task.n_init,
            kernel_provider=provider,
            refresh_every=config.refresh_every,
            seed=ctx.seed,
            acq_config=acq,
            name="kernel-discovery",
            resume_path=resume_path,
        ).run()
    finally:
        # Restored however the loop ends: a caller that goes on with this context after
        # an error or interrupt still has its progress callback.
        ctx.progress = progress
    if progress is not None:
        progress({"evaluations": int(trace.y.numel()), "best": trace.best_value})
    final = _final_comparison(task, trace, carried, ctx, config)
    _remember_lesson(task, ctx, refreshes, final)
    return discovery_outcome(trace, proposer.name, refreshes, final)


def _key(payload: dict[str, Any]) -> str:
    return json.dumps(payload, sort_keys=True)


def select_kernel(
    best: Evaluated | None, incumbent: Evaluated | None, margin: float
) -> Evaluated | None:
    """The search's best unless it beats the incumbent's LOO-CRPS by no more than ``margin * |inc|``."""
    if incumbent is None or best is None or best.value is None or incumbent.value is None:
        return best or incumbent
    if best.value < incumbent.value - margin * abs(incumbent.value):
        return best
    return incumbent


def _spec_of(payload: dict[str, Any], ctx: RunContext, acq: Any) -> Any:
    """The BO loop's kernel: library kernels built here, LLM code as a ``SandboxedKernel``."""
    if "expression" in payload:
        return grammar.build_kernel(payload["expression"])
    return SandboxedKernel(payload["source"], describe(payload)[:160], _sandbox_of(ctx), acq)


class SandboxedKernel:
    """An LLM-written kernel as the BO loop sees it: source text and a sandboxed round.

    ``solvers.bo.loop`` calls ``propose_round`` instead of fitting the kernel itself: the
    GP fit and the qLogEI optimisation run in one sandbox run per round
    (``harness/bo_round.py``), with the same seeds as the in-process loop; only the
    proposed points come back (``candidate.npy``, loaded without pickle), and the loop
    checks them before it evaluates the objective here. Any failure is a ``SolverError``:
    the loop falls back to a random point and counts it.
    """

    def __init__(
        self, source: str, expression: str, sandbox: Any, acq: Any, *, timeout_s: float = 300.0
    ) -> None:
        self.source, self.expression = source, expression
        self.sandbox, self.acq, self.timeout_s = sandbox, acq, timeout_s

    def propose_round(
        self,
        Xu: torch.Tensor,
        target: torch.Tensor,
        rnd: int,
        *,
        fit_seed: int,
        round_seed: int,
        gp_restarts: int,
    ) -> Any:
        """`1 x D` proposed points for round ``rnd`` (``ProposedPoints``), computed in the sandbox."""
        import dataclasses
        import io
        import sys
        from pathlib import Path

        from optiforge.errors import SolverError
        from optiforge.sandboxes.payload import package_files
        from optiforge.solvers.bo.loop import ProposedPoints

        req = {
            "source": self.source,
            "X": Xu.tolist(),
            "target": target.tolist(),
            "fit_seed": fit_seed,
            "round_seed": round_seed,
            "gp_restarts": gp_restarts,
            "q": 1,
            "acq": dataclasses.asdict(self.acq),
        }
        program = (Path(__file__).parent / "harness" / "bo_round.py").read_text()
        res = self.sandbox.run(
            f"{sys.executable} bo_round.py",
            files={
                **package_files(*_SHIPPED),
                "bo_round.py": program,
                "request.json": json.dumps(req),
            },
            timeout_s=self.timeout_s,
            env=_sandbox_env(),
            collect=["candidate.npy"],
        )
        raw = res.files.get("candidate.npy")
        if res.timed_out or raw is None:
            tail = (res.stderr or "").strip().splitlines()[-1:] or [f"exit {res.returncode}"]
            why = "timed out" if res.timed_out else tail[0][:300]
            raise SolverError(f"sandboxed BO round with kernel {self.expression!r} failed: {why}")
        data = raw.encode("utf-8") if isinstance(raw, str) else raw
        try:
            arr = np.load(io.BytesIO(data), allow_pickle=False)
        except (ValueError, OSError, EOFError) as e:
            raise SolverError(f"sandboxed BO round returned no numeric array: {e}") from e
        if not isinstance(arr, np.ndarray) or arr.dtype.kind != "f":
            raise SolverError("sandboxed BO round returned a non-float array")
        return ProposedPoints(torch.from_numpy(arr.astype(np.float64, copy=True)))


def _final_comparison(
    task: Any,
    trace: Any,
    carried: list[dict[str, Any]],
    ctx: RunContext,
    config: KernelDiscoveryConfig,
) -> dict[str, float | str | None]:
    """LOO-CRPS of the discovered kernel vs RBF-ARD on the final BO data (same data, same fit)."""
    from optiforge.solvers.bo.loop import standardize

    bounds = task.problem(0).bounds
    lo, hi = (
        torch.as_tensor(bounds[0], dtype=torch.float64),
        torch.as_tensor(bounds[1], dtype=torch.float64),
    )
    Xu = (trace.X - lo) / (hi - lo)
    y = standardize(trace.y)
    ev = KernelEvaluator(
        task,
        Xu,
        y,
        seed=ctx.seed,
        restarts=config.gp_restarts,
        events_path=str(ctx.run_dir / "events.jsonl") if ctx.run_dir else None,
    )
    out: dict[str, float | str | None] = {}
    rbf = ev({"expression": "RBF_ARD"})
    out["RBF_ARD"] = rbf.value if rbf.passed else None
    best = carried[0] if carried else {"expression": "RBF_ARD"}
    disc = ev(best)
    out["discovered"] = disc.value if disc.passed else None
    out["discovered_kernel"] = describe(best)
    return out
