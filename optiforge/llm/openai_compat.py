"""OpenAI-compatible endpoints through the ``openai`` client alone (no litellm import).

For ``openai/<name>`` at an ``api_base`` (vLLM, llama.cpp, the embedded model's server, any
local OpenAI-compatible server) litellm adds nothing the provider process needs: the
request is OpenAI's, and a model missing from litellm's price map costs "unknown" either
way. Importing litellm took 4.0 s and 200 MB on this machine against 0.6 s and 60 MB for
``openai``; the provider process (``optiforge.llm.provider_process``) takes this path for
such models, so the first LLM reply no longer waits on litellm's import. A model that
litellm *can* price (e.g. ``openai/gpt-4o-mini`` through a proxy) keeps going through
litellm, so its cost stays known.

The same reply (``ProviderReply``) and the same errors: failures are translated onto the
``LLMError`` taxonomy exactly as ``litellm_calls.translate_exception`` does for litellm's
wrappers of the same ``openai`` exceptions.
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import json
import threading
from pathlib import Path
from typing import Any

from optiforge.errors import (
    LLMError,
)
from optiforge.llm.litellm_calls import translate_openai_error
from optiforge.llm.types import ProviderReply

_CONTEXT_WINDOW_MARKERS = (
    # the substrings litellm (exception_mapping_utils) reads as "context window exceeded"
    "exceed context limit",
    "this model's maximum context length is",
    "requested token count exceeds the model's maximum context length",
    "string too long. expected a string with maximum length",
    "model's maximum context limit",
    "is longer than the model's context length",
    "input tokens exceed the configured limit",
    "`inputs` tokens + `max_new_tokens` must be",
    "exceeds the available context size",
    "exceeds the maximum number of tokens allowed",
    '"code": "context_length_exceeded"',
    "prompt is too long",
)

_NOT_SENT = ("model", "api_base", "api_key", "num_retries", "max_retries", "timeout")
"""litellm-style arguments that are the client's or ours, not the request's."""


@functools.cache
def _priced_models() -> frozenset[str]:
    """Model names in litellm's bundled price map (read as JSON, without importing it)."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return frozenset()
    path = Path(next(iter(spec.submodule_search_locations)))
    try:
        data = json.loads((path / "model_prices_and_context_window_backup.json").read_text())
    except (OSError, ValueError):
        return frozenset({"*"})  # unknown map: assume priced, keep litellm
    return frozenset(data)


def handles(model: str, api_base: str | None) -> bool:
    """Whether ``model`` at ``api_base`` goes through the ``openai`` client: an
    ``openai/...`` model at an explicit ``api_base`` that litellm has no price for."""
    if not api_base or not model.lower().startswith("openai/"):
        return False
    priced = _priced_models()
    name = model.split("/", 1)[1]
    return not ({"*", model, name} & priced)


_CLIENTS: dict[tuple[str, str | None], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def client(api_base: str, api_key: str | None) -> Any:
    """A shared ``openai.OpenAI`` for this endpoint and key (its own retries off: ours
    are ``BaseLLM``'s)."""
    with _CLIENTS_LOCK:
        got = _CLIENTS.get((api_base, api_key))
        if got is None:
            import openai

            got = openai.OpenAI(base_url=api_base, api_key=api_key, max_retries=0)
            _CLIENTS[(api_base, api_key)] = got
        return got


@functools.cache
def _create_params() -> frozenset[str]:
    import openai.resources.chat.completions as cc

    return frozenset(inspect.signature(cc.Completions.create).parameters) - {"self"}


def warm_up(api_base: str) -> None:
    """Import the client and build one (its HTTP stack) once; nothing is sent."""
    import openai

    openai.OpenAI(base_url=api_base, api_key="sk-warm-up", max_retries=0).close()
    _create_params()


def complete(kwargs: dict[str, Any], model: str) -> ProviderReply:
    """One chat completion from litellm-style ``kwargs`` as a ``ProviderReply``.

    Raises:
        LLMError: the failure, translated (``translate``).
    """
    known = _create_params()
    body = {k: v for k, v in kwargs.items() if k not in _NOT_SENT}
    extra = {k: body.pop(k) for k in list(body) if k not in known}  # e.g. llama.cpp's grammar
    try:
        resp = client(kwargs["api_base"], kwargs.get("api_key")).chat.completions.create(
            model=model.split("/", 1)[1],
            timeout=kwargs.get("timeout"),
            **({"extra_body": extra} if extra else {}),
            **body,
        )
    except Exception as e:  # translate everything at the boundary
        raise translate(e, model) from e
    # cost unknown: only unpriced models take this path (``handles``)
    return ProviderReply.from_response(resp, model)


def translate(err: BaseException, model: str) -> LLMError:
    """An ``openai`` / ``httpx`` exception as the ``LLMError`` that
    ``litellm_calls.translate_exception`` makes of litellm's wrapper of it."""
    import openai

    context_window = isinstance(err, openai.BadRequestError | openai.APIStatusError) and any(
        m in str(err).lower() for m in _CONTEXT_WINDOW_MARKERS
    )
    return translate_openai_error(err, model, context_window=context_window)
