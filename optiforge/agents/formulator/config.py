"""``formulator``'s options."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class FormulatorConfig(BaseModel):
    """Options of the ``formulator`` agent."""

    model_config = ConfigDict(extra="forbid")

    offline: Literal["heuristic", "default"] = "heuristic"
    """Without an LLM: ``heuristic`` reads the description and the knob list (prunes
    nuisance knobs, narrows ranges, picks log scales and the optimizer:
    ``formulator.heuristic``); ``default`` writes the fixed default (every knob, full
    ranges, GP-BO; also the ``default`` baseline)."""
    max_reasks: int = Field(default=2, ge=0, le=5)
    """Re-asks when the LLM's formulation is not a valid space of the system's knobs."""
    max_variables: int = Field(default=12, ge=1, le=50)
    """At most this many variables in a formulation."""
    revise_after: int = Field(default=0, ge=0, le=1000)
    """With an LLM: run the formulation for this many evaluations (a pilot, within the
    instance's budget and at most half of it), show the model what it found and let it
    revise the space and the optimizer for the rest. 0: no revision. The harness re-runs
    both stages (pilot, then the revision) as the run's score."""
    tune_trials: int = Field(default=6, ge=1, le=50)
    """``train`` and ``rl`` tasks: random-search trials per catalogue method of the
    ``tuned`` baseline (the method's defaults, then draws), scored on a validation split
    (``rl``: validation episodes)."""
    optimizer: str | None = None
    """``train`` tasks: use this catalogue method (``optiforge list optimizers``); the
    heuristic or the LLM then sets only its hyperparameters. None: they pick the method."""
    rl_method: str | None = None
    """``rl`` tasks: use this catalogue RL method (``optiforge.solvers.rl.catalogue``); the
    heuristic or the LLM then poses the problem and sets only its hyperparameters. None:
    they pick the method."""
