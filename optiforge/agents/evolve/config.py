"""Options of the ``evolve`` agent."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from optiforge.agents.kit import SearchConfig
from optiforge.agents.kit.tools import ToolsConfig


class EvolveConfig(BaseModel):
    """Options of the ``evolve`` agent."""

    model_config = ConfigDict(extra="forbid")

    search: SearchConfig = Field(
        default_factory=lambda: SearchConfig(max_evaluations=40, overlap=True)
    )
    """Search knobs; ``overlap`` on: round r+1 is proposed and evaluating while round r
    finishes (its proposals see results one round older), so the workers stay busy."""
    function_name: str = "f"
    """Name of the function every candidate must define."""
    parents_shown: int = Field(default=3, ge=1)
    """Programs (best first) shown to the LLM in each prompt."""
    tools: ToolsConfig = Field(default_factory=lambda: ToolsConfig(use=["check_program"]))
    """Tools the LLM may call before it answers: ``check_program`` (the static checks and
    a sandboxed run on five probe inputs, no score), ``run_python``, and memory's pool."""
