"""terminal's graph node and outcome, called directly with a hand-built runtime context."""

from __future__ import annotations

import json
from typing import Any

from langgraph.runtime import Runtime

from optiforge.agents.kit.context import AgentContext
from optiforge.agents.terminal import TerminalConfig, nodes
from optiforge.agents.terminal.problem import base_harness
from optiforge.evals.registry import resolve_task
from optiforge.evals.suites.saddle.protocol import SaddleTask
from optiforge.testing import FunctionLLM

TASK = "saddle/normalize-names"


def _ctx(llm: Any, config: TerminalConfig) -> nodes.Ctx:
    task = resolve_task(TASK)
    assert isinstance(task, SaddleTask)
    return AgentContext(llm=llm, task=task, config=config)


def test_the_episode_node_works_the_task_through_the_configs_harness() -> None:
    sol = resolve_task(TASK).solution()

    def model(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        n = sum(1 for m in messages if m["role"] == "assistant")
        return json.dumps({"command": sol[n]} if n < len(sol) else {"submit": True})

    harness = base_harness().model_copy(update={"max_steps": 1})  # the harness object itself
    ctx = _ctx(FunctionLLM(model), TerminalConfig(harness=harness))
    ep = nodes.episode({}, Runtime(context=ctx))["episode"]
    # one turn allowed: the first command ran, the episode hit the step limit
    assert ep["commands"] == sol[:1] and ep["stop"] == "step limit"
    assert ep["harness"] == harness.version != base_harness().version
    out = nodes.outcome({"episode": ep}, ctx)
    assert out.best_candidate == {"commands": sol[:1]} and out.failure is None
    assert out.extra == {"steps": 1, "llm_calls": 1, "tokens": ep["tokens"],
                         "harness": harness.version}  # fmt: skip


def test_without_a_model_the_node_runs_nothing_and_the_outcome_says_why() -> None:
    ctx = _ctx(None, TerminalConfig())
    ep = nodes.episode({}, Runtime(context=ctx))["episode"]
    assert ep["stop"] == nodes.NO_LLM and ep["commands"] == []
    out = nodes.outcome({"episode": ep}, ctx)
    assert out.failure is not None and "needs an LLM" in out.failure
