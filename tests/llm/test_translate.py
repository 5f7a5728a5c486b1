"""Exception translation at the litellm boundary and Retry-After parsing."""

from __future__ import annotations

import email.utils
import time

import httpx

from optiforge.errors import (
    LLMAuthError,
    LLMContextWindow,
    LLMProviderError,
    LLMRateLimited,
    LLMTimeout,
)
from optiforge.llm.base import is_retryable
from optiforge.llm.litellm_calls import import_litellm, retry_after_s, translate_exception
from optiforge.testing import OpenAICompatServer


def _resp(status: int, headers: dict[str, str] | None = None) -> httpx.Response:
    return httpx.Response(status, headers=headers or {}, request=httpx.Request("POST", "http://x"))


def test_translation_table() -> None:
    litellm = import_litellm()
    kw = {"model": "m", "llm_provider": "openai"}
    cases = [
        (litellm.ContextWindowExceededError("too long", **kw), LLMContextWindow, False),
        (litellm.AuthenticationError("bad key", **kw), LLMAuthError, False),
        (litellm.Timeout("slow", **kw), LLMTimeout, True),
        (litellm.InternalServerError("oops", **kw), LLMProviderError, True),
        (litellm.ServiceUnavailableError("down", **kw), LLMProviderError, True),
        (litellm.APIConnectionError("refused", **kw), LLMProviderError, True),
        (litellm.BadRequestError("bad param", **kw), LLMProviderError, False),
    ]
    for exc, kind, retry in cases:
        out = translate_exception(exc, "openai/m")
        assert type(out) is kind, (exc, out)
        assert is_retryable(out) is retry, exc
        assert out.args[0].startswith("openai/m: ") and "\n" not in out.args[0]
    rl = litellm.RateLimitError("slow down", response=_resp(429, {"retry-after": "7"}), **kw)
    out = translate_exception(rl, "openai/m")
    assert isinstance(out, LLMRateLimited) and out.retry_after == 7.0 and is_retryable(out)


def test_retry_after_formats() -> None:
    assert retry_after_s({"retry-after-ms": "250"}) == 0.25
    assert retry_after_s({"retry-after": "3"}) == 3.0
    future = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 < (retry_after_s({"retry-after": future}) or 0) <= 30
    assert retry_after_s({}) is None and retry_after_s({"retry-after": "soon"}) is None


def test_server_also_serves_unversioned_path(openai_server: OpenAICompatServer) -> None:
    from optiforge.llm import LiteLLM

    openai_server.script(["ok"])
    base = openai_server.url.removesuffix("/v1")
    assert (
        LiteLLM("openai/t", api_base=base, api_key="sk", timeout_s=5)
        .complete([{"role": "user", "content": "hi"}])
        .text
        == "ok"
    )
    assert openai_server.count == 1


def test_server_rejects_unknown_paths(openai_server: OpenAICompatServer) -> None:
    r = httpx.post(openai_server.url + "/embeddings", json={})
    assert r.status_code == 404 and openai_server.count == 0
