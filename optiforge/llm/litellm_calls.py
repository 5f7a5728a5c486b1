"""The calls into litellm (import, one completion, its cost, error translation), as plain
functions of the litellm module: ``LiteLLM`` uses them in process and the provider process
(``optiforge.llm.provider_process``) in its child. Imports nothing of ``optiforge.llm`` that
uses a provider, so both import it at file level (no import circle).
"""

from __future__ import annotations

import contextlib
import email.utils
import os
import time
from types import ModuleType
from typing import Any

from optiforge.errors import (
    LLMAuthError,
    LLMContextWindow,
    LLMError,
    LLMProviderError,
    LLMRateLimited,
    LLMTimeout,
)
from optiforge.llm.types import ProviderReply


def import_litellm() -> ModuleType:
    """Import litellm with the local price map (no network) and its banner off."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


def _short(err: BaseException, n: int = 300) -> str:
    text = str(err).strip().splitlines()
    return (text[0] if text else type(err).__name__)[:n]


def _headers(err: BaseException) -> dict[str, str]:
    """Response headers of a provider error, lower-cased (empty when unknown)."""
    for attr in ("litellm_response_headers", "headers"):
        h = getattr(err, attr, None)
        if h:
            try:
                return {str(k).lower(): str(v) for k, v in dict(h).items()}
            except (TypeError, ValueError):
                pass
    resp = getattr(err, "response", None)
    h = getattr(resp, "headers", None)
    if h:
        try:
            return {str(k).lower(): str(v) for k, v in dict(h).items()}
        except (TypeError, ValueError):
            return {}
    return {}


def retry_after_s(headers: dict[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or HTTP date)."""
    if "retry-after-ms" in headers:
        try:
            return float(headers["retry-after-ms"]) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max(0.0, when.timestamp() - time.time())


# The openai client refuses to send a request without a key and litellm reports that as
# an InternalServerError (HTTP 500): it is a missing key, not a transient failure.
_MISSING_KEY_MARKERS = ("missing credentials", "api_key client option must be set")

# Placeholder key for OpenAI-compatible servers at --api-base: local servers (vLLM,
# llama.cpp, LM Studio, Ollama's /v1) need none, but the openai client refuses to send a
# request without one. A server that does check keys answers 401, which names the variable.
PLACEHOLDER_KEY = "sk-no-key-needed"
KEYED_PREFIXES = ("openai/", "hosted_vllm/", "text-completion-openai/")


def key_variable(model: str) -> str | None:
    """The environment variable litellm reads the key of ``model``'s provider from."""
    prefix = model.split("/", 1)[0].lower() if "/" in model else "openai"
    return {
        "openai": "OPENAI_API_KEY",
        "text-completion-openai": "OPENAI_API_KEY",
        "anthropic": "ANTHROPIC_API_KEY",
        "gemini": "GEMINI_API_KEY",
        "mistral": "MISTRAL_API_KEY",
        "groq": "GROQ_API_KEY",
        "together_ai": "TOGETHERAI_API_KEY",
        "openrouter": "OPENROUTER_API_KEY",
        "deepseek": "DEEPSEEK_API_KEY",
        "hosted_vllm": "HOSTED_VLLM_API_KEY",
    }.get(prefix)


def _auth_hint(model: str) -> str:
    var = key_variable(model)
    where = f"set {var}" if var else "set the provider's API key variable"
    return f" ({where}, or pass --api-base for a local server that needs no key)"


def translate_exception(err: BaseException, model: str) -> LLMError:
    """Map a litellm/openai/httpx exception onto the optiforge LLMError taxonomy.

    Authentication failures (401/403, or a request the client refused to send for want of
    a key) become ``LLMAuthError``, which is never retried and names the variable to set.
    """
    import litellm

    return translate_openai_error(
        err, model, context_window=isinstance(err, litellm.ContextWindowExceededError)
    )


