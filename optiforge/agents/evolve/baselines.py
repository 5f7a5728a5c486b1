"""``evolve``'s baselines: the seed program, and random programs on the same budget."""

from __future__ import annotations

import math

from optiforge.agents.evolve.config import EvolveConfig
from optiforge.agents.evolve.problem import SEED_CODE, seed_code
from optiforge.agents.evolve.proposers import mutate_code
from optiforge.agents.kit import RunContext
from optiforge.agents.spec import AgentOutcome
from optiforge.evals.protocol import CodeTask


def seed_baseline(
    task: CodeTask, ctx: RunContext, budget: int | None, config: EvolveConfig
) -> AgentOutcome:
    """The seed program, unchanged (what the search starts from)."""
    payload = {"code": seed_code(task)}
    score = task.evaluate(payload, ctx.sandbox)
    return AgentOutcome(
        best_candidate=payload,
        claimed_value=score.value,
        trace=[score.value if score.passed else None],
        n_evaluations=1,
        stop_reason="baseline",
    )


def random_restart_baseline(
    task: CodeTask, ctx: RunContext, budget: int | None, config: EvolveConfig
) -> AgentOutcome:
    """Random programs (one mutation of the seed each), best of the same budget."""
    rng = ctx.rng("random-baseline")
    n = budget or 20
    best_payload, best, trace = None, None, []
    for _ in range(n):
        code = SEED_CODE
        for _ in range(int(rng.integers(1, 4))):
            code = mutate_code(code, rng)
        score = task.evaluate({"code": code}, ctx.sandbox)
        v = score.value if score.passed and math.isfinite(score.value) else None
        if v is not None and (best is None or (v > best if task.higher_is_better else v < best)):
            best, best_payload = v, {"code": code}
        trace.append(best)
    return AgentOutcome(
        best_candidate=best_payload,
        claimed_value=best,
        trace=trace,
        n_evaluations=n,
        stop_reason="baseline",
    )
