"""run_tool_loop: bounded, dispatches calls, feeds validation errors back to the model."""

from __future__ import annotations

import json
from typing import Any

from optiforge.llm import LiteLLM, run_tool_loop
from optiforge.testing import OpenAICompatServer, ScriptedLLM
from optiforge.tools import ToolRegistry


class ListTracer:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def event(self, kind: str, **fields: Any) -> None:
        self.events.append((kind, fields))


def calculator() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return reg


def react(body: dict[str, Any]) -> dict[str, Any] | str:
    """A 'model' that reads the conversation: first a bad call, then a fix, then an answer."""
    msgs = body["messages"]
    tool_msgs = [m for m in msgs if m.get("role") == "tool"]
    if not tool_msgs:
        return {"tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": "two", "b": 3}}]}
    last = tool_msgs[-1]["content"]
    if last.startswith("error:"):
        return {"tool_calls": [{"id": "c2", "name": "add", "arguments": {"a": 2, "b": 3}}]}
    return f"The sum is {last}."


def test_loop_through_local_server_recovers_from_bad_args(
    openai_server: OpenAICompatServer,
) -> None:
    openai_server.script([], handler=react)
    tracer = ListTracer()
    llm = LiteLLM("openai/test-model", api_base=openai_server.url, api_key="sk-test", timeout_s=5)
    result = run_tool_loop(
        llm, [{"role": "user", "content": "What is 2 + 3?"}], calculator(), tracer=tracer
    )
    assert result.finished and result.final_text == "The sum is 5."
    assert result.steps == 3 and result.tool_calls == 2 and openai_server.count == 3
    assert openai_server.requests[0]["tools"][0]["function"]["name"] == "add"
    second = openai_server.requests[1]["messages"]
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "c1"
    assert "a: Input should be a valid integer" in second[-1]["content"]
    assert openai_server.requests[2]["messages"][-1]["content"] == "5"
    calls = [f for k, f in tracer.events if k == "tool_call"]
    assert [(c["name"], c["ok"]) for c in calls] == [("add", False), ("add", True)]
    assert all(c["duration_s"] >= 0 for c in calls)
    assert result.messages[-1] == {"role": "assistant", "content": "The sum is 5."}


def test_loop_is_bounded_and_reports_unknown_tools() -> None:
    call = {"tool_calls": [{"name": "mul", "arguments": {"a": 1}}]}
    llm = ScriptedLLM([call] * 3)
    result = run_tool_loop(llm, [{"role": "user", "content": "go"}], calculator(), max_steps=3)
    assert not result.finished and result.steps == 3 and result.final_text == ""
    assert len(llm.calls) == 3
    tool_msg = llm.calls[1][-1]
    assert tool_msg["role"] == "tool" and "unknown tool 'mul'" in tool_msg["content"]
    assert json.dumps(result.messages)  # serialisable trajectory
