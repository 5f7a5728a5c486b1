"""The ``LLM`` protocol and ``BaseLLM``: budget, cache, cassette, retries, tracing, schema re-ask.

Implementations only provide ``_send`` (one provider request -> ``ProviderReply``, raising
our ``LLMError`` taxonomy); everything else is shared here so LiteLLM and the test doubles
in ``optiforge.testing`` behave identically.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import time
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from optiforge.errors import (
    BudgetExceeded,
    ConfigError,
    LLMError,
    LLMProviderError,
    LLMRateLimited,
    LLMTimeout,
    StructuredOutputError,
)
from optiforge.llm.budget import Budget
from optiforge.llm.recording import Cassette, ResponseCache, request_key
from optiforge.llm.structured import (
    SchemaParseError,
    parse_structured,
    reask_loop,
    reask_message,
    with_schema_instruction,
)
from optiforge.llm.types import CallRecord, Completion, ProviderReply, ToolCall


def _reply_text(reply: ProviderReply) -> str:
    """The reply's text ("" when it has none)."""
    text = reply.message.get("content") or ""
    return text if isinstance(text, str) else str(text)


_ROLES = {"system", "user", "assistant", "tool", "developer", "function"}


@runtime_checkable
class LLM(Protocol):
    """Anything that completes a chat: LiteLLM, ScriptedLLM, FunctionLLM."""

    model: str

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        schema: type[BaseModel] | None = None,
        **params: Any,
    ) -> Completion:
        """One chat completion; ``schema`` asks for JSON parsed into that pydantic model."""
        ...

    async def acomplete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        schema: type[BaseModel] | None = None,
        **params: Any,
    ) -> Completion:
        """Async ``complete``."""
        ...


def validate_messages(messages: Any) -> None:
    """Raise ConfigError unless ``messages`` is a non-empty list of role-bearing dicts."""
    if not isinstance(messages, list) or not messages:
        raise ConfigError("messages must be a non-empty list of {'role', 'content'} dicts")
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in _ROLES:
            raise ConfigError(
                f"messages[{i}] must be a dict with role in {sorted(_ROLES)}, got {m!r:.120}"
            )


def is_retryable(err: LLMError) -> bool:
    """429, timeouts and 5xx/connection failures are retried; auth/context/4xx are not."""
    if isinstance(err, LLMRateLimited | LLMTimeout):
        return True
    return isinstance(err, LLMProviderError) and bool(getattr(err, "retryable", False))


