"""In-process LLM doubles: ``ScriptedLLM`` (a list of replies) and ``FunctionLLM`` (a function).

Both subclass ``BaseLLM``, so schema parsing/re-asks, budget charging, caching, cassettes
and tracing are the production code paths; only the provider request is simulated.
Reply items:

- ``"text"``: an assistant message;
- ``{"content": ..., "tool_calls": [{"name": "f", "arguments": {...} | "raw json"}]}``;
- a pydantic model instance: its JSON as the text;
- an exception instance or ``Raise(exc)``: raised from the provider call;
- ``Sleep(seconds, then=item)``: wait, then behave like ``item``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from optiforge.llm.base import BaseLLM
from optiforge.llm.types import ProviderReply


class ScriptExhausted(AssertionError):
    """A ScriptedLLM was called more often than it has scripted outputs."""


@dataclass(frozen=True)
class Raise:
    """Fault: raise ``exc`` from the provider call."""

    exc: BaseException


@dataclass(frozen=True)
class Sleep:
    """Fault: sleep ``seconds`` (e.g. to exercise wall budgets), then answer ``then``."""

    seconds: float
    then: Any = ""


def _estimate_tokens(obj: Any) -> int:
    return max(1, len(json.dumps(obj, sort_keys=True, default=str)) // 4)


def reply_from_item(item: Any, messages: list[dict[str, Any]], call_no: int) -> ProviderReply:
    """Turn one scripted item into a ProviderReply (raising/sleeping for faults)."""
    while isinstance(item, Sleep):
        time.sleep(item.seconds)
        item = item.then
    if isinstance(item, Raise):
        raise item.exc
    if isinstance(item, BaseException):
        raise item
    if isinstance(item, BaseModel):
        item = item.model_dump_json()
    if isinstance(item, str):
        message: dict[str, Any] = {"role": "assistant", "content": item}
        finish = "stop"
    elif isinstance(item, dict):
        message = {"role": "assistant", "content": item.get("content")}
        finish = "stop"
        if item.get("tool_calls"):
            message["tool_calls"] = [
                {
                    "id": c.get("id", f"call_{call_no}_{i}"),
                    "type": "function",
                    "function": {
                        "name": c["name"],
                        "arguments": c["arguments"]
                        if isinstance(c.get("arguments"), str)
                        else json.dumps(c.get("arguments", {})),
                    },
                }
                for i, c in enumerate(item["tool_calls"])
            ]
            finish = "tool_calls"
    else:
        raise TypeError(f"unsupported scripted reply {item!r:.80} (use str, dict, model, fault)")
    return ProviderReply(
        message=message,
        finish_reason=finish,
        tokens_in=_estimate_tokens(messages),
        tokens_out=_estimate_tokens(message),
        cost_usd=0.0,
        cost_known=True,  # a scripted model is genuinely free
    )


class ScriptedLLM(BaseLLM):
    """Answers each provider call with the next scripted item; fails loudly when exhausted.

    ``calls`` holds the messages of every provider call received, ``requests`` the full
    requests (messages, tools, params). Retries default to 0 so a scripted fault surfaces
    directly; pass ``max_retries`` to exercise the retry path.
    """

    ordered_replies = True
    """Replies follow the order calls arrive in, not their content: callers must not make
    concurrent calls to it (``agents.kit.ask.complete_all`` asks one after another)."""

    def __init__(self, outputs: list[Any], *, model: str = "scripted", **kwargs: Any) -> None:
        kwargs.setdefault("max_retries", 0)
        kwargs.setdefault("backoff_base_s", 0.0)
        super().__init__(**kwargs)
        self.model = model
        self.outputs = list(outputs)
        self.calls: list[list[dict[str, Any]]] = []
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        """Scripted outputs not yet used."""
        return len(self.outputs) - len(self.calls)

    def _send(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        params: dict[str, Any],
        json_mode: bool,
        schema: type[BaseModel] | None = None,
    ) -> ProviderReply:
        with self._lock:
            n = len(self.calls)
            self.calls.append(messages)
            self.requests.append({"messages": messages, "tools": tools, "params": params})
            if n >= len(self.outputs):
                last_user = next(
                    (m.get("content") for m in reversed(messages) if m.get("role") == "user"), ""
                )
                raise ScriptExhausted(
                    f"ScriptedLLM exhausted: provider call #{n + 1} but only "
                    f"{len(self.outputs)} outputs scripted (last user message: {str(last_user)[:80]!r})"
                )
            item = self.outputs[n]
        return reply_from_item(item, messages, n + 1)


class FunctionLLM(BaseLLM):
    """Answers with ``fn(messages, tools, schema)``, which returns a reply item (see module doc)."""

    def __init__(
        self,
        fn: Callable[
            [list[dict[str, Any]], list[dict[str, Any]] | None, type[BaseModel] | None], Any
        ],
        *,
        model: str = "function",
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("max_retries", 0)
        kwargs.setdefault("backoff_base_s", 0.0)
        super().__init__(**kwargs)
        self.model = model
        self.fn = fn
        self.calls: list[list[dict[str, Any]]] = []

    def _send(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        params: dict[str, Any],
        json_mode: bool,
        schema: type[BaseModel] | None = None,
    ) -> ProviderReply:
        self.calls.append(messages)
        item = self.fn(messages, tools, schema)
        return reply_from_item(item, messages, len(self.calls))
