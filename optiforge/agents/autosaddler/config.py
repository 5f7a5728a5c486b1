"""AutoSaddler's options."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class SaddlerConfig(BaseModel):
    """Options of an AutoSaddler tuning run (``agent.tune``)."""

    model_config = ConfigDict(extra="forbid")

    iterations: int = Field(default=6, ge=1, le=100)
    """Rounds of mini-batch -> diagnosis -> one patch -> gate."""
    batch: int = Field(default=4, ge=1)
    """Training tasks per mini-batch (rotating through the training tasks)."""
    runs: int = Field(default=2, ge=1, le=10)
    """Runs (seeds) per task in a mini-batch."""
    val_tasks: int = Field(default=6, ge=1)
    """Dev tasks held out of the mini-batches to gate patches (the heldout split is never
    touched while tuning)."""
    val_runs: int = Field(default=4, ge=1, le=20)
    """Runs (seeds) per validation task: the gate compares ``val_tasks * val_runs`` pairs.
    With 6 x 2 = 12 pairs one tuning seed's validation batch sat at 11/12 under the base
    harness and refused every patch (there was nothing left to win); 6 x 4 = 24 halves the
    chance of such a lucky batch."""
    diagnosis: Literal["trace", "last_error"] = "trace"
    """``trace``: the whole trajectory is read for the root cause; ``last_error``: only the
    final error (the shallow-reflection ablation)."""
    scope: Literal["one_part", "whole"] = "one_part"
    """``one_part``: one patch to one part for the most frequent root cause; ``whole``:
    every part any failure points at, changed at once (the unconstrained-editing ablation)."""
    gate: Literal["validation", "repair"] = "validation"
    """``validation``: accept a patch when it wins on the validation batch by the margin;
    ``repair``: accept when it fixes any failed trajectory it came from (the
    trajectory-repair ablation)."""
    margin_sd: float = Field(default=1.0, ge=0.0)
    """Validation margin in standard deviations of the paired sign statistic: accept when
    ``wins - losses >= max(1, ceil(margin_sd * sqrt(wins + losses)))`` (see ``problem.validation_gate``)."""
    cause_gate: bool = False
    """With the validation gate: when a patch wins no passes but loses none net, accept it
    if it removes the root cause it was proposed for on the validation items (the paired
    count of items failing with that diagnosed category drops by the same margin;
    ``problem.cause_gate``). For tasks where several defects each fail an episode (the long
    split), so no single patch can turn a failure into a pass."""
    proposer: Literal["auto", "llm", "rules"] = "auto"
    """Who diagnoses and patches: ``llm``, ``rules`` (the patch library); auto: llm if any."""
    traces_per_prompt: int = Field(default=3, ge=1, le=10)
    """Failed trajectories shown to the LLM proposer at most."""
    workers: int = Field(default=2, ge=1, le=32)
    """Episodes run at once (threads; each step is its own sandbox run)."""
