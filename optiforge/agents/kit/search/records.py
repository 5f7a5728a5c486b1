"""The search loop's records: proposals, evaluated candidates, its config, graph state
and result, and the names of its two candidate logs."""

from __future__ import annotations

import hashlib
import json
from typing import Any, TypedDict

from pydantic import BaseModel, ConfigDict, Field

from optiforge.memory.provenance import Provenance

EVALUATIONS = "evaluations.jsonl"
REJECTED = "rejected.jsonl"
"""Candidates rejected at materialization (never evaluated), one record a line."""


class Proposal(BaseModel):
    """A candidate before evaluation: a JSON-serialisable payload plus lineage."""

    model_config = ConfigDict(extra="forbid")

    payload: dict[str, Any]
    """What the candidate is (code, config, expression...)."""
    parent_ids: list[str] = Field(default_factory=list)
    origin: str = "seed"
    """How it came about: ``seed``, ``mutation``, ``crossover``, ``llm``..."""
    rationale: str = ""
    error: str | None = None
    """Why the proposer could not make a candidate here (e.g. a model's reply that never
    matched its schema): recorded as an invalid candidate with this reason, costing no
    evaluation, instead of ending the search."""


class Evaluated(BaseModel):
    """A candidate after evaluation (or after failing materialization)."""

    model_config = ConfigDict(extra="forbid")

    id: str
    key: str
    """Hash of the materialized payload: identical candidates share a key."""
    payload: dict[str, Any]
    parent_ids: list[str] = Field(default_factory=list)
    origin: str = "seed"
    rationale: str = ""
    round: int = 0
    passed: bool = False
    value: float | None = None
    metrics: dict[str, float] = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)
    error: str | None = None
    eval_s: float = 0.0

    def describe(self) -> str:
        """One line for prompts and logs."""
        if self.error:
            return f"{self.id}: failed ({self.error})"
        return f"{self.id}: value={self.value:.6g}" if self.value is not None else self.id


class SearchConfig(BaseModel):
    """Knobs of the shared loop (agents embed or extend this)."""

    model_config = ConfigDict(extra="forbid")

    max_evaluations: int = Field(default=32, ge=1)
    """Candidate evaluations the search may spend (duplicates are not evaluated again)."""
    max_rounds: int = Field(default=1000, ge=1)
    proposals_per_round: int = Field(default=4, ge=1)
    population_size: int = Field(default=8, ge=1)
    """Survivors kept by selection (best passing candidates)."""
    patience: int | None = Field(default=None, ge=1)
    """Stop after this many rounds without improvement (None: never)."""
    max_duplicate_rounds: int = Field(default=3, ge=1)
    """Stop after this many consecutive rounds whose proposals were all duplicates."""
    memory_recall: int = Field(default=4, ge=0)
    """Lessons of earlier runs recalled from memory into the LLM proposer's prompts
    (``kit.recall``; 0: none)."""
    recall_provenance: list[Provenance] | None = None
    """Recall only lessons of these provenances (``memory.provenance``; e.g. ``[measured,
    agent]`` for trusted text only). None: any, untrusted ones shown quoted as data."""
    overlap: bool | None = None
    """A steady pipeline instead of lock-step rounds: round r+1 is proposed, and its
    candidates submitted to the evaluators, while round r is still evaluating, so the
    workers never wait for a round's slowest candidate or for the LLM. Its proposals see
    the population and history of the rounds before r (results one round older; round 1
    still waits for the seeds). Deterministic: which results a proposal sees is fixed by
    round numbers, not by timing, so a replay or a resume proposes exactly the same. When
    a stop is decided with a round in flight, that round is evaluated (it is paid for).
    None (the default): on when the run's executor has more than one worker (``--workers
    2``: the LLM proposes while the workers evaluate, in every agent on this loop), off
    at one worker (lock-step, as before); decided at round 0 and kept in the checkpoint,
    so a resume with other ``--workers`` goes on as the run began."""


def payload_key(payload: dict[str, Any]) -> str:
    """Stable hash of a payload (canonical JSON)."""
    blob = json.dumps(payload, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:20]


class SearchState(TypedDict, total=False):
    """Graph state (serializable only, of bounded size: no history, see the module doc)."""

    round: int
    proposals: list[dict[str, Any]]
    batch: list[dict[str, Any]]
    """This round's materialized (or failed) candidates awaiting evaluation."""
    population: list[dict[str, Any]]
    history_round: int
    """The history is the logged candidates of the rounds before this one."""
    n_history: int
    """How many candidates the history holds (evaluated and rejected)."""
    history_digest: str
    """XOR of the history's id hashes (``ids_digest``): the logs are checked against it."""
    n_evaluations: int
    n_duplicates: int
    n_invalid: int
    best: dict[str, Any] | None
    stale_rounds: int
    duplicate_rounds: int
    lessons: list[str]
    recalled: list[dict[str, Any]]
    """Lessons recalled from memory at round 0 (``kit.recall``)."""
    done: bool
    stop_reason: str
    ahead: list[dict[str, Any]]
    """``overlap``: round+1's candidates, materialized and submitted while this round
    evaluates (``batch`` once this round is selected)."""
    ahead_proposed: bool
    """``overlap``: round+1 was proposed ahead (its batch may be empty: all duplicates)."""
    pending_stop: str
    """``overlap``: why the search stops after this round (the proposer ran out ahead)."""
    draining: bool
    """``overlap``: a stop was decided with a round in flight; it is evaluated, then done."""
    batch_ready: bool
    """``overlap``: ``batch`` is a round proposed ahead (no propose/materialize for it)."""
    overlap: bool
    """Whether this search pipelines its rounds (``SearchConfig.overlap`` resolved at
    round 0; absent in checkpoints of older runs: the config's value then)."""


class SearchResult(BaseModel):
    """Outcome of ``run_search``."""

    model_config = ConfigDict(extra="forbid")

    best: Evaluated | None
    history: list[Evaluated]
    population: list[Evaluated]
    n_evaluations: int
    n_duplicates: int
    n_invalid: int
    rounds: int
    stop_reason: str
    lessons: list[str] = Field(default_factory=list)

    def trace(self, higher_is_better: bool) -> list[float | None]:
        """Best-so-far value after each evaluation (None until a candidate passes)."""
        out: list[float | None] = []
        best: float | None = None
        for ev in self.history:
            if (
                ev.passed
                and ev.value is not None
                and (best is None or (ev.value > best if higher_is_better else ev.value < best))
            ):
                best = ev.value
            out.append(best)
        return out


def is_invalid(ev: dict[str, Any]) -> bool:
    """Rejected at materialization (never evaluated, costs no evaluation budget)."""
    return str(ev.get("error") or "").startswith("invalid:")
