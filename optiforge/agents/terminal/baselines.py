"""``terminal``'s baseline: the same agent on the base harness (what a tuned harness is
compared with); with no ``config.harness`` the two are the same run."""

from __future__ import annotations

from typing import Any

from optiforge.agents.kit import RunContext
from optiforge.agents.spec import AgentOutcome, Baseline


def base_harness_run(task: Any, ctx: RunContext, budget: int | None, config: Any) -> AgentOutcome:
    from optiforge.agents.terminal.agent import build

    return build(task, config.model_copy(update={"harness": None}), budget).execute(ctx)


BASELINES: dict[str, Baseline] = {"base-harness": base_harness_run}
