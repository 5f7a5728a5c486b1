"""Kernel Discovery's selection: one kernel refresh (search, selection against the
incumbent, the carried set) and the final out-of-sample comparison with RBF-ARD."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from optiforge.agents.kernel_discovery.config import KernelDiscoveryConfig
from optiforge.agents.kernel_discovery.problem import (
    DiscoveryState,
    KernelEvaluator,
    KernelSearchProblem,
    describe,
    functional_clusters,
    memory_kernels,
)
from optiforge.agents.kernel_discovery.proposers import LLMKernelProposer
from optiforge.agents.kit import (
    Evaluated,
    HistoryProposer,
    Proposer,
    RunContext,
    SearchConfig,
    run_search,
)
from optiforge.agents.kit.search import llm_counts
from optiforge.evals.suites.hdbo.protocol import HDBOTask

if TYPE_CHECKING:  # BoTorch loads with the first BO round, not with the agent's spec
    from optiforge.solvers.bo.loop import Trace


def refresh_kernels(
    task: HDBOTask,
    ctx: RunContext,
    config: KernelDiscoveryConfig,
    proposer: Proposer | HistoryProposer,
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
    # (kit's SearchProblem declares a mutable ``task: Task``: a problem on a task family is
    # not one for mypy, which keeps mutable protocol members invariant)
    res = run_search(problem, proposer, quiet, search, thread_id=f"refresh{rnd}",  # type: ignore[arg-type]
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
    if proposer.name == LLMKernelProposer.name:  # the proposals are the LLM's
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


FINAL_FOLDS = 5
"""Folds of the final comparison's held-out CRPS (fixed: before/after comparisons share it)."""


def final_comparison(
    task: HDBOTask,
    trace: Trace,
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

    def evaluator(
        X: torch.Tensor, yy: torch.Tensor, heldout: list[list[int]] | None
    ) -> KernelEvaluator:
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
        yy = torch.cat([standardize(trace.y[:n0]), restandardized(trace.y, n0, n1)])
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


def restandardized(y: torch.Tensor, n0: int, n1: int) -> torch.Tensor:
    """``y[n0:n1]`` on the scale ``standardize`` gives ``y[:n0]`` (later points are predicted
    on the scale the refresh's GP was fitted on)."""
    ref = y[:n0]
    return (y[n0:n1] - ref.mean()) / ref.std().clamp_min(1e-9)
