"""Provider ``offline``: no LLM at all (agents fall back to their heuristic proposers)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from optiforge.errors import LLMOffline
from optiforge.llm.base import LLM
from optiforge.llm.types import Completion

_OFFLINE_NAMES = {"offline", "none", ""}


def is_offline(model: str | None) -> bool:
    """True for None / "offline" (case-insensitive)."""
    return model is None or model.strip().lower() in _OFFLINE_NAMES


def make_llm(model: str | None, *, local: Any = None, **kwargs: Any) -> LLM | None:
    """A LiteLLM for ``model``, the embedded model for ``local[/file]`` (``local``: its
    ``LocalModelSettings``), or None for offline (never a fake completion)."""
    if is_offline(model):
        return None
    assert model is not None
    from optiforge.llm.local import LocalLLM, is_local

    if is_local(model):
        if kwargs.get("api_base"):
            from optiforge.errors import ConfigError

            raise ConfigError(
                f"--model {model} is served by optiforge itself: drop --api-base "
                "(or use --model openai/NAME --api-base URL for a server of your own)"
            )
        kwargs.pop("api_base", None)
        return LocalLLM(model, settings=local, **kwargs)
    from optiforge.llm.litellm_client import LiteLLM

    return LiteLLM(model, **kwargs)


class OfflineLLM:
    """Stands in where an LLM object is required; every call raises LLMOffline."""

    model = "offline"

    def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        schema: type[BaseModel] | None = None,
        **params: Any,
    ) -> Completion:
        """Always raises LLMOffline."""
        raise LLMOffline(
            "an LLM call was attempted with provider 'offline'; pass --model "
            "(e.g. openai/gpt-4o-mini) or use the agent's heuristic proposer"
        )

    async def acomplete(
        self,
        messages: list[dict[str, Any]],
        *,
        tools: list[dict[str, Any]] | None = None,
        schema: type[BaseModel] | None = None,
        **params: Any,
    ) -> Completion:
        """Always raises LLMOffline."""
        return self.complete(messages, tools=tools, schema=schema, **params)
