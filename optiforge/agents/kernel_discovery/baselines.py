"""Kernel Discovery's baselines: BO with fixed kernels (and random, Sobol, CMA-ES, HeSBO,
TuRBO, vanilla BO, greedy ``kernel_search``), and the classic compositional kernel search in
the agent's own loop."""

from __future__ import annotations

from optiforge.agents.kernel_discovery.agent import discovery_run
from optiforge.agents.kernel_discovery.config import KernelDiscoveryConfig
from optiforge.agents.kernel_discovery.nodes import acq_config
from optiforge.agents.kit import RunContext
from optiforge.agents.spec import AgentOutcome, Baseline
from optiforge.errors import ConfigError
from optiforge.evals.suites.hdbo.protocol import HDBOTask


def _bo_baseline(name: str) -> Baseline[HDBOTask, KernelDiscoveryConfig]:
    def run(
        task: HDBOTask, ctx: RunContext, budget: int | None, config: KernelDiscoveryConfig
    ) -> AgentOutcome:
        from optiforge.solvers.bo import run_baseline

        total = budget or task.budget
        if total is None:
            raise ConfigError(f"{task.suite}/{task.name} has no evaluation budget")
        trace = run_baseline(
            name,
            task.problem(ctx.seed),
            total,
            ctx.seed,
            n_init=task.n_init,
            # the agent's acquisition settings: a baseline differs from the agent by its kernel only
            acq_config=acq_config(config),
        )
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
    task: HDBOTask, ctx: RunContext, budget: int | None, config: KernelDiscoveryConfig
) -> AgentOutcome:
    """The classic compositional kernel search in the same loop (no LLM, whatever --model
    says; the default config, whatever the agent's)."""
    return discovery_run(task, KernelDiscoveryConfig(), budget, offline=True).execute(ctx)


_BO_BASELINES = ["gp_rbf_ard", "random", "sobol", "gp_matern52_ard", "gp_rq", "vanilla_bo", "turbo",
                 "gp_rbf", "gp_matern12_ard", "gp_matern32_ard", "cmaes", "hesbo", "kernel_search"]  # fmt: skip

BASELINES: dict[str, Baseline[HDBOTask, KernelDiscoveryConfig]] = {
    **{n: _bo_baseline(n) for n in _BO_BASELINES},
    "compositional": compositional_baseline,
}
"""The agent's baselines, the primary one (``gp_rbf_ard``) first."""
