"""EPB's baselines: the best single heuristic of the seed bank (chosen on the teacher's
training trajectories by its own agreement with the teacher) and the seed bank with a
fitted router (no block I or II: what evolution adds)."""

from __future__ import annotations

from typing import Any

import numpy as np

from optiforge.agents.epb.agent import _Scores
from optiforge.agents.epb.config import EPBConfig
from optiforge.agents.epb.problem import divergence, fit_router, subset
from optiforge.agents.kit import RunContext
from optiforge.agents.spec import AgentOutcome, Baseline


def best_single(task: Any, ctx: RunContext, budget: int | None, config: Any = None) -> AgentOutcome:
    """The one seed heuristic that best fits the teacher, alone (its sharpness fitted)."""
    from optiforge.solvers.nco.programs import SEED_BANK

    cfg = EPBConfig()
    tr, _, _ = _Scores(task, cfg).data(ctx, dict(SEED_BANK))
    fits = [(fit_router(subset(tr, [k]), 100, cfg.router_lr, seed=ctx.seed), k) for k in SEED_BANK]
    fit, k = min(fits, key=lambda f: float(divergence(subset(tr, [f[1]]), f[0]).mean()))
    return AgentOutcome(best_candidate={"programs": {k: SEED_BANK[k]}, "router": fit["router"],
                                        "beta": fit["beta"]}, stop_reason="baseline",
                        extra={"portfolio": [k]})  # fmt: skip


def seed_portfolio(
    task: Any, ctx: RunContext, budget: int | None, config: Any = None
) -> AgentOutcome:
    """The whole seed bank, router fitted, nothing evolved."""
    from optiforge.solvers.nco.programs import SEED_BANK

    cfg = EPBConfig()
    tr, va, _ = _Scores(task, cfg).data(ctx, dict(SEED_BANK))
    fit = fit_router(tr, cfg.router_steps, cfg.router_lr, seed=ctx.seed)
    return AgentOutcome(best_candidate={"programs": dict(SEED_BANK), "router": fit["router"],
                                        "beta": fit["beta"]}, stop_reason="baseline",
                        claimed_value=float(np.mean(divergence(va, fit))),
                        extra={"portfolio": list(SEED_BANK)})  # fmt: skip


BASELINES: dict[str, Baseline] = {"best-single": best_single, "seed-portfolio": seed_portfolio}
