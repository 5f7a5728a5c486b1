"""Kernel Discovery's graph nodes called directly with a hand-built runtime context."""

from __future__ import annotations

import pytest
from langgraph.runtime import Runtime

from optiforge.agents.kernel_discovery import KernelDiscoveryConfig, nodes
from optiforge.agents.kit.context import AgentContext
from optiforge.evals.registry import resolve_task
from optiforge.evals.suites.hdbo.protocol import HDBOTask


def _ctx(budget: int) -> nodes.Ctx:
    task = resolve_task("hdbo/branin2_in_100@dev")
    assert isinstance(task, HDBOTask)
    return AgentContext(task=task, config=KernelDiscoveryConfig(refresh_every=3), seed=1,
                        eval_budget=budget)  # fmt: skip


def test_design_then_route_then_a_failed_refresh_round_falls_back() -> None:
    ctx = _ctx(budget=12)
    rt = Runtime(context=ctx)
    state = nodes.design({}, rt)
    (row,) = state["bo"]
    assert len(row["y"]) == ctx.task.n_init and state["kernel"] is None
    assert nodes.route(state, rt) == "refresh"  # no kernel yet
    # the design's session is the run's cached one: the next node reuses it
    assert nodes.session(state, ctx) is nodes.session(state, ctx)
    state = {**state, "refresh_failed": 0}  # round 0's refresh raised
    with pytest.warns(UserWarning, match="using a random point"):
        state.update(nodes.bo_round(state, rt))  # type: ignore[typeddict-item]
    assert len(state["bo"]) == 2 and state["bo"][1]["fallback"]  # a random point, counted
    state = {**state, "kernel": {"expression": "RBF_ARD"}}
    assert nodes.route(state, rt) == "bo_round"  # round 1: no refresh due (every 3)
    spent = {**state, "bo": [*state["bo"], {"y": [0.0]}]}  # the budget (12) is spent
    assert nodes.route(spent, rt) == "finish"


def test_the_compositional_baseline_state_picks_the_offline_proposer_even_with_an_llm() -> None:
    ctx = _ctx(budget=12)
    ctx.llm = object()  # type: ignore[assignment]  # any model: only its presence matters here
    assert nodes.proposer_of({}, ctx).name == "llm"
    assert nodes.proposer_of({"offline": True}, ctx).name == "compositional"
