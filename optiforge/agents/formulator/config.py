"""``formulator``'s options."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class FormulatorConfig(BaseModel):
    """Options of the ``formulator`` agent."""

    model_config = ConfigDict(extra="forbid")

    max_reasks: int = Field(default=2, ge=0, le=5)
    """Re-asks when the LLM's formulation is not a valid space of the system's knobs."""
    max_variables: int = Field(default=12, ge=1, le=50)
    """At most this many variables in a formulation."""