class BaseLLM:
    """Shared machinery of every LLM implementation.

    Args (keyword):
        budget: checked before and charged after every provider call.
        cache: a hit returns the stored reply without a provider call or budget charge.
        cassette: ``record`` appends every provider reply; ``replay`` serves replies from
            the file (charged like the recorded call so budgets behave as in the original).
        tracer: gets one ``llm_call`` event per logical call (object with ``event``).
        max_retries: retries after the first attempt on 429/5xx/timeout/connection errors.
        backoff_base_s / backoff_max_s / jitter: exponential backoff ``base * 2**(k-1)``,
            capped, times ``U(1, 1 + jitter)``; a Retry-After from the server is honoured
            (capped by ``max_retry_after_s``).
        max_reasks: schema re-asks after the first reply before StructuredOutputError.
    """

    model: str = "base"
    supports_grammar: bool = False
    """Whether ``grammar=`` (a GBNF text, ``optiforge.llm.grammars``) reaches the model.
    Where it does not, the parameter is dropped before the request and its cache key, so
    a request to a hosted model is the same with or without it."""

    def __init__(
        self,
        *,
        budget: Budget | None = None,
        cache: ResponseCache | None = None,
        cassette: Cassette | None = None,
        tracer: Any = None,
        max_retries: int = 4,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 30.0,
        jitter: float = 0.25,
        max_retry_after_s: float = 60.0,
        max_reasks: int = 2,
        params: dict[str, Any] | None = None,
    ) -> None:
        if max_retries < 0 or max_reasks < 0:
            raise ConfigError("max_retries and max_reasks must be >= 0")
        self.budget = budget
        self.cache = cache
        self.cassette = cassette
        self.tracer = tracer
        self.max_retries = max_retries
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self.jitter = jitter
        self.max_retry_after_s = max_retry_after_s
        self.max_reasks = max_reasks
        self.params: dict[str, Any] = dict(params or {})
        self._rng = random.Random()

    # -- to implement -----------------------------------------------------------------
    def _send(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        params: dict[str, Any],
        json_mode: bool,
        schema: type[BaseModel] | None = None,
    ) -> ProviderReply:
        """Make one provider request; raise an ``LLMError`` subclass on failure.

        ``messages`` already carry the schema instruction; ``schema`` is informational
        (FunctionLLM hands it to its function).
        """
        raise NotImplementedError

    def _supports_json_mode(self) -> bool:
        """Whether the provider accepts ``response_format={"type": "json_object"}``."""
        return False

    # -- public API -------------------------------------------------------------------
    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        schema: type[BaseModel] | None = None,
        **params: Any,
    ) -> Completion:
        """One chat completion (with schema re-asks when ``schema`` is given)."""
        validate_messages(messages)
        if schema is not None and not (isinstance(schema, type) and issubclass(schema, BaseModel)):
            raise ConfigError(f"schema must be a pydantic BaseModel subclass, got {schema!r}")
        req = with_schema_instruction(messages, schema) if schema else [dict(m) for m in messages]

        def send(msgs: list[dict[str, Any]], k: int) -> tuple[int, ProviderReply, CallRecord]:
            return (k, *self._call(msgs, tools, schema, params))

        def parse(got: tuple[int, ProviderReply, CallRecord]) -> BaseModel | None:
            k, reply, _ = got
            if schema is None or reply.message.get("tool_calls"):
                return None
            try:
                parsed = parse_structured(_reply_text(reply), schema)
            except SchemaParseError as e:
                self._trace_structured(schema, k, str(e))
                raise
            self._trace_structured(schema, k, None)
            return parsed

        def reask(
            msgs: list[dict[str, Any]], got: tuple[int, ProviderReply, CallRecord], error: str
        ) -> list[dict[str, Any]]:
            return [*msgs, _assistant_message(got[1].message), reask_message(error)]

        asked = reask_loop(send, parse, req, tries=self.max_reasks + 1, reask=reask)
        if not asked.valid or asked.reply is None:
            assert schema is not None  # only a schema reply can be refused
            raise StructuredOutputError(
                f"{self.model}: reply never matched {schema.__name__} after "
                f"{asked.asks} tries; last problem: {asked.errors[-1]}"
            ) from None
        _, reply, record = asked.reply
        return Completion(
            text=_reply_text(reply),
            tool_calls=[ToolCall.from_openai(c) for c in reply.message.get("tool_calls") or []],
            parsed=asked.value,
            record=record,
            finish_reason=reply.finish_reason,
            message=_assistant_message(reply.message),
            reasks=asked.asks - 1,
        )

    async def acomplete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        schema: type[BaseModel] | None = None,
        **params: Any,
    ) -> Completion:
        """Async ``complete``: runs the same code path in a worker thread."""
        return await asyncio.to_thread(
            self.complete, messages, tools=tools, schema=schema, **params
        )

    # -- internals --------------------------------------------------------------------
    def _prepare(self) -> None:
        """One-off set-up before the first call (e.g. importing the client library); not
        counted in any call's latency. The base class has none."""

    def prewarm(self) -> None:
        """Start the one-off set-up in a background thread, so it overlaps with work that
        comes before the first call (a run's seed evaluations); the first call waits for
        it only if it has not finished."""
        import threading

        threading.Thread(target=self._prepare, name="llm-prewarm", daemon=True).start()

    def _call(
        self,
        req: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        schema: type[BaseModel] | None,
        params: dict[str, Any],
    ) -> tuple[ProviderReply, CallRecord]:
        self._prepare()  # one-off client set-up is not the call's latency
        merged = {**self.params, **params}
        if not self.supports_grammar:
            merged.pop("grammar", None)
        elif merged.get("grammar") is not None and not isinstance(merged["grammar"], str):
            raise ConfigError("grammar must be a GBNF text (optiforge.llm.grammars)")
        json_mode = schema is not None and self._supports_json_mode()
        key_params = {**merged, "_json_mode": json_mode}
        key = request_key(self.model, req, tools, schema, key_params)
        t0 = time.monotonic()

        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                record = self._record(hit, key, t0, attempts=0, cached=True)
                self._trace(record, messages=req, reply=hit)
                return hit, record

        slot = self.budget.call_slot() if self.budget is not None else contextlib.nullcontext()
        with slot:
            if self.cassette is not None and self.cassette.mode == "replay":
                reply = self.cassette.replay(key, req)
                record = self._record(reply, key, t0, attempts=0, replayed=True)
            else:
                try:
                    reply, attempts = self._send_with_retries(req, tools, merged, json_mode, schema)
                except (LLMError, BudgetExceeded) as e:
                    failed = CallRecord(
                        model=self.model,
                        latency_s=time.monotonic() - t0,
                        attempts=int(getattr(e, "attempts", 1)),
                        request_key=key,
                    )
                    if self.budget is not None:
                        self.budget.charge(failed)  # the provider was asked; it counts
                    self._trace(failed, error=f"{type(e).__name__}: {e}", messages=req)
                    raise
                record = self._record(reply, key, t0, attempts=attempts)
                if self.cassette is not None:
                    self.cassette.record(key, self.model, req, reply)
                if self.cache is not None:
                    self.cache.put(key, self.model, reply)
            if self.budget is not None:
                self.budget.charge(record)
        self._trace(record, messages=req, reply=reply)
        return reply, record

    def _send_with_retries(
        self,
        req: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        params: dict[str, Any],
        json_mode: bool,
        schema: type[BaseModel] | None = None,
    ) -> tuple[ProviderReply, int]:
        attempts = 0
        while True:
            attempts += 1
            try:
                return self._send(req, tools, params, json_mode, schema), attempts
            except LLMError as e:
                check_wall = getattr(self.budget, "check_wall", None)
                if callable(check_wall) and is_retryable(e):
                    # a timeout may be the wall cap cutting the call (its timeout is clamped
                    # to the time left): no retry past the cap, the search stops on it
                    check_wall()
                if not is_retryable(e) or attempts > self.max_retries:
                    e.attempts = attempts  # type: ignore[attr-defined]
                    if attempts > 1 and e.args:
                        e.args = (f"{e.args[0]} (gave up after {attempts} attempts)", *e.args[1:])
                    raise
                time.sleep(self._backoff_s(attempts, getattr(e, "retry_after", None)))

    def _backoff_s(self, attempt: int, retry_after: float | None) -> float:
        delay = min(self.backoff_max_s, self.backoff_base_s * 2 ** (attempt - 1))
        delay *= 1.0 + self._rng.uniform(0.0, self.jitter)
        if retry_after is not None and retry_after > 0:
            delay = max(delay, min(retry_after, self.max_retry_after_s))
        return delay

    def _record(
        self,
        reply: ProviderReply,
        key: str,
        t0: float,
        *,
        attempts: int,
        cached: bool = False,
        replayed: bool = False,
    ) -> CallRecord:
        return CallRecord(
            model=self.model,
            tokens_in=reply.tokens_in,
            tokens_out=reply.tokens_out,
            cost_usd=0.0 if cached else reply.cost_usd,
            cost_known=reply.cost_known,
            latency_s=time.monotonic() - t0,
            cached=cached,
            replayed=replayed,
            attempts=attempts,
            request_key=key,
        )

    def _trace_structured(self, schema: type[BaseModel], reask: int, error: str | None) -> None:
        """One ``llm_structured`` event per reply to a schema request: whether it parsed
        (and why not), so a run says how often its model met each schema."""
        if self.tracer is not None:
            self.tracer.event("llm_structured", model=self.model, schema=schema.__name__,
                              reask=reask, ok=error is None, error=_clip(error))  # fmt: skip

    def _trace(
        self,
        record: CallRecord,
        error: str | None = None,
        *,
        messages: list[dict[str, Any]] | None = None,
        reply: ProviderReply | None = None,
    ) -> None:
        """One ``llm_call`` event: the call record and its transcript (the prompt's last
        ``TRANSCRIPT_MESSAGES`` messages and the reply, each cut at ``TRANSCRIPT_CHARS``),
        so a report can show what was asked and answered without a cassette."""
        if self.tracer is None:
            return
        fields = record.model_dump()
        fields["ok"] = error is None
        if error is not None:
            fields["error"] = error
        if messages is not None:
            fields["messages"] = [
                {"role": m.get("role"), "content": _clip(m.get("content"))}
                for m in messages[-TRANSCRIPT_MESSAGES:]
            ]
        if reply is not None:
            fields["reply"] = _clip(reply.message.get("content"))
            if reply.message.get("tool_calls"):
                fields["reply_tool_calls"] = _clip(json.dumps(reply.message["tool_calls"]))
        self.tracer.event("llm_call", **fields)


TRANSCRIPT_MESSAGES = 20
TRANSCRIPT_CHARS = 8000


def _clip(content: Any) -> str | None:
    """A message's text for the event log, cut at ``TRANSCRIPT_CHARS`` (None stays None)."""
    if content is None:
        return None
    text = content if isinstance(content, str) else json.dumps(content, default=str)
    if len(text) <= TRANSCRIPT_CHARS:
        return text
    return text[:TRANSCRIPT_CHARS] + f"... [{len(text) - TRANSCRIPT_CHARS} more characters]"


def _assistant_message(message: dict[str, Any]) -> dict[str, Any]:
    """Normalise a provider message into an appendable OpenAI-format assistant dict."""
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    calls = message.get("tool_calls")
    if calls:
        out["tool_calls"] = [
            {
                "id": c.get("id"),
                "type": "function",
                "function": {
                    "name": (c.get("function") or {}).get("name"),
                    "arguments": (c.get("function") or {}).get("arguments") or "{}",
                },
            }
            for c in calls
        ]
    return out
