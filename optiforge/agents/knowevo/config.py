"""``knowevo``'s options."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class KnowEvoConfig(BaseModel):
    """Options of the ``knowevo`` agent (and, with other values, of its baselines)."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["tree", "monolithic"] = "tree"
    """``tree``: strategy mutation trees of localized block edits; ``monolithic``: the whole
    strategy rewritten at once, kept when it tests better (the baseline)."""
    allocation: Literal["ucb", "uniform"] = "ucb"
    """Forward phase: which strategy variant gets the next rollout (UCB1 on its rewards, or
    round robin over the variants)."""
    ucb_c: float = Field(default=1.0, ge=0.0)
    """UCB1 exploration weight (rewards are z-scores of measured fitness)."""
    backward: bool = True
    """Backward phase: evidence-guided edits tested on held-in rollouts. Off: a child is a
    random localized edit, untested (the random-mutation baseline)."""
    picks_per_rollout: int = Field(default=6, ge=1, le=50)
    """Variants a rollout measures: the strategy's top unmeasured ones."""
    expand_every: int = Field(default=3, ge=1)
    """Rollouts between two expansions (a backward step, or a random edit)."""
    margin: float = Field(default=0.02, ge=0.0)
    """An edit becomes a child only if its Spearman correlation with measured fitness beats
    its parent's by this much on the selection split and at all on the check split."""
    min_measured: int = Field(default=18, ge=4)
    """Measurements before the first backward step (a correlation on fewer is noise)."""
    llm_edits: int = Field(default=2, ge=1, le=5)
    """With an LLM: block rewrites asked for per backward step."""
