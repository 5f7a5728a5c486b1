"""``terminal``'s options."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class TerminalConfig(BaseModel):
    """Options of the ``terminal`` agent."""

    model_config = ConfigDict(extra="forbid")

    harness: str | None = None
    """A harness folder (``Harness.save``; e.g. one ``optiforge saddle tune`` wrote);
    None: the base harness (``terminal.problem.base_harness``)."""
    temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    """Sampling temperature of every turn (runs differ through it: pass@1 over runs)."""
    step_timeout_s: float = Field(default=30.0, gt=0, le=300)
    """Wall-clock limit of one shell command."""
