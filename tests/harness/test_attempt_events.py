"""The harness reads an agent's attempt events through its spec, never by the event's name."""

from __future__ import annotations

import json
from pathlib import Path

from optiforge.agents import get_agent
from optiforge.harness.pipelines.steps import failure_texts

HARNESS = Path(__file__).resolve().parents[2] / "optiforge" / "harness"


def _events(run_dir: Path, kind: str) -> None:
    rows = [
        {"kind": kind, "task": "t", "attempt": 0, "origin": "llm", "passed": False,
         "reasons": ["objective off by 3%", "not robust"], "tokens": 10},
        {"kind": kind, "task": "t", "attempt": 1, "origin": "repair", "passed": True,
         "reasons": [], "tokens": 12},
    ]  # fmt: skip
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_diagnose_counts_the_attempts_the_agents_spec_declares(tmp_path: Path) -> None:
    kind = get_agent("autorem").attempt_event
    assert kind is not None
    _events(tmp_path, kind)
    n, texts = failure_texts(tmp_path, {"agent": "autorem", "status": "finished"})
    assert (n, texts) == (2, ["objective off by 3%; not robust"])


def test_an_agent_without_attempt_events_counts_none(tmp_path: Path) -> None:
    kind = get_agent("autorem").attempt_event
    assert kind is not None and get_agent("evolve").attempt_event is None
    _events(tmp_path, kind)
    assert failure_texts(tmp_path, {"agent": "evolve", "status": "finished"}) == (0, [])


def test_the_harness_names_no_agents_event() -> None:
    kind = get_agent("autorem").attempt_event
    found = [p.name for p in HARNESS.rglob("*.py") if f'"{kind}"' in p.read_text()]
    assert found == []
