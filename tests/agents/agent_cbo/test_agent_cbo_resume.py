"""agent-cbo resume: kill -9 mid-run, resume, and match an uninterrupted run.

The graph state is the agent's only record (``agent.py``'s docstring): a resumed run
rebuilds its numerical session from the checkpointed state once, and its outcome (trace,
interventions, gate decisions, beliefs, evaluations) equals a straight run of the seed.
Offline and with an LLM that the commit gate must keep rejecting (its calibration and
repair calls fall on both sides of the kill).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from optiforge.agents.agent_cbo import SPEC, AgentCBOConfig
from optiforge.agents.agent_cbo.testing import BeliefGraphLLM
from optiforge.agents.kit import RunContext
from optiforge.agents.spec import AgentOutcome
from optiforge.errors import ConfigError
from optiforge.evals.suites.cbo import CBOBenchmark, CBOTask
from optiforge.runs import FileTracer

BUDGET = 8
SEED = 1
CONFIG = {"grid_1d": 41, "n_obs": 100, "llm_every": 2}
"""``llm_every=2``: with an LLM, calibration and repair consult it at rounds 2, 4 and 6, so
the kill (after trial 3 or later) falls between consultations."""

# Believes X -> Z, X -> Y and no Z -> Y (the truth is X -> Z -> Y): it keeps proposing
# the removal of Z -> Y, which the gate rejects (see test_agent.py).
WRONG = ([("X", "Z"), ("X", "Y")], {"absent": [("Z", "Y")], "confidence": 0.9})

# The child runs the same build with an environment that blocks the first intervention
# after the third trial, so the parent kills it at a known point (no race with the load).
CHILD = (
    """
import json, sys, time
from pathlib import Path
from optiforge.agents.agent_cbo import SPEC, AgentCBOConfig
from optiforge.agents.kit import RunContext
from optiforge.evals.suites.cbo import CBOBenchmark
from optiforge.runs import FileTracer
from optiforge.agents.agent_cbo.testing import BeliefGraphLLM

run_dir = Path(sys.argv[1])
llm = BeliefGraphLLM(WRONG[0], **WRONG[1]) if sys.argv[2] == "llm" else None
task = next(t for t in CBOBenchmark().tasks("dev") if t.name == "toy_graph")
do = task.scm.do
events = run_dir / "events.jsonl"
def blocking_do(*a, **k):
    # once three trials are on disk, the next intervention never returns: the parent's
    # SIGKILL lands there, whatever the machine's load
    lines = events.read_text().splitlines() if events.exists() else []
    done = sum(1 for x in lines if x.endswith("}") and json.loads(x).get("kind") == "cbo_trial")
    if done >= 3:
        (run_dir / "blocked").write_text(str(done))
        time.sleep(600)
    return do(*a, **k)
task.scm.do = blocking_do
ctx = RunContext(llm=llm, tracer=FileTracer(run_dir / "events.jsonl"), seed=SEED,
                 run_dir=run_dir)
