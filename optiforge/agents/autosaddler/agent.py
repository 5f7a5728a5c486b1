"""AutoSaddler's tuning loop as a durable graph: ``start`` -> ``iterate``* -> end (the
nodes: ``nodes.py``).

- **start**: the dev tasks are shuffled (by the run seed) into training tasks and
  ``val_tasks`` validation tasks; the base harness runs the validation batch once.
- **iterate** (one round): run the current harness on the next mini-batch (``batch``
  training tasks x ``runs`` seeds, fresh seeds each round); diagnose every failed
  trajectory (``diagnosis``: the whole trace, or its last error); propose (the LLM, or the
  rule library: one patch to one part, or ``whole``); apply; gate (``problem.py``: the paired
  validation gate, or the trajectory-repair ablation); record the proposal with its
  diagnosis and result in memory (an ``Experience`` tagged ``autosaddler``) and in the
  run's state; continue from the accepted harness.

The heldout split is never run while tuning (``report.measure`` reports it afterwards).
Every episode is scored by the task's own verifier; the loop never reads an agent's claim.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langgraph.graph import START, StateGraph

from optiforge.agents.autosaddler import nodes
from optiforge.agents.autosaddler.config import SaddlerConfig
from optiforge.agents.autosaddler.problem import SaddlerState, Target
from optiforge.agents.kit import AgentRun, RunContext
from optiforge.agents.kit.context import AgentContext
from optiforge.agents.spec import AgentOutcome
from optiforge.errors import ConfigError


def build(target: Target, config: SaddlerConfig, budget: int | None = None) -> AgentRun:
    """The tuning run for ``target`` (drive it with a ``RunContext``: its ``llm`` is the
    proposer, None for the rule library; its ``memory`` receives every proposal).
    ``budget`` is unused: a run is ``config.iterations`` rounds."""
    n_dev = len({t.name for t in target.tasks("dev")})
    if n_dev <= config.val_tasks:
        raise ConfigError(f"{target.name}: {n_dev} dev tasks cannot give {config.val_tasks} "
                          "validation tasks and a training set")  # fmt: skip
    g = StateGraph(SaddlerState, context_schema=AgentContext)
    g.add_node("start", nodes.start)
    g.add_node("iterate", nodes.iterate)
    g.add_edge(START, "start")
    g.add_edge("start", "iterate")
    g.add_conditional_edges("iterate", nodes.more)
    return AgentRun(graph=g, outcome=nodes.outcome, what="an autosaddler run",
                    thread_id=f"saddler-{target.name}", recursion_limit=config.iterations + 10,
                    task=target, config=config, eval_budget=budget)  # fmt: skip


def build_tuning(target: Target, config: SaddlerConfig) -> AgentRun:
    """``build`` (the name before the spec)."""
    return build(target, config)


def tune(target: Target, config: SaddlerConfig, ctx: RunContext, *, resume: bool = False,
         on_round: Callable[[dict[str, Any]], None] | None = None) -> AgentOutcome:  # fmt: skip
    """Run (or resume, with ``ctx.run_dir``) a tuning run; the outcome's ``best_candidate``
    is the tuned harness's files. ``on_round`` gets each round's record as it ends."""
    run = build(target, config)
    actx = run.context(ctx)
    if on_round is not None:  # a live listener: a per-run value, never checkpointed
        assert isinstance(actx, AgentContext)
        actx.memo(nodes.ON_ROUND, lambda: on_round)
    final = run.drive(actx, resume=resume)
    return run.outcome(final.state, actx)
