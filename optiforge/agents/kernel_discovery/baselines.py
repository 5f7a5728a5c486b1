"""Kernel Discovery's baselines: BO with fixed kernels (and random, Sobol, CMA-ES, HeSBO,
TuRBO, vanilla BO, greedy ``kernel_search``), and the classic compositional kernel search in
the agent's own loop."""

from __future__ import annotations

from typing import Any

from optiforge.agents.kernel_discovery.agent import discovery_run
from optiforge.agents.kernel_discovery.config import KernelDiscoveryConfig
from optiforge.agents.kernel_discovery.proposers import CompositionalProposer
from optiforge.agents.kit import RunContext
from optiforge.agents.spec import AgentOutcome, Baseline


def _bo_baseline(name: str) -> Baseline:
    def run(task: Any, ctx: RunContext, budget: int | None, config: Any = None) -> AgentOutcome:
        from optiforge.solvers.bo import AcqConfig, run_baseline

        trace = run_baseline(
            name,
            task.problem(ctx.seed),
            budget or task.budget,
            ctx.seed,
            n_init=task.n_init,
            # the agent's acquisition settings: a baseline differs from the agent by its kernel only
            acq_config=AcqConfig(num_restarts=config.acq_restarts, raw_samples=config.acq_raw_samples,
                                 acquisition=config.acquisition)
            if config is not None
            else AcqConfig(num_restarts=2, raw_samples=64),
        )  # fmt: skip
        return AgentOutcome(
            best_candidate={"X": trace.X.tolist(), "y": trace.y.tolist(), "name": name},
            claimed_value=trace.best_value,
            trace=[float(v) for v in trace.best_trace.tolist()],
            n_evaluations=int(trace.y.numel()),
            stop_reason="baseline",
        )

    run.__name__ = f"baseline_{name}"
    return run


def compositional_baseline(
    task: Any, ctx: RunContext, budget: int | None, config: Any = None
) -> AgentOutcome:
    """The classic compositional kernel search in the same loop (no LLM, whatever --model says)."""
    config = KernelDiscoveryConfig()
    return discovery_run(task, config, budget, CompositionalProposer(config)).execute(ctx)


def _baselines() -> dict[str, Baseline]:
    names = ["gp_rbf_ard", "random", "sobol", "gp_matern52_ard", "gp_rq", "vanilla_bo", "turbo",
             "gp_rbf", "gp_matern12_ard", "gp_matern32_ard", "cmaes", "hesbo", "kernel_search"]  # fmt: skip
    out = {n: _bo_baseline(n) for n in names}
    out["compositional"] = compositional_baseline
    return out
