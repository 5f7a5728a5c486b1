"""agent-cbo resume: kill -9 mid-run, resume, and match an uninterrupted run."""

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
from optiforge.agents.kit import RunContext
from optiforge.errors import ConfigError
from optiforge.evals.suites.cbo import CBOBenchmark, CBOTask
from optiforge.runs import FileTracer

BUDGET = 8
SEED = 1
CONFIG = {"grid_1d": 41, "n_obs": 100}

# The child runs the same solve with a slow environment (each intervention sleeps), so
# the parent can kill it between trials reliably.
CHILD = (
    """
import sys, time
from pathlib import Path
from optiforge.agents.agent_cbo import SPEC, AgentCBOConfig
from optiforge.agents.kit import RunContext
from optiforge.evals.suites.cbo import CBOBenchmark
from optiforge.runs import FileTracer

run_dir = Path(sys.argv[1])
task = next(t for t in CBOBenchmark().tasks("dev") if t.name == "toy_graph")
do = task.scm.do
def slow_do(*a, **k):
    time.sleep(0.4)
    return do(*a, **k)
task.scm.do = slow_do
ctx = RunContext(tracer=FileTracer(run_dir / "events.jsonl"), seed=SEED, run_dir=run_dir)
SPEC.solve(task, ctx, AgentCBOConfig.model_validate(CONFIG), BUDGET, False)
""".replace("SEED", str(SEED))
    .replace("CONFIG", repr(CONFIG))
    .replace("BUDGET", str(BUDGET))
)


@pytest.fixture(scope="module")
def toy() -> CBOTask:
    return next(t for t in CBOBenchmark().tasks("dev") if t.name == "toy_graph")


def _trial_events(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    text = path.read_text()
    # While the child writes, the last line may be partly on disk: only whole lines count.
    whole = text[: text.rfind("\n") + 1]
    lines = [json.loads(x) for x in whole.splitlines() if x.strip()]
    return [e for e in lines if e["kind"] == "cbo_trial"]


def _solve(task: CBOTask, run_dir: Path, resume: bool) -> Any:
    ctx = RunContext(tracer=FileTracer(run_dir / "events.jsonl"), seed=SEED, run_dir=run_dir)
    return SPEC.solve(task, ctx, AgentCBOConfig.model_validate(CONFIG), BUDGET, resume)


def test_kill_and_resume_matches_uninterrupted_run(toy: CBOTask, tmp_path: Path) -> None:
    run_dir = tmp_path / "killed"
    run_dir.mkdir()
    events = run_dir / "events.jsonl"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(run_dir)], env=env)
    try:
        deadline = time.monotonic() + 120
        while len(_trial_events(events)) < 3:
            assert proc.poll() is None, "child ended before it was killed"
            assert time.monotonic() < deadline, "child made no progress"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    before = [e["trial"] for e in _trial_events(events)]
    assert 3 <= len(before) < BUDGET

    calls = {"n": 0}
    do = toy.scm.do

    def counting_do(*a: Any, **k: Any) -> Any:
        calls["n"] += 1
        return do(*a, **k)

    toy.scm.do = counting_do  # type: ignore[method-assign]
    try:
        with pytest.raises(ConfigError, match="resume"):
            _solve(toy, run_dir, resume=False)  # a checkpointed run is not overwritten
        resumed = _solve(toy, run_dir, resume=True)
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

    reference = _solve(toy, tmp_path / "straight", resume=False)
    got = resumed.best_candidate["trials"]
    ref = reference.best_candidate["trials"]
    assert len(got) == len(ref) == BUDGET == resumed.n_evaluations
    # Same interventions in the same order, and the trials seen before the kill are the
    # ones the resumed trace holds (not re-drawn).
    assert [(t["exploration_set"], t["x"]) for t in got] == [
        (t["exploration_set"], t["x"]) for t in ref
    ]
    assert got[: len(before)] == before
    assert got == ref

    # Resuming a finished run returns its outcome without any new intervention.
    toy.scm.do = counting_do  # type: ignore[method-assign]
    try:
        again = _solve(toy, run_dir, resume=True)
    finally:
        toy.scm.do = do  # type: ignore[method-assign]
    assert calls["n"] == BUDGET - first
    assert again.best_candidate["trials"] == got
