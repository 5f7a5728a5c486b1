"""A bounded tool-calling loop: ask, dispatch the model's tool calls, feed results back."""

from __future__ import annotations

import time
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from optiforge.errors import ConfigError
from optiforge.llm.base import LLM
from optiforge.llm.types import CallRecord


class ToolOutcome(Protocol):
    """What a dispatcher returns for one call (``optiforge.tools.ToolResult`` fits)."""

    ok: bool
    content: str


class ToolDispatcher(Protocol):
    """What the loop needs from a registry (``optiforge.tools.ToolRegistry`` fits)."""

    def specs(self) -> list[dict[str, Any]]:
        """OpenAI-format tool specs."""
        ...

    def dispatch(self, name: str, arguments_json: str) -> ToolOutcome:
        """Run tool ``name``; invalid arguments/unknown tools come back as ``ok=False`` text."""
        ...


class ToolLoopResult(BaseModel):
    """Outcome of ``run_tool_loop``.

    ``finished`` is False when ``max_steps`` LLM calls were made and the model was still
    calling tools; ``final_text`` is then "".
    """

    model_config = ConfigDict(extra="forbid")

    final_text: str
    messages: list[dict[str, Any]]
    steps: int
    """LLM calls made."""
    tool_calls: int = 0
    finished: bool = True
    records: list[CallRecord] = Field(default_factory=list)


def run_tool_loop(
    llm: LLM,
    messages: list[dict[str, Any]],
    registry: ToolDispatcher,
    *,
    max_steps: int = 8,
    tracer: Any = None,
    **params: Any,
) -> ToolLoopResult:
    """Alternate LLM calls and tool dispatches until the model answers without tool calls.

    Each dispatched call emits a ``tool_call`` event (name, ok, duration_s, step). Tool
    failures (bad arguments, unknown tool, exceptions) go back to the model as the tool's
    message so it can correct itself; they never end the loop.
    """
    if max_steps < 1:
        raise ConfigError(f"max_steps must be >= 1, got {max_steps}")
    msgs = [dict(m) for m in messages]
    specs = registry.specs()
    records: list[CallRecord] = []
    n_calls = 0
    for step in range(1, max_steps + 1):
        completion = llm.complete(msgs, tools=specs or None, **params)
        records.append(completion.record)
        msgs.append(completion.message)
        if not completion.tool_calls:
            return ToolLoopResult(
                final_text=completion.text,
                messages=msgs,
                steps=step,
                tool_calls=n_calls,
                records=records,
            )
        for call in completion.tool_calls:
            t0 = time.monotonic()
            outcome = registry.dispatch(call.name, call.raw_arguments)
            duration = time.monotonic() - t0
            n_calls += 1
            if tracer is not None:
                tracer.event(
                    "tool_call", name=call.name, ok=bool(outcome.ok), duration_s=duration, step=step
                )
            msgs.append(
                {
                    "role": "tool",
                    "tool_call_id": call.id,
                    "name": call.name,
                    "content": outcome.content,
                }
            )
    return ToolLoopResult(
        final_text="",
        messages=msgs,
        steps=max_steps,
        tool_calls=n_calls,
        finished=False,
        records=records,
    )
