"""``LiteLLM``: the LLM contract over ``litellm.completion`` (any provider string works).

The calls run in a process of their own (``optiforge.llm.provider_process``), where
litellm is imported (~2.5 s) only after ``LITELLM_LOCAL_MODEL_COST_MAP=True`` is set, so
nothing reaches the internet at import; ``in_process=True`` runs them here instead.
litellm's and the openai client's own retries are switched off: ``BaseLLM`` retries.
"""

from __future__ import annotations

import os
import threading
from typing import Any

from pydantic import BaseModel

from optiforge.errors import (
    ConfigError,
    LLMError,
)
from optiforge.llm.base import BaseLLM
from optiforge.llm.litellm_calls import (
    KEYED_PREFIXES,
    PLACEHOLDER_KEY,
    complete,
    import_litellm,
    key_variable,
    supports_json_mode,
    warm_up,
)
from optiforge.llm.provider_process import shared
from optiforge.llm.types import ProviderReply


class LiteLLM(BaseLLM):
    """Chat completions through litellm; ``model`` is any litellm provider string.

    Args:
        model: e.g. ``openai/gpt-4o-mini``, ``anthropic/claude-3-5-haiku-latest``,
            ``ollama/llama3.1``, ``hosted_vllm/<name>``, or ``openai/<name>`` with ``api_base``
            for any OpenAI-compatible server.
        api_base / api_key: passed through; without api_key litellm reads the provider's
            environment variable (see ``optiforge.llm.providers``). An OpenAI-compatible
            ``api_base`` with no key set gets ``PLACEHOLDER_KEY`` (local servers need none).
        timeout_s: per request; a slower answer raises LLMTimeout (retried).
        json_mode: send ``response_format={"type": "json_object"}`` with a schema; None
            asks litellm whether the provider supports it. The schema is always also
            described in the prompt.
        response_schema: with a schema, send it as OpenAI's ``json_schema`` response format
            (structured outputs: OpenAI, vLLM, llama.cpp, the local model's server, which
            enforce it) instead of ``json_object``.
        in_process: call litellm in this process (real tracebacks, monkeypatching)
            instead of in the provider process (``optiforge.llm.provider_process``: its
            ~2.5 s import and ~4 ms of Python per call off this process's interpreter
            lock). The same calls, replies and errors either way.
        Other keyword arguments: see ``BaseLLM`` (budget, cache, cassette, tracer, retries).
    """

    def __init__(
        self,
        model: str,
        *,
        api_base: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        max_retries: int = 4,
        temperature: float | None = None,
        max_tokens: int | None = None,
        json_mode: bool | None = None,
        response_schema: bool = False,
        in_process: bool = False,
        **kwargs: Any,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError("LiteLLM needs a model string such as 'openai/gpt-4o-mini'")
        if model.strip().lower() == "offline":
            raise ConfigError("model 'offline' means no LLM; use make_llm() which returns None")
        if timeout_s <= 0:
            raise ConfigError(f"timeout_s must be > 0, got {timeout_s}")
        params = dict(kwargs.pop("params", None) or {})
        if temperature is not None:
            params["temperature"] = temperature
        if max_tokens is not None:
            params["max_tokens"] = max_tokens
        super().__init__(max_retries=max_retries, params=params, **kwargs)
        self.model = model.strip()
        self.api_base = api_base
        if api_key is None and api_base and self.model.lower().startswith(KEYED_PREFIXES):
            var = key_variable(self.model)
            if not (var and os.environ.get(var)):
                api_key = PLACEHOLDER_KEY
        self.api_key = api_key
        self.timeout_s = float(timeout_s)
        self.json_mode = json_mode
        self.response_schema = response_schema
        self.in_process = in_process
        self._warmed = False
        self._warm_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LiteLLM(model={self.model!r}, api_base={self.api_base!r})"

    def _prepare(self) -> None:
        """Import litellm (~2.5 s) and warm its call path (~0.1 s) once, in the provider
        process (or here, ``in_process``): neither may show up as the first call's
        latency, and a prewarm starts both in the background."""
        if self._warmed:
            return
        if not self.in_process:
            try:
                shared().warm(self.model, self.api_base).result()
            except LLMError:
                return  # the call itself reports it (and starts a new provider process)
            self._warmed = True
            return
        with self._warm_lock:
            if not self._warmed:
                warm_up(import_litellm(), self.model, self.api_base)
                self._warmed = True

    def prewarm(self) -> None:
        if self.in_process:
            super().prewarm()
            return
        shared().warm(self.model, self.api_base)  # the child works on it; nothing waits

    def _supports_json_mode(self) -> bool:
        if self.json_mode is None:
            if self.in_process:
                self.json_mode = supports_json_mode(import_litellm(), self.model, self.api_base)
            else:
                args = {"model": self.model, "api_base": self.api_base}
                self.json_mode = bool(shared().call("json_mode", args, self.timeout_s))
        return self.json_mode

    def _send(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        params: dict[str, Any],
        json_mode: bool,
        schema: type[BaseModel] | None = None,
    ) -> ProviderReply:
        # a wall cap (``--max-wall-s``) cuts the call in flight: at most the time left
        wall_left = getattr(self.budget, "wall_remaining_s", None)
        left = wall_left() if callable(wall_left) else None
        timeout = self.timeout_s if left is None else max(0.01, min(self.timeout_s, left))
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "timeout": timeout,
            "num_retries": 0,  # our retries are the only ones
            "max_retries": 0,  # ... including the openai client's
            **params,
        }
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key:
            kwargs["api_key"] = self.api_key
        if tools:
            kwargs["tools"] = tools
        if json_mode and schema is not None and self.response_schema:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema.__name__, "schema": schema.model_json_schema()},
            }
        elif json_mode:
            kwargs["response_format"] = {"type": "json_object"}
        if self.in_process:
            return complete(import_litellm(), kwargs, self.model)
        # the child enforces the timeout; this bound only catches a child that hangs
        reply = shared().call("complete", {"kwargs": kwargs, "model": self.model},
                              timeout + (60.0 if left is None else 2.0))  # fmt: skip
        return ProviderReply.model_validate(reply)
