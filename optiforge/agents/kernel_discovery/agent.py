"""Kernel Discovery: LLM-evolved GP kernels for high-dimensional Bayesian optimization.

The agent runs BO on an ``hdbo`` task; every ``refresh_every`` BO rounds it refreshes the
GP kernel by a short evolutionary search on the shared loop (population, selection by
held-out CRPS on the BO data seen so far, mutation and crossover), and the acquisition
(qLogEI) uses the kernel selected.

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

Selection that generalizes (issue 23; selection on 10-25 points overfits):

- score (``selection_score="kfold"``, default): the mean CRPS of points held out in
  ``selection_folds`` folds, each fold predicted with hyperparameters (kernel, signal
  variance, noise, mean) fitted on the other folds only. The closed-form LOO-CRPS
  (``"loo"``, the old rule) keeps the full-data hyperparameters, which saw the point they
  predict: with 20 points in 25-60 dims an ARD kernel interpolates and its LOO-CRPS looks
  several times better than its held-out CRPS;
- complexity: the score is multiplied by ``1 + complexity_penalty * (groups - 1)`` (a
  group is one named hyperparameter);
- incumbent: a refresh keeps the incumbent kernel (the previous refresh's choice, RBF-ARD
  at round 0) unless the search's best beats it by more than ``selection_margin *
  |incumbent|`` *and* by ``selection_se`` standard errors of the paired per-point
  differences (both kernels are scored on the same held-out points).

The final comparison (``finish``) reports three out-of-sample measures of the last
selected kernel against RBF-ARD: LOO-CRPS refitted on the final BO data (the measure
before issue 23), 5-fold held-out CRPS on the final data, and the *forward* CRPS: each
refresh's choice and RBF-ARD fitted on that refresh's data predict the points BO
evaluated until the next refresh (points no selection saw).

Trust boundary: LLM-written kernel code never runs in this process. The parent handles it
as text, and as numbers computed by trusted code here or received from a harness program
the candidate runs in, inside the sandbox:

- validation for the re-ask loop: ``optiforge.solvers.gp.validate_cli`` in the sandbox
  (shipped with ``package_files``; its verdict only decides whether to re-ask);
- scoring: the hdbo harness (``evals.suites.hdbo.scoring``) uses the kernel only as a
  sandboxed Gram oracle (inputs and hyperparameters in, matrices out; ``y`` never enters
  the sandbox), fits the hyperparameters itself and computes the LOO-CRPS from the
  checked matrix; a printed score is never read;
- BO with a selected LLM kernel: each round's GP fit and qLogEI optimisation run in one
  sandbox run (``harness/bo_round.py``, ``SandboxedKernel``); the loop gets back only the
  proposed points, checks them and evaluates the objective here.

Library kernels (the compositional grammar) are parsed by ``grammar`` (an AST whitelist of
base-kernel names, ``+`` and ``*``, no exec) and built here from library code. The prompt
shows the LLM the task's opaque ``agent_name`` and leak-free ``description`` only, never
the CLI id (``levy4_in_25``), the function, its effective dimensions or the embedding.

Graph and resume: the agent is a LangGraph graph (``discovery_run``) whose nodes are the
BO loop's steps, on ``solvers.bo.BOSession`` (the loop one round at a time): ``design``
(initial Sobol design), ``refresh`` (a kernel search, every ``refresh_every`` rounds),
``bo_round`` (one fit -> qLogEI -> evaluate) and ``finish`` (final comparison, lesson).
The state holds the BO rows (points, values, kernel, fallback per round) and the
refreshes' record (incumbent, carried kernels, per-refresh info); the live session is a
cache of those rows. With a run directory every node is checkpointed
(``kernel_discovery_checkpoints.sqlite``), the BO session seeds each round from
``(seed, round)`` and appends each evaluation to ``bo_evaluations.jsonl`` as soon as
the objective returns, and each refresh's search checkpoints under
``thread_id=refresh<round>``; ``--resume`` continues from the last node: finished
evaluations are not redone (one finished by the killed node is read back from the log),
a cut refresh continues its search.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, TypedDict, cast

import numpy as np
import torch
from pydantic import BaseModel

from optiforge.agents.kernel_discovery.config import KernelDiscoveryConfig
from optiforge.agents.kernel_discovery.problem import (
    _SHIPPED,
    KernelEvaluator,
    KernelSearchProblem,
    _sandbox_env,
    _sandbox_of,
    describe,
    functional_clusters,
    memory_kernels,
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
from optiforge.agents.kit.driver import FORCE_RESTART_HINT
from optiforge.agents.kit.search import llm_counts, pick_proposer
from optiforge.agents.spec import AgentOutcome
from optiforge.errors import RunRecordError, SolverError
from optiforge.solvers.gp import grammar

BO_EVALUATIONS = "bo_evaluations.jsonl"
"""The BO session's evaluation log in the run directory: each evaluation as soon as the
objective returns (a resume reads back one that a killed node finished)."""

CHECKPOINTS = "kernel_discovery_checkpoints.sqlite"
"""The agent graph's checkpoints (each refresh's search checkpoints in ``checkpoints.sqlite``)."""
THREAD_ID = "kernel_discovery"
_FALLBACKS = (SolverError, RuntimeError, ValueError)
"""What the BO loop turns into a random-point round instead of a crash (a refresh too)."""


class DiscoveryState(TypedDict, total=False):
    """Serializable graph state: the BO session's rows and the kernel search's record."""

    bo: list[dict[str, Any]]
    """``BOSession.rows``: the initial design, then one row per BO round."""
    kernel: dict[str, Any] | None
    """The payload of the kernel BO rounds use (None until a refresh succeeds)."""
    refresh_failed: int | None
    """The round whose refresh raised: that round is a fallback (the loop's rule)."""
    incumbent: dict[str, Any]
    carried: list[dict[str, Any]]
    refreshes: list[dict[str, Any]]
    final: dict[str, Any]


def build(task: Any, config: BaseModel, budget: int | None) -> AgentRun:
    """BO on an hdbo task with the kernel refreshed by evolutionary search every k rounds."""
    assert isinstance(config, KernelDiscoveryConfig)
    proposer = LLMOrOffline(llm=LLMKernelProposer(config), offline=CompositionalProposer(config))
    return discovery_run(task, config, budget, proposer)


class _SessionCache:
    """The live ``BOSession`` of a graph: a pure cache of the state's ``bo`` rows.

    A node uses the cached session only if it is the one the state describes (same run,
    same rows); otherwise (a resume) it is rebuilt from the rows (``BOSession.restore``,
    which checks them against the BO log and never calls the objective)."""

    def __init__(self, task: Any, total: int, acq: Any) -> None:
        self.task, self.total, self.acq = task, total, acq
        self.session: Any = None
        self.key: tuple[int, str] | None = None

    def _kw(self, ctx: RunContext) -> dict[str, Any]:
        # A run directory makes the session resumable: per-round seeds, the BO log.
        log = ctx.run_dir / BO_EVALUATIONS if ctx.run_dir is not None else None
        return {"budget": self.total, "n_init": self.task.n_init, "seed": ctx.seed,
                "acq_config": self.acq, "name": "kernel-discovery",
                "resumable": log is not None, "log_path": log}  # fmt: skip

    def new(self, ctx: RunContext) -> Any:
        from optiforge.solvers.bo.session import BOSession

        self.session = BOSession(self.task.problem(ctx.seed), **self._kw(ctx))
        self.key = (ctx.seed, str(ctx.run_dir))
        return self.session

    def get(self, state: DiscoveryState, ctx: RunContext) -> Any:
        from optiforge.solvers.bo.session import BOSession

        rows = list(state.get("bo", []))
        s = self.session
        if (
            s is not None
            and self.key == (ctx.seed, str(ctx.run_dir))
            and len(s.rows) == len(rows)
            and s.rows[-1:] == rows[-1:]
        ):
            return s
        try:
            s = BOSession.restore(self.task.problem(ctx.seed), rows, **self._kw(ctx))
        except SolverError as err:
            raise RunRecordError(f"{err}; {FORCE_RESTART_HINT}") from None
        self.session, self.key = s, (ctx.seed, str(ctx.run_dir))
        return s


def discovery_run(
    task: Any, config: KernelDiscoveryConfig, budget: int | None, proposer: Any
) -> AgentRun:
    """The agent's graph: ``design -> (refresh ->) bo_round -> ... -> finish``.

    - ``design``: the initial Sobol design, evaluated (``BOSession.begin``);
    - ``refresh``: at round 0 and every ``refresh_every`` rounds, the kernel search on the
      BO data so far (a search graph of its own, thread ``refresh<round>``);
    - ``bo_round``: one BO round (fit -> qLogEI -> evaluate) with the state's kernel;
    - ``finish``: the final LOO-CRPS comparison and the memory lesson.

    ``proposer``: the kernel proposer (``LLMOrOffline`` for the agent).
    """
    from langgraph.graph import END, START, StateGraph
    from langgraph.runtime import Runtime

    from optiforge.solvers.bo import AcqConfig
    from optiforge.solvers.bo.loop import kernel_model, standardize

    seeds = [
        {"expression": grammar.canonical(e)}
        for e in dict.fromkeys(["RBF_ARD", *config.seed_kernels])
    ]
    total = budget or task.budget
    acq = AcqConfig(
        num_restarts=config.acq_restarts,
        raw_samples=config.acq_raw_samples,
        acquisition=config.acquisition,
    )
    cache = _SessionCache(task, total, acq)

    def design(state: DiscoveryState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        row = cache.new(runtime.context).begin()
        return {"bo": [row], "kernel": None, "refresh_failed": None,
                "incumbent": {"expression": "RBF_ARD"}, "carried": [], "refreshes": []}  # fmt: skip

    def refresh(state: DiscoveryState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        ctx = runtime.context
        session = cache.get(state, ctx)
        rnd = session.round
        try:
            return {**_refresh(task, ctx, config, pick_proposer(proposer, ctx), seeds, state,
                               session.Xu, standardize(session.y), rnd),
                    "refresh_failed": None}  # fmt: skip
        except _FALLBACKS:
            return {"refresh_failed": rnd}  # the round falls back to a random point

    def bo_round(state: DiscoveryState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        ctx = runtime.context
        session = cache.get(state, ctx)
        payload = state.get("kernel")
        failed = state.get("refresh_failed") == session.round or payload is None
        spec = None if failed else _spec_of(payload or {}, ctx, acq)
        used: list[str] = []

        def model(Xu: torch.Tensor, target: torch.Tensor, rnd: int) -> Any:
            if spec is None:
                raise SolverError(f"the kernel refresh of round {rnd} failed")
            used.append(spec.expression)
            return kernel_model(spec, Xu, target, rnd, seed=ctx.seed, gp_restarts=1,
                                resumable=session.resumable)  # fmt: skip

        return {"bo": [*state.get("bo", []), session.step(model, used)]}

    def finish(state: DiscoveryState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        ctx = runtime.context
        trace = cache.get(state, ctx).trace()
        if ctx.progress is not None:
            ctx.progress({"evaluations": int(trace.y.numel()), "best": trace.best_value})
        final = _final_comparison(task, trace, state.get("carried", []), ctx, config,
                                  state.get("refreshes", []))  # fmt: skip
        _remember_lesson(task, ctx, state.get("refreshes", []), final)
        return {"final": final}

    def route(state: DiscoveryState) -> str:
        rows = state.get("bo", [])
        if sum(len(r["y"]) for r in rows) >= total:
            return "finish"
        rnd = len(rows) - 1
        due = state.get("kernel") is None or rnd % config.refresh_every == 0
        return "refresh" if due else "bo_round"

    graph = StateGraph(DiscoveryState, context_schema=RunContext)
    for name, fn in (("design", design), ("refresh", refresh), ("bo_round", bo_round),
                     ("finish", finish)):  # fmt: skip
        graph.add_node(name, fn)
    graph.add_edge(START, "design")
    graph.add_conditional_edges("design", route, ["refresh", "bo_round", "finish"])
    graph.add_edge("refresh", "bo_round")
    graph.add_conditional_edges("bo_round", route, ["refresh", "bo_round", "finish"])
    graph.add_edge("finish", END)

    def outcome(state: dict[str, Any], ctx: RunContext) -> AgentOutcome:
        final = cast(DiscoveryState, state)
        trace = cache.get(final, ctx).trace()
        name = pick_proposer(proposer, ctx).name
        return discovery_outcome(trace, name, final.get("refreshes", []), final.get("final", {}))

    return AgentRun(
        graph=graph, outcome=outcome, start={"bo": []}, thread_id=THREAD_ID,
        checkpoints=CHECKPOINTS, recursion_limit=2 * total + 20, what="a kernel-discovery run",
    )  # fmt: skip


def _refresh(
    task: Any,
    ctx: RunContext,
    config: KernelDiscoveryConfig,
    proposer: Any,
    seeds: list[dict[str, Any]],
    state: DiscoveryState,
    Xu: torch.Tensor,
    y: torch.Tensor,
    rnd: int,
) -> dict[str, Any]:
    """One kernel refresh on the BO data so far (``y`` standardised for minimisation):
    the search, the selection against the incumbent, the carried set, the round's record."""
    incumbent = state.get("incumbent") or {"expression": "RBF_ARD"}
    carried = list(state.get("carried", []))
    events = str(ctx.run_dir / "events.jsonl") if ctx.run_dir else None
    # The incumbent is always re-scored on the new data: the margin compares like with like.
    start = list(dict.fromkeys(map(_key, [*seeds, incumbent, *carried])))
    start_payloads = [json.loads(k) for k in start]
    # Kernels recalled from memory join the first refresh only (afterwards they live on
    # only if they were carried), on evaluations of their own: re-injected at every
    # refresh they displaced the search's proposals and got one more chance each time to
    # win the selection on noise (kd-sequence, before issue 40).
    recalled = (
        memory_kernels(ctx, task, start_payloads)
        if config.seed_from_memory and not state.get("refreshes")
        else []
    )
    problem = KernelSearchProblem(task, Xu.detach().clone(), y.detach().clone(),
                                  start_payloads + recalled, config, seed=ctx.seed,
                                  events_path=events)  # fmt: skip
    problem.recalled = recalled
    search = SearchConfig(
        max_evaluations=max(config.kernel_evals_per_refresh, len(start)) + len(recalled),
        proposals_per_round=config.proposals_per_round,
        population_size=config.population_size,
    )
    # The search's rounds are not BO progress; a resumed run continues a cut search.
    quiet = dataclasses.replace(ctx, progress=None)
    res = run_search(problem, proposer, quiet, search, thread_id=f"refresh{rnd}",
                     resume=ctx.run_dir is not None)  # fmt: skip
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
    n_se = config.selection_se if config.selection_score == "kfold" else 0.0
    chosen = select_kernel(best, inc, config.selection_margin, n_se)
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
        "selection_score": config.selection_score,
        # the chosen payload: the final comparison's forward CRPS refits it on this data
        "kernel": chosen.payload if chosen is not None else {"expression": "RBF_ARD"},
        "stop": res.stop_reason,
    }
    if getattr(proposer, "name", "") == LLMKernelProposer.name:  # the proposals are the LLM's
        info["llm_proposals"] = llm_counts(res)
    ctx.tracer.event("kernel_refresh", **info)
    if ctx.progress is not None:
        ctx.progress({"evaluations": int(Xu.shape[0]), "best": None})
    return {
        "incumbent": incumbent,
        "carried": carried,
        "refreshes": [*state.get("refreshes", []), info],
        "kernel": chosen.payload if chosen is not None else {"expression": "RBF_ARD"},
    }


def _key(payload: dict[str, Any]) -> str:
    return json.dumps(payload, sort_keys=True)


def select_kernel(
    best: Evaluated | None, incumbent: Evaluated | None, margin: float, n_se: float = 0.0
) -> Evaluated | None:
    """The search's best if it beats the incumbent's score by more than ``margin * |inc|``
    plus ``n_se`` standard errors of their paired per-point held-out CRPS differences
    (``details["heldout_crps"]``, the same points for both; without them, the margin
    alone); else the incumbent."""
    if incumbent is None or best is None or best.value is None or incumbent.value is None:
        return best or incumbent
    if best.payload == incumbent.payload:
        return incumbent
    need = margin * abs(incumbent.value)
    a, b = best.details.get("heldout_crps"), incumbent.details.get("heldout_crps")
    if n_se > 0 and isinstance(a, list) and isinstance(b, list) and len(a) == len(b) >= 2:
        diff = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
        need += n_se * float(diff.std(ddof=1)) / float(np.sqrt(len(diff)))
    if best.value < incumbent.value - need:
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


FINAL_FOLDS = 5
"""Folds of the final comparison's held-out CRPS (fixed: before/after comparisons share it)."""


def _final_comparison(
    task: Any,
    trace: Any,
    carried: list[dict[str, Any]],
    ctx: RunContext,
    config: KernelDiscoveryConfig,
    refreshes: list[dict[str, Any]] | None = None,
) -> dict[str, float | str | None]:
    """The last selected kernel vs RBF-ARD out of sample (lower is better, no complexity penalty):

    - ``discovered`` / ``RBF_ARD``: LOO-CRPS refitted on the final BO data (the measure
      before issue 23: the hyperparameters saw every point, the selection most of them);
    - ``discovered_heldout`` / ``RBF_ARD_heldout``: ``FINAL_FOLDS``-fold held-out CRPS on
      the final data (hyperparameters refitted without each fold);
    - ``discovered_forward`` / ``RBF_ARD_forward``: mean CRPS of the points evaluated after
      each refresh (until the next), predicted by that refresh's choice and by RBF-ARD,
      both fitted on that refresh's data only (``forward_points`` of them).
    """
    from optiforge.solvers.bo.loop import standardize
    from optiforge.solvers.gp.folds import kfold_splits

    bounds = task.problem(0).bounds
    lo, hi = (
        torch.as_tensor(bounds[0], dtype=torch.float64),
        torch.as_tensor(bounds[1], dtype=torch.float64),
    )
    Xu = (trace.X - lo) / (hi - lo)
    y = standardize(trace.y)
    events = str(ctx.run_dir / "events.jsonl") if ctx.run_dir else None

    def evaluator(X: torch.Tensor, yy: torch.Tensor, heldout: Any) -> KernelEvaluator:
        return KernelEvaluator(task, X, yy, seed=ctx.seed, restarts=config.gp_restarts,
                               events_path=events, heldout=heldout)  # fmt: skip

    n = int(Xu.shape[0])
    ev = evaluator(Xu, y, kfold_splits(n, FINAL_FOLDS, ctx.seed))
    out: dict[str, float | str | None] = {}
    best = carried[0] if carried else {"expression": "RBF_ARD"}
    for key, payload in (("RBF_ARD", {"expression": "RBF_ARD"}), ("discovered", best)):
        sc = ev(payload)
        out[key] = sc.metrics.get("loo_crps") if sc.passed else None
        out[f"{key}_heldout"] = sc.value if sc.passed else None
    out["discovered_kernel"] = describe(best)
    payload = best.payload if isinstance(best, Evaluated) else best
    # a grammar expression (not LLM-written code) can seed a later run's refreshes
    out["discovered_expression"] = payload.get("expression")
    # forward: each refresh's choice predicts the points BO evaluated after it
    fwd: dict[str, list[float]] = {"RBF_ARD": [], "discovered": []}
    starts = [r for r in (refreshes or []) if isinstance(r.get("kernel"), dict)]
    for i, r in enumerate(starts):
        n0 = int(r["n_data"])
        n1 = int(starts[i + 1]["n_data"]) if i + 1 < len(starts) else n
        if n1 <= n0 or n0 < 2:
            continue
        # the refresh's data as the refresh saw it: standardised on its own points
        yy = torch.cat([standardize(trace.y[:n0]), _restandardized(trace.y, n0, n1)])
        e2 = evaluator(Xu[:n1], yy, [list(range(n0, n1))])
        scores = {k: e2(p) for k, p in (("RBF_ARD", {"expression": "RBF_ARD"}),
                                        ("discovered", r["kernel"]))}  # fmt: skip
        if all(sc.passed for sc in scores.values()):
            for k, sc in scores.items():
                fwd[k] += list(sc.details["heldout_crps"])
    for k, v in fwd.items():
        out[f"{k}_forward"] = float(np.mean(v)) if v else None
    out["forward_points"] = float(len(fwd["RBF_ARD"]))
    return out


def _restandardized(y: torch.Tensor, n0: int, n1: int) -> torch.Tensor:
    """``y[n0:n1]`` on the scale ``standardize`` gives ``y[:n0]`` (later points are predicted
    on the scale the refresh's GP was fitted on)."""
    ref = y[:n0]
    return (y[n0:n1] - ref.mean()) / ref.std().clamp_min(1e-9)
