"""``hawkeye``'s baselines: the task's own kernel, and the offline autotuner on the same budget."""

from __future__ import annotations

from optiforge.agents.hawkeye.agent import hawkeye_run
from optiforge.agents.hawkeye.config import HawkeyeConfig
from optiforge.agents.hawkeye.proposers import AutotuneProposer
from optiforge.agents.kit import RunContext
from optiforge.agents.spec import AgentOutcome
from optiforge.evals.suites.kernelarena.protocol import KernelTask


def reference_baseline(
    task: KernelTask, ctx: RunContext, budget: int | None, config: HawkeyeConfig
) -> AgentOutcome:
    """The task's own starting kernel, unchanged (speedup 1.0 by construction on GPU)."""
    payload = {"code": task.seed_code}
    score = task.evaluate(payload, ctx.sandbox)
    return AgentOutcome(best_candidate=payload, claimed_value=score.value,
                        trace=[score.value if score.passed else None], n_evaluations=1, stop_reason="baseline")  # fmt: skip


def autotune_baseline(
    task: KernelTask, ctx: RunContext, budget: int | None, config: HawkeyeConfig
) -> AgentOutcome:
    """The offline autotuner alone, with the same budget (the non-LLM baseline; the default
    config, whatever the agent's)."""
    return hawkeye_run(task, HawkeyeConfig(), budget, AutotuneProposer()).execute(ctx)
