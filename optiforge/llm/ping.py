"""``ping``: the smallest possible round trip, for ``optiforge llm ping``."""

from __future__ import annotations

from optiforge.llm.base import LLM
from optiforge.llm.types import CallRecord


def ping(llm: LLM, prompt: str = "Reply with the single word: pong") -> CallRecord:
    """One tiny call for ``optiforge llm ping``; returns its CallRecord (raises LLMError)."""
    return llm.complete([{"role": "user", "content": prompt}]).record
