"""``RunSummary``: summary.json is written through the model with the runner's keys, in its
order and with its values, and read back through it (a hard stop's summary included)."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from optiforge.harness.summary import RunSummary
from optiforge.harness.wallcap import mark_stopped

RUNNER_KEYS = [
    "agent", "method", "benchmark", "task", "split", "seed", "model", "metric",
    "higher_is_better", "best_score", "verified", "claimed_score", "baseline_name",
    "baseline_score", "baseline_trace", "n_evaluations", "llm_calls", "tokens", "cost_usd",
    "unpriced_calls", "sandbox_s", "wall_s", "stop_reason", "llm_proposals", "notes", "status",
    "status_reason", "trace", "observed_trace", "extra", "verification", "best_path",
]  # fmt: skip


class _Opaque(BaseModel):
    """A value the runner wrote with ``default=str`` (a dump would turn it into a dict)."""

    x: int = 1


def _full() -> dict[str, object]:
    values: dict[str, object] = {k: None for k in RUNNER_KEYS}
    values.update(agent="evolve", seed=0, best_score=3, verified=True, n_evaluations=4,
                  llm_calls=0, tokens=0, cost_usd=0.0, unpriced_calls=0, sandbox_s=0.25,
                  wall_s=1.5, stop_reason="evaluation budget spent", notes=["a note"],
                  trace=[None, 5.0, 3], observed_trace=[], extra={"z": 1, "a": (1, 2), "m": _Opaque()},
                  verification={"metrics": {"mse": 3.0}})  # fmt: skip
    return values


def test_the_file_is_what_the_runner_wrote_as_a_dict(tmp_path: Path) -> None:
    values = _full()
    RunSummary(**values).write(tmp_path)  # type: ignore[arg-type]
    text = (tmp_path / "summary.json").read_text()
    # the runner's former write, byte for byte: its keys in its order, an int stays an int
    assert text == json.dumps(values, indent=2, default=str) + "\n"
    assert list(json.loads(text)) == RUNNER_KEYS


def test_load_reads_fields_and_keeps_unknown_keys(tmp_path: Path) -> None:
    values = {**_full(), "from_a_newer_version": 7}
    (tmp_path / "summary.json").write_text(json.dumps(values, default=str))
    s = RunSummary.load(tmp_path)
    assert (s.best_score, s.seed, s.notes, s.extra["z"]) == (3, 0, ["a note"], 1)
    assert s.model_extra == {"from_a_newer_version": 7}
    assert s.row()["from_a_newer_version"] == 7


def test_a_hard_stopped_run_reads_through_the_model(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(json.dumps(
        {"config": {"agent": "evolve", "task": "funcfit/quadratic@dev", "settings": {}}, "seed": 2}
    ))  # fmt: skip
    assert mark_stopped(tmp_path, "wall cap")
    s = RunSummary.load(tmp_path)
    assert s.hard_stop and s.status == "stopped" and s.seed == 2 and s.best_score is None
    # not recorded reads as None, never as a made-up number
    assert s.llm_calls is None and s.cost_usd is None


def test_load_if_any_is_none_without_a_readable_summary(tmp_path: Path) -> None:
    assert RunSummary.load_if_any(tmp_path) is None
    assert RunSummary.load_if_any(None) is None
    (tmp_path / "summary.json").write_text("{not json")
    assert RunSummary.load_if_any(tmp_path) is None
