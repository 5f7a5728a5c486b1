"""OpenAI-compatible endpoints through the ``openai`` client alone: the same replies and
the same errors as litellm's path, and no litellm import."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest

from optiforge.errors import LLMError
from optiforge.llm import LiteLLM
from optiforge.llm import openai_compat as oc
from optiforge.testing.server import OpenAICompatServer

USER = [{"role": "user", "content": "hi"}]


def test_which_models_take_the_openai_client() -> None:
    base = "http://127.0.0.1:1/v1"
    assert oc.handles("openai/instant", base)
    assert oc.handles("openai/SmolLM2-135M-Instruct", base)
    assert not oc.handles("openai/instant", None)  # no endpoint of its own
    assert not oc.handles("openai/gpt-4o-mini", base)  # priced by litellm: cost stays known
    assert not oc.handles("anthropic/claude-3-5-haiku-latest", base)
    assert not oc.handles("hosted_vllm/x", base)


def _kwargs(server: OpenAICompatServer, **extra: Any) -> dict[str, Any]:
    return {
        "model": "openai/test-model", "messages": USER, "timeout": 5.0, "num_retries": 0,
        "max_retries": 0, "api_base": server.url, "api_key": "sk-test", **extra,
    }  # fmt: skip


def test_reply_is_the_same_as_litellms(openai_server: OpenAICompatServer) -> None:
    from optiforge.llm import litellm_client as lc

    tool_call = {"id": "call_1", "name": "f", "arguments": {"x": 1}}
    reply = {
        "content": None,
        "tool_calls": [tool_call],
        "usage": {"prompt_tokens": 7, "completion_tokens": 2},
    }
    openai_server.script([reply, reply])
    kw = _kwargs(openai_server, temperature=0.5, grammar="root ::= x")
    ours = oc.complete(kw, "openai/test-model")
    theirs = lc.complete(lc.import_litellm(), kw, "openai/test-model")
    assert ours == theirs
    sent = openai_server.requests[0]
    assert sent["model"] == "test-model" and sent["temperature"] == 0.5
    assert sent["grammar"] == "root ::= x"  # an unknown parameter goes in the body
    assert openai_server.requests[1]["grammar"] == "root ::= x"  # as litellm sends it


@pytest.mark.parametrize(
    "reply",
    [
        {"status": 401, "error": "invalid api key"},
        {"status": 403},
        {"status": 429, "headers": {"retry-after-ms": "5"}},
        {"status": 500},
        {"status": 503},
        {"status": 400, "error": "This model's maximum context length is 8 tokens"},
        {"status": 400, "error": "bad request"},
        {"status": 404},
    ],
)
def test_errors_are_the_same_as_litellms(
    openai_server: OpenAICompatServer, reply: dict[str, Any]
) -> None:
    from optiforge.llm import litellm_client as lc

    openai_server.script([reply, reply])
    kw = _kwargs(openai_server)
    with pytest.raises(LLMError) as ours:
        oc.complete(kw, "openai/test-model")
    with pytest.raises(LLMError) as theirs:
        lc.complete(lc.import_litellm(), kw, "openai/test-model")
    a, b = ours.value, theirs.value
    assert type(a) is type(b)
    for attr in ("retryable", "retry_after"):
        assert getattr(a, attr, None) == getattr(b, attr, None), attr


def test_connection_refused_is_retryable_as_with_litellm() -> None:
    kw = {"messages": USER, "timeout": 2.0, "api_base": "http://127.0.0.1:9/v1", "api_key": "k"}
    with pytest.raises(LLMError) as e:
        oc.complete(kw, "openai/test-model")
    assert type(e.value).__name__ == "LLMProviderError" and e.value.retryable  # type: ignore[attr-defined]


def test_provider_process_path_never_imports_litellm(openai_server: OpenAICompatServer) -> None:
    """Through ``LiteLLM`` (the provider process) an unpriced model at an endpoint is
    answered without litellm; checked in a fresh interpreter running the child's code."""
    openai_server.script([{"content": "pong"}])
    code = (
        "import sys\n"
        "from optiforge.llm import openai_compat as oc\n"
        f"kw = {{'messages': [{{'role': 'user', 'content': 'hi'}}], 'timeout': 5.0,"
        f" 'api_base': {openai_server.url!r}, 'api_key': 'k'}}\n"
        "oc.warm_up(kw['api_base'])\n"
        "r = oc.complete(kw, 'openai/test-model')\n"
        "print(r.message['content'], 'litellm' in sys.modules)\n"
    )
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
        env={**os.environ},
    )  # fmt: skip
    assert p.stdout.split() == ["pong", "False"], p.stderr
    openai_server.script([{"content": "pong"}])
    c = LiteLLM("openai/test-model", api_base=openai_server.url, api_key="k", timeout_s=5.0)
    assert c.complete(USER).text == "pong"
