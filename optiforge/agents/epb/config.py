"""``epb``'s options."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


class EPBConfig(BaseModel):
    """Options of the ``epb`` agent."""

    model_config = ConfigDict(extra="forbid")

    train_tours: int = Field(default=48, ge=4, le=1000)
    """Teacher trajectories (training instances) the router and the edits are fitted on."""
    val_tours: int = Field(default=16, ge=2, le=1000)
    """Teacher trajectories held out: edits, boosts and prunes are judged on them."""
    router_steps: int = Field(default=300, ge=10)
    """Adam steps per router fit (warm-started after the first)."""
    router_lr: float = Field(default=0.05, gt=0)
    blends: list[float] = Field(default_factory=lambda: [0.25, 0.5, -0.25])
    """Offline edit: the blamed program blended with another program at these weights."""
    gradient: Literal["llm", "template"] = "llm"
    """Block I with an LLM: ``llm``, the LLM reads the failure cases and writes the critique
    (the textual gradient) the rewrite follows; ``template``, the rewrite follows the
    agent's own summary of the numbers (the pre-issue-40 behaviour, a stand-in)."""
    cases: int = Field(default=3, ge=1, le=12)
    """Failure cases shown to the LLM per request (gradient and boost)."""
    boost_proposer: Literal["llm", "offline"] = "llm"
    """Block II with an LLM: ``llm``, the LLM writes a new program aimed at the residual
    failures; ``offline``, the offline pool (seed heuristics and flat blends). Offline
    runs always use the pool."""
    boost: bool = True
    block2_every: int = Field(default=4, ge=1)
    """Block II (boost, prune) runs after every this many block I rounds."""
    """Block II: add a program aimed at the worst-fit states when it helps."""
    prune_tolerance: float = Field(default=0.005, ge=0)
    """Block II: drop a program whose removal raises the validation divergence by less than
    this share (0.5%)."""
    tour_guard: bool = True
    """Accept an edit, boost or prune only if the portfolio's greedy tours on
    ``guard_tours`` fresh practice instances get no longer on average (built in the
    sandbox; off: divergence alone)."""
    guard_tours: int = Field(default=64, ge=4, le=1000)
    tour_tolerance: float = Field(default=0.0, ge=0)
    """The guard's slack: a mean validation tour up to this share longer still passes."""
    seeds: list[str] | None = None
    """The seed heuristics the portfolio starts from (names in
    ``optiforge.solvers.nco.programs.SEED_BANK``); ``None``: all of them."""

    @field_validator("seeds")
    @classmethod
    def _known_seeds(cls, v: list[str] | None) -> list[str] | None:
        from optiforge.solvers.nco.programs import SEED_BANK

        bad = [k for k in v or [] if k not in SEED_BANK]
        if bad or v == []:
            raise ValueError(f"seeds must be a non-empty subset of {sorted(SEED_BANK)}; got {v}")
        return v

    max_programs: int = Field(default=8, ge=1, le=32)
