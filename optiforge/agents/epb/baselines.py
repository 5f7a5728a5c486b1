"""EPB's baselines: the best single heuristic of the seed bank (chosen on the teacher's
training trajectories by its own agreement with the teacher) and the seed bank with a
fitted router (no block I or II: what evolution adds)."""

from __future__ import annotations

import numpy as np

from optiforge.agents.epb.config import EPBConfig
from optiforge.agents.epb.nodes import ProgramScores
from optiforge.agents.epb.problem import divergence, fit_router, subset
from optiforge.agents.epb.report import EPBExtra
from optiforge.agents.kit import RunContext
from optiforge.agents.spec import AgentOutcome, Baseline
from optiforge.evals.suites.nco.protocol import NCOTask


def best_single(
    task: NCOTask, ctx: RunContext, budget: int | None, config: EPBConfig | None = None
) -> AgentOutcome:
    """The one seed heuristic that best fits the teacher, alone (its sharpness fitted)."""
    from optiforge.solvers.nco.programs import SEED_BANK

    cfg = EPBConfig()
    tr, _, _ = ProgramScores(task, cfg).data(ctx, dict(SEED_BANK))
    fits = [(fit_router(subset(tr, [k]), 100, cfg.router_lr, seed=ctx.seed), k) for k in SEED_BANK]
    fit, k = min(fits, key=lambda f: float(divergence(subset(tr, [f[1]]), f[0]).mean()))
    return AgentOutcome(best_candidate={"programs": {k: SEED_BANK[k]}, "router": fit["router"],
                                        "beta": fit["beta"]}, stop_reason="baseline",
                        extra=EPBExtra(portfolio=[k]).dump())  # fmt: skip


def seed_portfolio(
    task: NCOTask, ctx: RunContext, budget: int | None, config: EPBConfig | None = None
) -> AgentOutcome:
    """The whole seed bank, router fitted, nothing evolved."""
    from optiforge.solvers.nco.programs import SEED_BANK

    cfg = EPBConfig()
    tr, va, _ = ProgramScores(task, cfg).data(ctx, dict(SEED_BANK))
    fit = fit_router(tr, cfg.router_steps, cfg.router_lr, seed=ctx.seed)
    return AgentOutcome(best_candidate={"programs": dict(SEED_BANK), "router": fit["router"],
                                        "beta": fit["beta"]}, stop_reason="baseline",
                        claimed_value=float(np.mean(divergence(va, fit))),
                        extra=EPBExtra(portfolio=list(SEED_BANK)).dump())  # fmt: skip


BASELINES: dict[str, Baseline[NCOTask, EPBConfig]] = {
    "best-single": best_single,
    "seed-portfolio": seed_portfolio,
}
