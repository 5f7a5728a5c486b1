"""The one typed outcome of an agent run (the search loop's result becomes one in
``kit.search.outcome``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class AgentOutcome(BaseModel):
    """What one agent (or baseline) run on one task produced.

    ``best_candidate`` is re-scored by the harness (``Task.evaluate``); ``claimed_value``
    is only the agent's own number, kept for diagnosis and never reported as the result.
    """

    model_config = ConfigDict(extra="forbid")

    best_candidate: Any = None
    claimed_value: float | None = None
    trace: list[float | None] = Field(default_factory=list)
    """Best-so-far value after each evaluation (the convergence curve)."""
    n_evaluations: int = 0
    stop_reason: str = ""
    extra: dict[str, Any] = Field(default_factory=dict)
    failure: str | None = None
    """The agent's verdict that its run failed although it returned a candidate (e.g. not
    one LLM proposal was valid, so the candidate is only the seed); the harness then
    reports the run ``failed`` (``optiforge.harness.status``)."""
    notes: list[str] = Field(default_factory=list)
    """What a reader must know about what the run measured, one line each (e.g. a budget
    too small for the LLM to be asked, a ``--budget`` the agent does not spend): the
    harness puts them in ``summary.json`` (``notes``) and the CLI prints them as warnings."""
    llm_proposals: dict[str, int] | None = None
    """The LLM's proposals as the agent counts them: ``{"made": n, "valid": k}`` (valid: it
    passed the agent's checks and was scored). None: no LLM proposed, or the agent does not
    count. The harness puts it in ``summary.json`` and reports a run whose ``made > 0`` and
    ``valid == 0`` as ``failed`` (``harness.status.run_status``)."""
