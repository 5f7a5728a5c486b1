"""``knowevo``'s options."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class KnowEvoConfig(BaseModel):
    """Options of the ``knowevo`` agent (and, with other values, of its baselines)."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["tree", "monolithic", "llm-evolution"] = "tree"
    """``tree``: strategy mutation trees of localized block edits; ``monolithic``: the whole
    strategy rewritten at once by rule, kept when it tests better (a baseline);
    ``llm-evolution``: OpenEvolve-style evolution, the LLM rewrites the whole strategy
    program, a population on islands (a baseline; offline its rewrites are the rule-based
    whole-strategy rewrite)."""
    allocation: Literal["ucb", "uniform"] = "ucb"
    """Forward phase: which strategy variant gets the next rollout (UCB1 on its rewards, or
    round robin over the variants)."""
    ucb_c: float = Field(default=1.0, ge=0.0)
    """UCB1 exploration weight (rewards are z-scores of measured fitness)."""
    backward: bool = True
    """Backward phase: evidence-guided block edits (offline rules, or the LLM's tested edit
    loop). Off: the edits are random localized edits (the random-mutation baseline), tested
    and kept by the same rule."""
    picks_per_rollout: int = Field(default=6, ge=1, le=50)
    """Variants a rollout measures: the strategy's top unmeasured ones."""
    expand_every: int = Field(default=3, ge=1)
    """Rollouts between two expansions."""
    tests_per_expansion: int = Field(default=3, ge=1, le=64)
    """Candidate tests per expansion, the same for every mode (one test: one strategy run
    in the sandbox on the held-in pool and correlated with the measurements). Every
    method therefore spends the same number of candidate tests per run. Small by default:
    a tree step's neighbourhood holds about 35 localized edits, and with a third of them
    tested random picks do about as well as the evidence's order (measured)."""
    margin: float = Field(default=0.02, ge=0.0)
    """An edit becomes a child only if its Spearman correlation with measured fitness beats
    its parent's by this much on the selection split and at all on the check split."""
    min_measured: int = Field(default=18, ge=4)
    """Measurements before the first expansion (a correlation on fewer is noise)."""
    recall_blocks: int = Field(default=3, ge=0, le=20)
    """Expertise blocks of earlier runs (memory ``KnowledgeBlock`` records of the same
    property with a positive measured effect) seeded into the tree as children of the
    root; 0: off."""
    islands: int = Field(default=2, ge=1, le=8)
    """``llm-evolution``: islands of the population (proposals rotate over them)."""
    migrate_every: int = Field(default=2, ge=1)
    """``llm-evolution``: expansions between migrations (each island's best joins the next)."""
