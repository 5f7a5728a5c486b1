"""The ``terminal`` agent's graph: one node runs one episode (``episode.run_episode``).

The candidate is ``{"commands": [...]}``, the commands the episode ran; the harness
re-scores it by replaying them from the task's initial files and running the hidden test
(``SaddleTask.evaluate``). Without an LLM the agent has nothing to act with: the run
fails with that reason (``optiforge.testing.saddle`` holds a simulated model for tests
and for exercising AutoSaddler offline).
"""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from optiforge.agents.kit import AgentRun, RunContext
from optiforge.agents.kit.harness import Harness
from optiforge.agents.spec import AgentOutcome
from optiforge.agents.terminal.config import TerminalConfig
from optiforge.agents.terminal.episode import base_harness, run_episode


class TerminalState(TypedDict, total=False):
    episode: dict[str, Any]


def load_harness(config: TerminalConfig) -> Harness:
    """The config's harness folder, or the base harness."""
    return Harness.load(config.harness) if config.harness else base_harness()


def build(task: Any, config: BaseModel, budget: int | None) -> AgentRun:
    assert isinstance(config, TerminalConfig)
    harness = load_harness(config)  # a bad folder is a ConfigError before anything runs

    def episode(state: TerminalState, runtime: Any) -> dict[str, Any]:
        ctx: RunContext = runtime.context
        if ctx.llm is None:
            return {"episode": {"commands": [], "stop": "no LLM", "steps": 0, "llm_calls": 0,
                                "tokens": 0, "turns": [], "harness": harness.version}}  # fmt: skip
        ep = run_episode(task, harness, ctx.llm, ctx.sandbox, temperature=config.temperature,
                         step_timeout_s=config.step_timeout_s, tracer=ctx.tracer)  # fmt: skip
        ctx.tracer.event("terminal_episode", task=task.name, stop=ep["stop"], steps=ep["steps"],
                         llm_calls=ep["llm_calls"], harness=harness.version)  # fmt: skip
        return {"episode": ep}

    g: StateGraph[Any, Any, Any, Any] = StateGraph(TerminalState, context_schema=RunContext)
    g.add_node("episode", episode)  # type: ignore[call-overload]
    g.add_edge(START, "episode")
    g.add_edge("episode", END)

    def outcome(state: dict[str, Any], ctx: RunContext) -> AgentOutcome:
        ep = state.get("episode") or {}
        failure = None
        if ep.get("stop") == "no LLM":
            failure = (
                "the terminal agent needs an LLM (--model ...): offline it has nothing to act with"
            )
        elif str(ep.get("stop", "")).startswith("llm error"):
            failure = ep["stop"]
        return AgentOutcome(
            best_candidate={"commands": ep.get("commands") or []},
            n_evaluations=0, stop_reason=str(ep.get("stop", "")), failure=failure,
            extra={k: ep.get(k) for k in ("steps", "llm_calls", "tokens", "harness")},
        )  # fmt: skip

    return AgentRun(graph=g, outcome=outcome, what="a terminal run")
