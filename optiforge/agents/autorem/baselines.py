"""AutoREM's baselines.

- ``nominal``: the nominal program (uncertainty ignored). Generated instances are built
  so that the nominal optimum is not robust-feasible, so it scores 0 there: this shows
  the verifier bites.
- ``no-memory``: the agent with retrieval off and no reflection. With an LLM this is the
  memory ablation; offline it is the same reference program as the agent (same score),
  reported only so the table has the row.
"""

from __future__ import annotations

from typing import Any

from optiforge.agents.autorem.agent import instance_run
from optiforge.agents.autorem.config import AutoREMConfig
from optiforge.agents.autorem.modeller import reference_modeller
from optiforge.agents.autorem.proposers import counterpart_program
from optiforge.agents.autorem.report import NominalExtra
from optiforge.agents.kit import AgentOutcome, RunContext
from optiforge.evals.suites.autoro.protocol import ROTask
from optiforge.sandboxes import get_sandbox


def nominal_baseline(
    task: ROTask, ctx: RunContext, budget: int | None, config: AutoREMConfig
) -> AgentOutcome:
    """The nominal (non-robust) counterpart as a program: must score 0 on generated instances.

    On a text-only task the model comes from the reference modeller (the statement's model
    sheet), never from the hidden JSON.
    """
    candidate: Any
    if task.text_only:
        model = reference_modeller(task.statement)
        code = counterpart_program(model, robust=False)
        candidate = {"model": model.model_dump(mode="json"), "code": code}
    else:
        code = counterpart_program(task.instance.problem, robust=False)
        candidate = code
    sandbox = ctx.sandbox if ctx.sandbox is not None else get_sandbox("local", tracer=ctx.tracer)
    score = task.evaluate(candidate, sandbox)
    return AgentOutcome(
        best_candidate=candidate,
        claimed_value=score.value,
        trace=[1.0 if score.passed else None],
        n_evaluations=1,
        stop_reason="baseline",
        extra=NominalExtra(
            attempts=1,
            llm_calls=0,
            tokens=0,
            retrieved=0,
            memory_used=False,
            proposer="nominal",
            last_reasons=list(score.details.get("reasons", []))[:3],
        ).model_dump(),  # fmt: skip
    )


def no_memory_baseline(
    task: ROTask, ctx: RunContext, budget: int | None, config: AutoREMConfig
) -> AgentOutcome:
    """The agent without retrieval or reflection (offline: identical to the agent)."""
    cfg = AutoREMConfig(use_memory=False, reflect="never")
    if budget is not None:
        cfg = cfg.model_copy(update={"max_attempts": max(1, min(cfg.max_attempts, budget))})
    run = instance_run(task, cfg, thread_id=f"autorem-nomem-{task.name}")
    return run.execute(ctx)  # memory_used is False: the config turns retrieval off
