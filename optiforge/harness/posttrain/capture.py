"""The exact messages an agent sends to ``--model local``: its own prompt builders called
with a stand-in LLM that records each request and answers with a chosen reply."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from optiforge.testing.scripted import FunctionLLM

LOCAL_MODEL_NAME = "openai/smollm2-135m-instruct"
"""What ``LocalLLM`` calls the embedded model (the cassettes of ``--model local`` runs)."""

Answer = Callable[[list[dict[str, Any]], type[BaseModel] | None], Any]


class CaptureLLM(FunctionLLM):
    """Records every request as the embedded model would get it.

    Like ``LocalLLM`` it cannot call functions (agents then ask without tools), and a
    schema request carries the same schema instruction (``BaseLLM`` adds it for every
    implementation). ``answer(messages, schema)`` gives the reply (a string or a pydantic
    model); ``requests`` holds the messages of each call, in call order.
    """

    supports_tools = False

    def __init__(self, answer: Answer) -> None:
        self.requests: list[list[dict[str, Any]]] = []

        def fn(
            messages: list[dict[str, Any]],
            tools: list[dict[str, Any]] | None,
            schema: type[BaseModel] | None,
        ) -> Any:
            self.requests.append([{"role": m["role"], "content": m["content"]} for m in messages])
            return answer(messages, schema)

        super().__init__(fn, model=LOCAL_MODEL_NAME)


def prompt_messages(messages: list[dict[str, Any]]) -> list[dict[str, str]]:
    """``messages`` as plain ``{"role", "content"}`` dicts (what a training row keeps)."""
    return [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]