SPEC.build(task, AgentCBOConfig.model_validate(CONFIG), BUDGET).execute(ctx)
""".replace("SEED", str(SEED))
    .replace("CONFIG", repr(CONFIG))
    .replace("BUDGET", str(BUDGET))
    .replace("WRONG", repr(WRONG))
)


@pytest.fixture(scope="module")
def toy() -> CBOTask:
    return next(t for t in CBOBenchmark().tasks("dev") if t.name == "toy_graph")


def _events(path: Path, kind: str) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    text = path.read_text()
    # While the child writes, the last line may be partly on disk: only whole lines count.
    whole = text[: text.rfind("\n") + 1]
    lines = [json.loads(x) for x in whole.splitlines() if x.strip()]
    return [e for e in lines if e["kind"] == kind]


def _trial_events(path: Path) -> list[dict[str, Any]]:
    return _events(path, "cbo_trial")


def _llm(kind: str) -> BeliefGraphLLM | None:
    return BeliefGraphLLM(WRONG[0], **WRONG[1]) if kind == "llm" else None  # type: ignore[arg-type]


def _solve(task: CBOTask, run_dir: Path, resume: bool, kind: str) -> AgentOutcome:
    ctx = RunContext(llm=_llm(kind), tracer=FileTracer(run_dir / "events.jsonl"), seed=SEED,
                     run_dir=run_dir)  # fmt: skip
    return SPEC.build(task, AgentCBOConfig.model_validate(CONFIG), BUDGET).execute(
        ctx, resume=resume
    )


def _comparable(out: AgentOutcome) -> dict[str, Any]:
    """The outcome as the harness records it (JSON: PC's edge tuples read back from the
    checkpoint are lists), less ``wall_s``, the only field equal runs may differ in."""
    d = json.loads(out.model_dump_json())
    d["extra"].pop("wall_s")
    return d


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["offline", "llm"])
def test_kill_and_resume_matches_uninterrupted_run(toy: CBOTask, tmp_path: Path, kind: str) -> None:
    run_dir = tmp_path / "killed"
    run_dir.mkdir()
    events = run_dir / "events.jsonl"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(run_dir), kind], env=env)
    try:
        # a safety net against a hung child, not a measure: generous on a loaded machine
        deadline = time.monotonic() + 900
        while not (run_dir / "blocked").exists():
            assert proc.poll() is None, "child ended before it was killed"
            assert time.monotonic() < deadline, "child made no progress"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)  # kill -9: no handler, no flush, no cleanup
        assert proc.wait(timeout=120) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
    before = [e["trial"] for e in _trial_events(events)]
    assert len(before) == 3  # the child blocked in the first intervention after trial 3
    edits_before = _events(events, "cbo_edit")

    calls = {"n": 0}
    do = toy.scm.do

    def counting_do(*a: Any, **k: Any) -> Any:
        calls["n"] += 1
        return do(*a, **k)

    toy.scm.do = counting_do  # type: ignore[method-assign]
    try:
        with pytest.raises(ConfigError, match="resume"):
            _solve(toy, run_dir, False, kind)  # a checkpointed run is not overwritten
        resumed = _solve(toy, run_dir, True, kind)
    finally:
        toy.scm.do = do  # type: ignore[method-assign]
    after = [e["trial"] for e in _trial_events(events)][len(before) :]
    # Only the missing trials ran again (the SCM was asked once per missing trial). A kill
    # between a trial's event and its node's checkpoint re-runs that one trial.
    first = after[0]["index"] if after else BUDGET
    assert first in (len(before), len(before) - 1), (first, len(before))
    assert [t["index"] for t in after] == list(range(first, BUDGET))
    assert calls["n"] == BUDGET - first
    if first < len(before):  # the re-run trial made the same choice as the killed one
        assert after[0] == before[first]
    # The session was rebuilt from the checkpointed state once, on the first node that
    # needed it, and every later node found it in the cache (the state describes it).
    restored = _events(events, "cbo_resume")
    assert len(restored) == 1 and restored[0]["n_trials_restored"] in (first, first + 1)

    straight = tmp_path / "straight"
    reference = _solve(toy, straight, False, kind)
    assert _events(straight / "events.jsonl", "cbo_resume") == []  # never rebuilt
    got = resumed.best_candidate["trials"]
    ref = reference.best_candidate["trials"]
    assert len(got) == len(ref) == BUDGET == resumed.n_evaluations == reference.n_evaluations
    # Same interventions in the same order, and the trials seen before the kill are the
    # ones the resumed trace holds (not re-drawn).
    assert [(t["exploration_set"], t["x"]) for t in got] == [
        (t["exploration_set"], t["x"]) for t in ref
    ]
    assert got[: len(before)] == before
    assert got == ref
    assert resumed.trace == reference.trace
    # The same gate decisions (those made before the kill come from the checkpoint).
    edits = resumed.extra["edits"]
    assert edits == reference.extra["edits"]
    assert edits[: len(edits_before)] == [
        {k: v for k, v in e.items() if k in edits[0]} for e in edits_before
    ]
    if kind == "llm":  # the LLM's rejected proposals were gated on both sides of the kill
        assert any(d["source"] == "llm" and not d["accepted"] for d in edits)
        assert resumed.extra["beliefs"] == reference.extra["beliefs"]
    assert _comparable(resumed) == _comparable(reference)

    # Resuming a finished run returns its outcome without any new intervention, read from
    # the final state alone (no session is rebuilt).
    toy.scm.do = counting_do  # type: ignore[method-assign]
    try:
        again = _solve(toy, run_dir, True, kind)
    finally:
        toy.scm.do = do  # type: ignore[method-assign]
    assert calls["n"] == BUDGET - first
    assert len(_events(events, "cbo_resume")) == 1
    assert _comparable(again) == _comparable(reference)
