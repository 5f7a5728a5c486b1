"""Value types of the LLM layer: tool calls, per-call records, completions."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from optiforge.errors import LLMProviderError


class ToolCall(BaseModel):
    """One function call requested by the model.

    ``arguments`` is the decoded JSON object ({} when the model sent invalid JSON);
    ``raw_arguments`` is the string the model sent, for dispatch and error messages.
    """

    model_config = ConfigDict(extra="forbid")

    id: str
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    raw_arguments: str = "{}"

    @classmethod
    def from_openai(cls, call: dict[str, Any]) -> ToolCall:
        """Build from an OpenAI-format ``{"id", "function": {"name", "arguments"}}`` dict."""
        fn = call.get("function") or {}
        raw = fn.get("arguments")
        if isinstance(raw, dict):
            raw = json.dumps(raw)
        raw = raw if isinstance(raw, str) and raw.strip() else "{}"
        try:
            decoded = json.loads(raw)
        except json.JSONDecodeError:
            decoded = {}
        return cls(
            id=str(call.get("id") or ""),
            name=str(fn.get("name") or ""),
            arguments=decoded if isinstance(decoded, dict) else {},
            raw_arguments=raw,
        )


class CallRecord(BaseModel):
    """What one logical LLM call cost (retries folded in; re-asks are separate calls)."""

    model_config = ConfigDict(extra="forbid")

    model: str
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    cost_known: bool = False
    """False when the price map does not know the model (local servers): cost_usd is 0."""
    latency_s: float = 0.0
    cached: bool = False
    """Served from the ResponseCache: no provider request, no budget charge."""
    replayed: bool = False
    """Served from a Cassette in replay mode (charged like the recorded call)."""
    attempts: int = 1
    """Provider requests made for this call (1 + retries); 0 for cache/cassette hits."""
    request_key: str = ""

    @property
    def tokens(self) -> int:
        """tokens_in + tokens_out."""
        return self.tokens_in + self.tokens_out


class ProviderReply(BaseModel):
    """The provider-independent part of one chat-completion answer (what caches store)."""

    model_config = ConfigDict(extra="forbid")

    message: dict[str, Any]
    """Assistant message in OpenAI format: role, content, optional tool_calls."""
    finish_reason: str | None = None
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    cost_known: bool = False

    @classmethod
    def from_response(
        cls, resp: Any, model: str, *, cost_usd: float = 0.0, cost_known: bool = False
    ) -> ProviderReply:
        """The reply of an OpenAI-shaped chat-completion response (litellm's or ``openai``'s).

        Raises:
            LLMProviderError: the response has no choices.
        """
        if not getattr(resp, "choices", None):
            raise LLMProviderError(f"{model}: provider returned no choices")
        choice = resp.choices[0]
        raw = choice.message.model_dump() if hasattr(choice.message, "model_dump") else {}
        message: dict[str, Any] = {"role": "assistant", "content": raw.get("content")}
        if raw.get("tool_calls"):
            message["tool_calls"] = [
                {
                    "id": c.get("id"),
                    "type": "function",
                    "function": {
                        "name": (c.get("function") or {}).get("name"),
                        "arguments": (c.get("function") or {}).get("arguments"),
                    },
                }
                for c in raw["tool_calls"]
            ]
        usage = getattr(resp, "usage", None)
        return cls(
            message=message,
            finish_reason=getattr(choice, "finish_reason", None),
            tokens_in=int(getattr(usage, "prompt_tokens", 0) or 0),
            tokens_out=int(getattr(usage, "completion_tokens", 0) or 0),
            cost_usd=cost_usd,
            cost_known=cost_known,
        )


class Completion(BaseModel):
    """The result of ``LLM.complete``."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    text: str
    tool_calls: list[ToolCall] = Field(default_factory=list)
    parsed: BaseModel | None = None
    """Instance of the requested schema, or None when no schema was asked for."""
    record: CallRecord
    """Record of the final provider call (earlier re-asks were traced and charged)."""
    finish_reason: str | None = None
    message: dict[str, Any]
    """Assistant message dict, ready to append to the conversation."""
    reasks: int = 0
    """How many times the schema re-ask loop asked again."""
