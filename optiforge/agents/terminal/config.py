"""``terminal``'s options."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from optiforge.agents.kit.harness import Harness
from optiforge.agents.terminal.problem import base_harness


class TerminalConfig(BaseModel):
    """Options of the ``terminal`` agent."""

    model_config = ConfigDict(extra="forbid")

    harness: str | Harness | None = None
    """A harness folder (``Harness.save``; e.g. one ``optiforge saddle tune`` wrote), or a
    harness itself (the one AutoSaddler is tuning); None: the base harness
    (``terminal.problem.base_harness``)."""
    temperature: float = Field(default=0.7, ge=0.0, le=2.0)
    """Sampling temperature of every turn (runs differ through it: pass@1 over runs)."""
    step_timeout_s: float = Field(default=30.0, gt=0, le=300)
    """Wall-clock limit of one shell command."""

    def load_harness(self) -> Harness:
        """The harness this config runs: ``harness`` itself, the one in its folder, or (None)
        the base harness (the one AutoSaddler starts from).

        Raises:
            ConfigError: the folder holds no valid harness.
        """
        if isinstance(self.harness, Harness):
            return self.harness
        return Harness.load(self.harness) if self.harness else base_harness()
