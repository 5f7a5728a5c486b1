"""A provider check before a run starts: what ``optiforge llm ping`` would find, in
milliseconds and without a model call.

A missing key, an unknown provider or a dead ``--api-base`` used to start the whole run
(77 s: agent build, seed evaluation) and end it with a failed-run table and exit 1. This
check finds them first, in one line: a provider name litellm does not know (its provider
list, copied in ``provider_names`` so litellm is not imported here), the key variable of a
hosted provider not set, or nothing listening at the server's address (one TCP connect).
It sends no request and reads no reply, so a server that is up but slow still passes;
the run's own calls then report what they meet.
"""

from __future__ import annotations

import os
import socket
from urllib.parse import urlsplit

from optiforge.errors import LLMAuthError, LLMProviderError

CONNECT_TIMEOUT_S = 3.0
"""How long the TCP connect to an ``--api-base`` may take (a filtered port never refuses)."""

DEFAULT_BASES = {"ollama": "http://localhost:11434", "ollama_chat": "http://localhost:11434"}
"""Providers that talk to a server on this machine by default (litellm's default bases)."""


def _endpoint(url: str) -> tuple[str, int]:
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if not parts.hostname:
        raise LLMProviderError(f"--api-base {url}: not a URL (expected http://HOST:PORT/...)")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as err:
        raise LLMProviderError(f"--api-base {url}: {err}") from None
    return parts.hostname, port


def check_reachable(url: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """Raise ``LLMProviderError`` unless something accepts a TCP connection at ``url``."""
    host, port = _endpoint(url)
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            pass
    except OSError as err:
        why = "no answer in time" if isinstance(err, TimeoutError) else (err.strerror or str(err))
        raise LLMProviderError(
            f"--api-base {url}: nothing answers at {host}:{port} ({why}); start the server "
            "or fix the URL (`optiforge llm ping` checks it with one call)"
        ) from None


def check_provider(model: str, api_base: str | None = None) -> None:
    """Raise an ``LLMError`` (one line) when ``model`` cannot work as given; nothing for
    ``offline`` and ``local`` (served by optiforge itself).

    Raises:
        LLMProviderError: an unknown provider prefix, or nothing listening at the server.
        LLMAuthError: a hosted provider whose key variable is not set.
    """
    from optiforge.llm.litellm_calls import KEYED_PREFIXES, key_variable
    from optiforge.llm.local import is_local
    from optiforge.llm.provider_names import LITELLM_PROVIDERS

    m = model.strip()
    if m.lower() in ("", "offline") or is_local(m):
        return
    prefix = m.split("/", 1)[0].lower() if "/" in m else None
    if prefix is not None and prefix not in LITELLM_PROVIDERS:
        raise LLMProviderError(
            f"--model {m}: unknown provider {prefix!r} (a litellm provider string is "
            "PROVIDER/MODEL, e.g. openai/gpt-4o-mini, anthropic/..., ollama/...; see "
            "`optiforge list providers`)"
        )
    base = api_base or (DEFAULT_BASES.get(prefix) if prefix else None)
    if base:
        check_reachable(base)
        if api_base and m.lower().startswith(KEYED_PREFIXES):
            return  # an OpenAI-compatible server of one's own: a placeholder key is sent
    var = key_variable(m) if prefix is not None else None
    if var and not os.environ.get(var):
        raise LLMAuthError(
            f"--model {m}: {var} is not set (export it, or pass --api-base for a local "
            "server that needs no key); nothing was run"
        )
