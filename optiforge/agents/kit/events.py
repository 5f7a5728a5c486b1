"""Events an agent writes to ``events.jsonl`` that code outside the agent reads.

The reader never names an agent's event: the agent declares the kind on its spec
(``AgentSpec.attempt_event``) and the fields here are what a reader may rely on.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class AttemptEvent(BaseModel):
    """One attempt of an agent that writes a candidate, checks it and repairs it with the
    verdict (AutoREM's code attempts): the event whose kind is ``AgentSpec.attempt_event``.
    Agents may write more fields (task, origin, tokens); readers rely on these."""

    model_config = ConfigDict(extra="allow")

    kind: str
    passed: bool
    """The checker accepted the candidate."""
    reasons: list[str] = Field(default_factory=list)
    """Why it was rejected (the checker's first reasons; empty when it passed)."""
