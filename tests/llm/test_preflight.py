"""The provider check before a run: unknown provider, missing key, nothing listening."""

from __future__ import annotations

import socket

import pytest

from optiforge.errors import LLMAuthError, LLMProviderError
from optiforge.llm.preflight import check_provider, check_reachable
from optiforge.testing import OpenAICompatServer


def _dead_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()  # nothing listens there now
    return port


def test_offline_and_local_are_not_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    check_provider("offline")
    check_provider("local")


def test_unknown_provider_is_named() -> None:
    with pytest.raises(LLMProviderError, match="unknown provider 'nosuchprovider'"):
        check_provider("nosuchprovider/m")


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(LLMAuthError, match="ANTHROPIC_API_KEY is not set"):
        check_provider("anthropic/claude-3-5-haiku-latest")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    check_provider("anthropic/claude-3-5-haiku-latest")  # no request is sent


def test_dead_api_base_is_found_and_a_live_one_passes(
    monkeypatch: pytest.MonkeyPatch, openai_server: OpenAICompatServer
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    dead = f"http://127.0.0.1:{_dead_port()}/v1"
    with pytest.raises(LLMProviderError, match="nothing answers at 127.0.0.1"):
        check_provider("openai/x", dead)
    # an OpenAI-compatible server of one's own needs no key
    check_provider("openai/x", openai_server.url)
    assert openai_server.count == 0  # a connect, not a request
    with pytest.raises(LLMProviderError, match="not a URL"):
        check_reachable("http:///v1")


@pytest.mark.slow
def test_provider_names_are_the_installed_litellms() -> None:
    """The copied list cannot go stale: it is litellm's own ``provider_list``."""
    import os

    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    from optiforge.llm.provider_names import LITELLM_PROVIDERS

    installed = {getattr(p, "value", p) for p in litellm.provider_list}
    assert set(LITELLM_PROVIDERS) == installed
