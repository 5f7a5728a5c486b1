"""Provider examples for ``optiforge list providers``: model strings and what each needs."""

from __future__ import annotations

import os

from pydantic import BaseModel, ConfigDict


class ProviderExample(BaseModel):
    """One row of the provider table."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: str
    model: str
    """Example litellm model string."""
    env_var: str | None
    """Environment variable holding the API key (None = none needed)."""
    api_base: str | None = None
    """Base URL to pass as ``--api-base`` (None = the provider's default)."""
    notes: str = ""


PROVIDERS: tuple[ProviderExample, ...] = (
    ProviderExample(
        provider="openai",
        model="openai/gpt-4o-mini",
        env_var="OPENAI_API_KEY",
        notes="OpenAI API",
    ),
    ProviderExample(
        provider="anthropic",
        model="anthropic/claude-3-5-haiku-latest",
        env_var="ANTHROPIC_API_KEY",
        notes="Anthropic API",
    ),
    ProviderExample(
        provider="ollama",
        model="ollama/llama3.1",
        env_var=None,
        api_base="http://localhost:11434",
        notes="local Ollama server (`ollama pull llama3.1`)",
    ),
    ProviderExample(
        provider="hosted_vllm",
        model="hosted_vllm/Qwen/Qwen2.5-7B-Instruct",
        env_var=None,
        api_base="http://localhost:8000/v1",
        notes="vLLM's OpenAI-compatible server",
    ),
    ProviderExample(
        provider="openai-compatible",
        model="openai/<model-name>",
        env_var="OPENAI_API_KEY",
        api_base="http://<host>:<port>/v1",
        notes="any OpenAI-compatible server via --api-base (no key needed unless the server checks one)",
    ),
    ProviderExample(
        provider="local",
        model="local",
        env_var=None,
        notes="the embedded SmolLM2-135M-Instruct, served by optiforge (no key, no network); "
        "local/<file.gguf> or --set llm.local.path=FILE for another GGUF model",
    ),
    ProviderExample(
        provider="offline",
        model="offline",
        env_var=None,
        notes="no LLM: agents use their heuristic (non-LLM) proposer",
    ),
)


def provider_rows() -> list[dict[str, str]]:
    """Table rows with a ``key_set`` column saying whether the env var is present."""
    rows = []
    for p in PROVIDERS:
        key_set = "n/a" if p.env_var is None else ("yes" if os.environ.get(p.env_var) else "no")
        rows.append(
            {
                "provider": p.provider,
                "model": p.model,
                "env_var": p.env_var or "-",
                "key_set": key_set,
                "api_base": p.api_base or "-",
                "notes": p.notes,
            }
        )
    return rows
