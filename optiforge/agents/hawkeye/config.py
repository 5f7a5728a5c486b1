"""Options of the ``hawkeye`` agent."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from optiforge.agents.kit import SearchConfig
from optiforge.agents.kit.tools import ToolsConfig


class HawkeyeConfig(BaseModel):
    """Options of the ``hawkeye`` agent."""

    model_config = ConfigDict(extra="forbid")

    search: SearchConfig = Field(default_factory=lambda: SearchConfig(max_evaluations=12, proposals_per_round=2,
                                                                      population_size=4))  # fmt: skip
    arch: Literal["auto", "interpreter", "sm80", "sm90"] = "auto"
    """Target architecture; ``auto`` reads the CUDA device (``interpreter`` without one)."""
    strategies_per_task: int = Field(default=3, ge=1, le=10)
    """How many taxonomy strategies the LLM proposer rotates through."""
    attempts_shown: int = Field(default=6, ge=0)
    """Previous attempts (with failure reasons) shown in each prompt."""
    sandbox: str = "local"
    """Sandbox back end the harness runs in."""
    tools: ToolsConfig = Field(
        default_factory=lambda: ToolsConfig(
            use=["test_kernel", "check_strategy"], pool=False, max_steps=4
        )
    )
    """Tools the LLM may call while it writes a kernel (``test_kernel``: compile and test a
    draft on the dev cases; ``check_strategy``: the strategy detector; ``run_python``);
    ``max_steps`` turns per proposal. A model that cannot call tools gets one completion."""
