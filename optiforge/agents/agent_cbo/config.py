"""Options of the ``agent-cbo`` agent (``AgentCBOConfig``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class AgentCBOConfig(BaseModel):
    """Options of the ``agent-cbo`` agent."""

    model_config = ConfigDict(extra="forbid")

    n_obs: int = Field(default=200, ge=20)
    """Observational units for PC and the do-priors (free, as in CBO)."""
    pc_alpha: float = Field(default=0.05, gt=0, lt=1)
    """Significance level of PC's conditional-independence tests."""
    pc_test: str = "fisherz"
    """causal-learn test name (``fisherz`` is fast; ``kci`` took 5-80 s per dev SCM)."""
    belief_confidence: float = Field(default=0.7, ge=0, le=1)
    """LLM beliefs below this confidence are ignored."""
    max_edits_per_round: int = Field(default=2, ge=0)
    """Bound on edits sent to the commit gate per round."""
    score_margin: float = Field(default=6.0, ge=0)
    """Minimum structure-score gain (nats) of an accepted edit."""
    prior_tolerance: float = Field(default=0.25, ge=0)
    """Allowed relative rise of the do-prior MSE on observed interventions."""
    score_basis: Literal["knn", "cubic", "spline", "rank"] = "cubic"
    """Structure score: ``cubic``, ``spline`` and ``rank`` are the additive terms of the
    interventional BIC (``InterventionalBIC``), which credits spurious parents where its
    basis misfits (ToyGraph seed 0: X -> Y at +21 nats); ``knn`` is the leave-one-out
    nearest-neighbour likelihood (``NeighbourScore``), which does not, and judges
    reversals on the interventional rows of the edited pair. Measured offline on the ten
    literature SCMs, seeds 0-2 (``benchmarks/cbo_parity.py``, issue 23): ``knn`` with
    ``coverage_patience=6`` 14/28 runs within tolerance against cubic's 19/30 (it won
    ToyGraph and Independent runs, lost CompleteGraph, PSA, Synthetic2 and Graph4Nodes
    runs), so cubic stays the default."""
    score_neighbours: int = Field(default=20, ge=1)
    """Neighbours of the ``knn`` score."""
    score_units: int = Field(default=25, ge=1)
    """Units of each trial the ``knn`` score reads (the first ones; all observational
    units are read): the neighbour searches of every family every round grow with the
    rows, and 100 units of 50 trials made CompleteGraph's structure rounds take seconds."""
    score_knots: int = Field(default=5, ge=2)
    """Spline knots of the ``spline`` and ``rank`` bases (``InterventionalBIC``)."""
    prior_weight: float = Field(default=1.0, ge=0)
    """Weight of the LLM beliefs' log-odds in an edit's score (the structure prior)."""
    llm_recheck_every: int = Field(default=5, ge=1)
    """A rejected LLM proposal is re-sent to the gate every this many rounds."""
    llm_every: int = Field(default=5, ge=0)
    """The Calibration and Residual Repair agents consult the LLM every this many rounds
    (from round ``llm_every`` on; 0: the language prior is the only LLM call). Between
    consultations, and offline, both work from the data score alone."""
    repair_candidates_shown: int = Field(default=40, ge=1)
    """The repair prompt lists at most this many candidate edits (best data score first)."""
    max_set_size: int | None = 2
    """Largest exploration set (MIS) considered."""
    grid_1d: int = Field(default=201, ge=5)
    """Candidate points of one-variable sets (see ``CBOConfig``)."""
    grid_2d: int = Field(default=41, ge=5)
    """Candidate points per axis of two-variable sets."""
    units_per_trial: int = Field(default=100, ge=1)
    """Units per intervention (their mean is the observation)."""
    stuck_patience: int | None = Field(default=3, ge=1)
    """``CBOConfig.stuck_patience`` (exploratory EI after this many stale acquisitions);
    the known-graph baseline uses the same default so the comparison stays paired, and it
    equals the suite's known-graph reference (``reference.reference_config``: 21/21 dev
    runs within tolerance against 18/21 with plain EI)."""
    stuck_margin: float = Field(default=1.0, ge=0)
    """``CBOConfig.stuck_margin``."""
    coverage_patience: int | None = Field(default=None, ge=1)
    """``CBOConfig.coverage_patience``: after this many acquisitions without improvement
    the CBO step intervenes on the least-intervened variable, so EI cannot hold the run
    on one set for good (Independent seed 0 stalled on {X, Z} from round 4 with the
    true graph). None (the default, as in the known-graph baseline): EI alone; 6 was
    measured only together with the ``knn`` score (see ``score_basis``)."""
