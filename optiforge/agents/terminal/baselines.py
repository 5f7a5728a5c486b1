"""``terminal``'s baseline: the same agent on the base harness (what a tuned harness is
compared with); with no ``config.harness`` the two are the same harness, run twice."""

from __future__ import annotations

from dataclasses import replace

from optiforge.agents.kit import RunContext
from optiforge.agents.spec import AgentOutcome, Baseline
from optiforge.agents.terminal.agent import build
from optiforge.agents.terminal.config import TerminalConfig
from optiforge.evals.suites.saddle.protocol import SaddleTask


def base_harness_run(
    task: SaddleTask, ctx: RunContext, budget: int | None, config: TerminalConfig
) -> AgentOutcome:
    """One episode on the base harness. It runs beside the agent in the agent's run
    directory, so it is not checkpointed: a durable run would find the agent's finished
    thread in ``checkpoints.sqlite`` and refuse to start (one episode is cheap to redo)."""
    run = build(task, config.model_copy(update={"harness": None}), budget)
    return replace(run, durable=False).execute(ctx)


BASELINES: dict[str, Baseline[SaddleTask, TerminalConfig]] = {"base-harness": base_harness_run}
