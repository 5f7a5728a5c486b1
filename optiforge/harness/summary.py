"""``RunSummary``: one agent run's ``summary.json``, written and read through one model.

The runner (``harness.runner.run_task``) builds it after the re-measurement and writes it
with ``write``; every reader loads it with ``RunSummary.load(path)`` and reads fields,
never string keys. The file is the JSON of the fields the writer set, in field order, so
its contents are what they were when the runner wrote a dict. A hard stop
(``harness.wallcap.mark_stopped``) and an older optiforge may write fewer keys, or others:
a missing field reads as its default (None: not recorded, never a made-up 0), an unknown
key is kept (``model_extra``).

An agent's own numbers stay a dict: ``extra`` is the agent's ``AgentOutcome.extra``
(each agent's ``report.py`` declares its model).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

SUMMARY = "summary.json"

Number = int | float
"""A value as the run produced it (an int stays an int: the file is unchanged)."""


class RunSummary(BaseModel):
    """Every key of one run's ``summary.json`` (see the module docstring)."""

    model_config = ConfigDict(extra="allow")

    agent: str | None = None
    method: str | None = None
    """The agent itself or one of its baselines."""
    benchmark: str | None = None
    task: str | None = None
    split: str | None = None
    seed: int | None = None
    model: str | None = None
    """The run's provider (``offline``: the agent's non-LLM proposer)."""
    metric: str | None = None
    higher_is_better: bool | None = None
    best_score: Number | None = None
    """The harness's own re-measurement of the returned candidate (None: none passed)."""
    verified: bool | None = None
    claimed_score: Number | None = None
    """The agent's own number for its candidate (diagnosis only, never the result)."""
    baseline_name: str | None = None
    baseline_score: Number | None = None
    baseline_trace: list[Number | None] | None = None
    n_evaluations: int | None = None
    llm_calls: int | None = None
    tokens: int | None = None
    cost_usd: Number | None = None
    unpriced_calls: int | None = None
    sandbox_s: Number | None = None
    wall_s: Number | None = None
    stop_reason: str | None = None
    llm_proposals: dict[str, int] | None = None
    """The LLM's proposals as the agent counts them (``{"made", "valid"}``; None: no count)."""
    notes: list[str] = Field(default_factory=list)
    """What the budget or the agent changed about what was measured (one line each)."""
    status: str | None = None
    status_reason: str | None = None
    trace: list[Number | None] = Field(default_factory=list)
    """The harness's best-so-far curve when the task re-measures one, else the agent's."""
    observed_trace: list[Number | None] = Field(default_factory=list)
    extra: dict[str, Any] = Field(default_factory=dict)
    """The agent's ``AgentOutcome.extra`` (agent-specific)."""
    verification: dict[str, Any] = Field(default_factory=dict)
    """The re-measurement's details (``Score.details``, or why there was none)."""
    best_path: str | None = None
    """The best candidate's file, relative to the run directory."""
    hard_stop: bool = False
    """Written by the wall-time cap's watchdog: nothing was re-measured."""
    observed_best: dict[str, Any] | None = None
    """A hard stop's best value as the search observed it."""
    note: str | None = None
    """A hard stop's explanation."""

    @classmethod
    def load(cls, path: str | Path) -> RunSummary:
        """The summary in ``path`` (a ``summary.json``, or the run directory holding one).

        Raises:
            OSError: no such file; ``ValueError``: not a summary (bad JSON or fields).
        """
        p = Path(path)
        if p.is_dir():
            p = p / SUMMARY
        return cls.model_validate(json.loads(p.read_text()))

    @classmethod
    def load_if_any(cls, run_dir: Path | None) -> RunSummary | None:
        """``run_dir``'s summary, None when it has none (or an unreadable one)."""
        if run_dir is None or not (run_dir / SUMMARY).is_file():
            return None
        try:
            return cls.load(run_dir / SUMMARY)
        except (OSError, ValueError):
            return None

    def row(self) -> dict[str, Any]:
        """The summary as the dict the runner writes: the keys it set, in field order, with
        their values as given (no serialization: an agent's ``extra`` is written as before)."""
        out = {n: getattr(self, n) for n in type(self).model_fields if n in self.model_fields_set}
        out.update(self.model_extra or {})
        return out

    def write(self, run_dir: Path) -> Path:
        """Write ``run_dir/summary.json`` (``row``, indented, one trailing newline)."""
        path = run_dir / SUMMARY
        path.write_text(json.dumps(self.row(), indent=2, default=str) + "\n")
        return path
