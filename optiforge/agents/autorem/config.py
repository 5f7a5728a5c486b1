"""Options of the ``autorem`` agent."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from optiforge.agents.kit.tools import ToolsConfig


class AutoREMConfig(BaseModel):
    """Options of the ``autorem`` agent."""

    model_config = ConfigDict(extra="forbid")

    max_attempts: int = Field(default=3, ge=1, le=10)
    """Code attempts per instance: the first plus repairs with the verdict fed back."""
    use_memory: bool = True
    """Retrieve experience entries into the prompt (False: the no-memory ablation)."""
    k_entries: int = Field(default=4, ge=1, le=20)
    """Entries retrieved per instance at most."""
    reflect: Literal["never", "on_failure"] = "never"
    """Write entries from failed trajectories (``adapt`` sets ``on_failure``)."""
    reflector: Literal["auto", "llm", "rules"] = "auto"
    """Diagnoser: ``llm`` (structured LLM call), ``rules`` (rule table); auto = llm if any."""
    tools: ToolsConfig = Field(default_factory=lambda: ToolsConfig(use=["run_python"]))
    """Tools the LLM may call while it writes a counterpart: ``run_python`` (run a draft
    program in the sandbox and read its output), and memory's pool."""
    timeout_s: float = Field(default=60.0, gt=0)
    """Wall-clock limit of one candidate program in the sandbox."""