def translate_openai_error(err: BaseException, model: str, *, context_window: bool) -> LLMError:
    """The mapping of ``translate_exception`` on the ``openai`` classes, which litellm's
    exceptions subclass, so the litellm path and the ``openai`` client's path
    (``openai_compat``) give one error for one failure.

    Args:
        context_window: the caller's verdict that ``err`` says the prompt was too long
            (litellm's own class, or the text markers litellm reads).
    """
    import openai

    msg = f"{model}: {_short(err)}"
    status = getattr(err, "status_code", None)
    if context_window:
        return LLMContextWindow(msg)
    if isinstance(err, openai.AuthenticationError | openai.PermissionDeniedError) or status in (
        401,
        403,
    ):
        return LLMAuthError(msg + _auth_hint(model))
    if any(m in str(err).lower() for m in _MISSING_KEY_MARKERS):
        return LLMAuthError(f"{model}: no API key" + _auth_hint(model))
    if isinstance(err, openai.RateLimitError) or status == 429:
        return LLMRateLimited(msg, retry_after=retry_after_s(_headers(err)))
    if isinstance(err, openai.APITimeoutError | TimeoutError):
        return LLMTimeout(msg)
    out = LLMProviderError(msg)
    transient = isinstance(err, openai.APIConnectionError | ConnectionError) or (
        isinstance(status, int) and status >= 500
    )
    out.retryable = transient  # type: ignore[attr-defined]
    return out


def warm_up(litellm: ModuleType, model: str, api_base: str | None) -> None:
    """Load what ``model``'s first call would import lazily (its proxy types, its provider's
    handler): a mocked completion, which litellm answers itself (nothing is sent). The first
    real call took 0.32 s instead of 5 ms; after this, 0.03 s."""
    kw: dict[str, Any] = {"api_base": api_base} if api_base else {}
    with contextlib.suppress(Exception):  # a warm-up only: real calls report errors
        litellm.completion(
            model=model, messages=[{"role": "user", "content": "warm-up"}],
            mock_response="ok", api_key=PLACEHOLDER_KEY, **kw,
        )  # fmt: skip


def supports_json_mode(litellm: ModuleType, model: str, api_base: str | None) -> bool:
    """Whether litellm says ``model``'s provider takes ``response_format``."""
    try:
        _, provider, _, _ = litellm.get_llm_provider(model, api_base=api_base)
        supported = litellm.get_supported_openai_params(model=model, custom_llm_provider=provider)
    except Exception:  # unknown provider/model: fall back to prompt-only instructions
        return False
    return bool(supported) and "response_format" in supported


def complete(litellm: ModuleType, kwargs: dict[str, Any], model: str) -> ProviderReply:
    """One ``litellm.completion(**kwargs)`` as a ``ProviderReply``.

    Raises:
        LLMError: the failure, translated (``translate_exception``).
    """
    try:
        resp = litellm.completion(**kwargs)
    except Exception as e:  # translate everything at the boundary
        raise translate_exception(e, model) from e
    cost, known = _cost(litellm, resp, model)
    return ProviderReply.from_response(resp, model, cost_usd=cost, cost_known=known)


def _cost(litellm: ModuleType, resp: Any, model: str) -> tuple[float, bool]:
    """The reply's cost in USD and whether it is known (a model missing from the price map,
    e.g. on a local server, is unknown, not free).

    litellm prices every reply as it returns it (``_hidden_params["response_cost"]``, None
    when it could not); that price is read, not computed a second time (the lookup of an
    unpriced model costs ~0.7 ms of the caller's CPU per call). Replies without it are
    priced with ``completion_cost``.
    """
    hidden = getattr(resp, "_hidden_params", None)
    if isinstance(hidden, dict) and "response_cost" in hidden:
        cost = hidden["response_cost"]
        return (float(cost), True) if cost is not None else (0.0, False)
    try:
        return float(litellm.completion_cost(completion_response=resp, model=model)), True
    except Exception:  # not in the price map
        return 0.0, False
