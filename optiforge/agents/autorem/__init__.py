"""``autorem``: Automated Reformulation with Experience Memory on AutoRO-Bench.

The LLM writes the deterministic robust counterpart of an instance as cvxpy code; it
runs in the sandbox and the suite's verifier judges it; rejected code is repaired with
the verdict fed back (``agent.py``, a LangGraph graph per instance). Offline adaptation
(``adapt.py``) reflects failed trajectories into structured experience entries
(``experience.py``) in the shared memory, retrieved into later prompts; the memory is
text, so it transfers across base models through ``optiforge memory export/import``.

Offline (no LLM) the proposer is the reference reformulator emitted as a standalone
cvxpy program (``codegen.py``): offline accuracy measures the checker, not an LLM.

Baselines:

- ``nominal``: the nominal program (uncertainty ignored). Generated instances are built
  so that the nominal optimum is not robust-feasible, so it scores 0 there: this shows
  the verifier bites.
- ``no-memory``: the agent with retrieval off and no reflection. With an LLM this is the
  memory ablation; offline it is the same reference program as the agent (same score),
  reported only so the table has the row.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from optiforge.agents.autorem.adapt import AdaptationReport, adapt
from optiforge.agents.autorem.agent import (
    AutoREMConfig,
    build_graph,
    extract_code,
    first_prompt,
    load_task,
    outcome_from_state,
    repair_message,
    run_instance,
)
from optiforge.agents.autorem.codegen import counterpart_program, support_rule
from optiforge.agents.autorem.experience import (
    Attempt,
    EntryTrigger,
    ExperienceEntry,
    diagnose_llm,
    diagnose_rules,
    entry_from_experience,
    render_lessons,
    retrieve_entries,
    to_experience,
)
from optiforge.agents.autorem.report import accuracy_table, summary_notes
from optiforge.agents.kit import RunContext
from optiforge.agents.spec import AgentOutcome, AgentSpec
from optiforge.evals.protocol import Task


def solve(
    task: Task, ctx: RunContext, config: BaseModel, budget: int | None, resume: bool
) -> AgentOutcome:
    """Solve one AutoRO instance: retrieve, write code, verify in the sandbox, repair.

    budget: caps the code attempts (evaluations) below ``config.max_attempts``.
    """
    assert isinstance(config, AutoREMConfig)
    atask = load_task(task)
    cfg = config
    if budget is not None:
        cfg = config.model_copy(update={"max_attempts": max(1, min(config.max_attempts, budget))})
    state = run_instance(atask, ctx, cfg, resume=resume)
    return outcome_from_state(state, memory_used=cfg.use_memory and ctx.memory is not None)


def nominal_baseline(
    task: Task, ctx: RunContext, budget: int | None, config: Any = None
) -> AgentOutcome:
    """The nominal (non-robust) counterpart as a program: must score 0 on generated instances."""
    atask = load_task(task)
    code = counterpart_program(atask.instance.problem, robust=False)
    score = atask.evaluate(code, ctx.sandbox or _local_sandbox(ctx))
    return AgentOutcome(
        best_candidate=code,
        claimed_value=score.value,
        trace=[1.0 if score.passed else None],
        n_evaluations=1,
        stop_reason="baseline",
        extra={
            "attempts": 1,
            "llm_calls": 0,
            "tokens": 0,
            "retrieved": 0,
            "memory_used": False,
            "proposer": "nominal",
            "last_reasons": list(score.details.get("reasons", []))[:3],
        },
    )


def no_memory_baseline(
    task: Task, ctx: RunContext, budget: int | None, config: Any = None
) -> AgentOutcome:
    """The agent without retrieval or reflection (offline: identical to the agent)."""
    cfg = AutoREMConfig(use_memory=False, reflect="never")
    if budget is not None:
        cfg = cfg.model_copy(update={"max_attempts": max(1, min(cfg.max_attempts, budget))})
    state = run_instance(load_task(task), ctx, cfg, thread_id=f"autorem-nomem-{task.name}")
    return outcome_from_state(state, memory_used=False)


def _local_sandbox(ctx: RunContext) -> object:
    from optiforge.sandboxes import get_sandbox

    return get_sandbox("local", tracer=ctx.tracer)


SPEC = AgentSpec(
    name="autorem",
    description=(
        "Robust counterparts as cvxpy code with an experience memory (offline: the "
        "reference reformulator as code, which measures the checker)"
    ),
    config_model=AutoREMConfig,
    solve=solve,
    default_benchmark="autoro",
    baselines={"nominal": nominal_baseline, "no-memory": no_memory_baseline},
    default_budget=3,
    offline_equivalent="no-memory",
    summary_notes=summary_notes,
)

__all__ = [
    "SPEC",
    "AdaptationReport",
    "Attempt",
    "AutoREMConfig",
    "EntryTrigger",
    "ExperienceEntry",
    "accuracy_table",
    "adapt",
    "build_graph",
    "counterpart_program",
    "diagnose_llm",
    "diagnose_rules",
    "entry_from_experience",
    "extract_code",
    "first_prompt",
    "load_task",
    "no_memory_baseline",
    "nominal_baseline",
    "outcome_from_state",
    "render_lessons",
    "repair_message",
    "retrieve_entries",
    "run_instance",
    "solve",
    "summary_notes",
    "support_rule",
    "to_experience",
]
