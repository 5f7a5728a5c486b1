"""Kernel Discovery resume: a run SIGKILLed mid-BO continues without re-evaluating, same result.

Also the selection margin's rule (keep the incumbent unless beaten by more than the margin).
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
import torch

from optiforge.agents.kernel_discovery.problem import BO_EVALUATIONS
from optiforge.agents.kernel_discovery.selection import select_kernel
from optiforge.agents.kit import Evaluated
from optiforge.config import RunSettings
from optiforge.evals.registry import resolve_task
from optiforge.evals.suites.hdbo.problems import HDBOProblem
from optiforge.harness.runner import run_task

BUDGET, KILL_AFTER = 15, 13
AGENT = {
    "refresh_every": 2,  # refreshes at rounds 0, 2, 4: the kill (after round 2) falls between
    "kernel_evals_per_refresh": 3,
    "seed_kernels": ["RBF_ARD", "Matern52_ARD"],
    "acq_restarts": 1,
    "acq_raw_samples": 16,
}

# The child counts objective calls in a file and blocks (never evaluates) the call that
# would exceed KILL_AFTER, so the parent's SIGKILL lands at a known point.
CHILD = """
import sys, time, torch
from pathlib import Path
from threadpoolctl import threadpool_limits
torch.set_num_threads(1); threadpool_limits(1)
from optiforge.config import RunSettings
from optiforge.evals.registry import resolve_task
from optiforge.harness.runner import run_task
from optiforge.evals.suites.hdbo.problems import HDBOProblem
run_dir, count, stop_after, agent, budget = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
orig = HDBOProblem.__call__
def counted(self, X):
    done = len(count.read_text().splitlines()) if count.exists() else 0
    if done + X.shape[0] > stop_after:
        Path(str(count) + ".blocked").write_text(str(done))
        time.sleep(600)
    y = orig(self, X)
    with count.open("a") as fh:
        fh.write("x\\n" * X.shape[0])
    return y
HDBOProblem.__call__ = counted
import json
settings = RunSettings(budget=budget, memory="none", agent=json.loads(agent))
run_task("kernel-discovery", resolve_task("hdbo/levy4_in_25@dev"), settings, run_dir, with_baseline=False)
"""


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    orig = HDBOProblem.__call__

    def counted(self: HDBOProblem, X: torch.Tensor) -> torch.Tensor:
        calls.append(int(X.shape[0]))
        return orig(self, X)

    monkeypatch.setattr(HDBOProblem, "__call__", counted)
    return calls


def _lines(path: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow
@pytest.mark.timeout(1800)  # a hang guard only: ~70 s here under 4 busy loops
def test_sigkilled_run_resumes_without_repeating_and_matches(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from threadpoolctl import threadpool_limits

    # Same thread counts as the child: BLAS reductions must round the same way in both.
    n_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with threadpool_limits(1):
            _check_resume(tmp_path, monkeypatch)
    finally:
        torch.set_num_threads(n_threads)


def _check_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    task = resolve_task("hdbo/levy4_in_25@dev")
    settings = RunSettings(budget=BUDGET, memory="none", agent=AGENT)
    run_dir, count = tmp_path / "killed", tmp_path / "calls.txt"
    env = {**os.environ, "PYTHONPATH": str(Path.cwd())}
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD,
            str(run_dir),
            str(count),
            str(KILL_AFTER),
            json.dumps(AGENT),
            str(BUDGET),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    blocked = Path(str(count) + ".blocked")
    deadline = time.monotonic() + 900  # a hang guard: the kill point is an event, not a time
    while not blocked.exists():
        if child.poll() is not None:
            pytest.fail(f"child exited early: {child.stderr.read().decode()[-2000:]}")  # type: ignore[union-attr]
        if time.monotonic() > deadline:
            child.kill()
            pytest.fail("child never reached the kill point")
        time.sleep(0.2)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    assert len(count.read_text().splitlines()) == KILL_AFTER
    logged = _lines(run_dir / BO_EVALUATIONS)
    assert sum(len(r["y"]) for r in logged[1:]) == KILL_AFTER  # all persisted before the kill
    assert not (run_dir / "summary.json").exists()
    kernel_evals_before = len(_lines(run_dir / "evaluations.jsonl"))

    calls = _counting(monkeypatch)
    progress_resumed: list[dict[str, Any]] = []
    resumed = run_task(
        "kernel-discovery",
        task,
        settings,
        run_dir,
        resume=True,
        with_baseline=False,
        progress=progress_resumed.append,
    )
    assert sum(calls) == BUDGET - KILL_AFTER  # the 13 finished evaluations were not redone
    assert resumed.n_evaluations == BUDGET

    calls.clear()
    progress_fresh: list[dict[str, Any]] = []
    fresh = run_task(
        "kernel-discovery",
        task,
        settings,
        tmp_path / "fresh",
        with_baseline=False,
        progress=progress_fresh.append,
    )
    assert sum(calls) == BUDGET
    # Same seed, uninterrupted: the very same points and values, hence the same best.
    assert resumed.extra["refreshes"] == fresh.extra["refreshes"]
    a, b = resumed.best_score, fresh.best_score
    assert a == b and resumed.claimed_score == fresh.claimed_score
    assert resumed.trace == fresh.trace
    # The whole outcome, not only the headline numbers: nothing a resume needs lives off
    # the checkpointed state (BO log, search checkpoints), so nothing differs.
    for key in ("n_evaluations", "observed_trace", "extra", "verification", "stop_reason"):
        assert getattr(resumed, key) == getattr(fresh, key), key
    bo_resumed, bo_fresh = (
        _lines(run_dir / BO_EVALUATIONS),
        _lines(tmp_path / "fresh" / BO_EVALUATIONS),
    )
    assert bo_resumed == bo_fresh  # same points, values, kernels, fallbacks, round by round
    # Progress: the resumed run reports what the uninterrupted run reported from the resume
    # point on (the refreshes before the kill were reported by the killed run).
    # (The killed child had no progress callback, so its checkpoints hold no report to
    # repeat first; tests/harness/test_resume_ledger.py covers that.) The runner's phase
    # reports after the search have no count.
    counted_resumed = [p for p in progress_resumed if "evaluations" in p]
    counted_fresh = [p for p in progress_fresh if "evaluations" in p]
    assert counted_resumed and counted_fresh[-1]["evaluations"] == BUDGET
    assert counted_resumed == counted_fresh[-len(counted_resumed) :]
    assert counted_resumed[0]["evaluations"] == KILL_AFTER + 1  # the round-4 refresh
    # Finished kernel searches were replayed from their checkpoints, not re-scored: the
    # resumed run's kernel-evaluation log holds exactly the uninterrupted run's evaluations.
    ids_resumed = [e["id"] for e in _lines(run_dir / "evaluations.jsonl")]
    ids_fresh = [e["id"] for e in _lines(tmp_path / "fresh" / "evaluations.jsonl")]
    assert len(ids_resumed) == len(set(ids_resumed)) and sorted(ids_resumed) == sorted(ids_fresh)
    assert kernel_evals_before < len(ids_resumed)  # the refresh at round 4 ran after the resume


class _Boom(Exception):
    pass


def test_progress_callback_is_restored_when_the_bo_loop_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The kernel searches run with progress silenced on a copy of the context: the caller's
    ``ctx.progress`` is never swapped out, so it is intact when the BO loop fails."""
    from optiforge.agents.kernel_discovery import SPEC, KernelDiscoveryConfig
    from optiforge.agents.kit import RunContext

    task = resolve_task("hdbo/levy4_in_25@dev")
    orig = HDBOProblem.__call__
    n_calls = [0]

    def fails_in_round_0(self: HDBOProblem, X: torch.Tensor) -> torch.Tensor:
        n_calls[0] += 1
        if n_calls[0] > 1:  # after the initial design and the first kernel refresh
            raise _Boom()
        return orig(self, X)

    monkeypatch.setattr(HDBOProblem, "__call__", fails_in_round_0)
    seen: list[dict[str, Any]] = []

    def cb(info: dict[str, Any]) -> None:
        seen.append(info)

    ctx = RunContext(progress=cb)
    with pytest.raises(_Boom):
        SPEC.build(task, KernelDiscoveryConfig(**AGENT), BUDGET).execute(ctx)
    assert seen and seen[-1]["evaluations"] == task.n_init  # the refresh reported progress
    assert ctx.progress is cb


def _ev(name: str, value: float) -> Evaluated:
    return Evaluated(id=name, key=name, payload={"expression": name}, passed=True, value=value)


def test_selection_margin_keeps_the_incumbent_unless_clearly_beaten() -> None:
    inc, close, far = _ev("RBF_ARD", -0.50), _ev("RQ_ARD", -0.51), _ev("Matern52_ARD", -0.60)
    assert select_kernel(close, inc, 0.0) is close  # margin 0: any strict improvement wins
    assert select_kernel(close, inc, 0.05) is inc  # 0.01 < 0.05 * 0.5
    assert select_kernel(far, inc, 0.05) is far  # 0.10 > 0.025
    assert select_kernel(inc, inc, 0.05) is inc
    assert select_kernel(close, None, 0.05) is close  # incumbent failed on the new data
    pos_inc, pos_best = _ev("RBF_ARD", 0.20), _ev("RQ", 0.195)
    assert select_kernel(pos_best, pos_inc, 0.05) is pos_inc  # |incumbent| for positive CRPS too
    assert select_kernel(pos_best, pos_inc, 0.02) is pos_best


@pytest.mark.slow
def test_a_large_margin_keeps_rbf_ard_through_the_agent(tmp_path: Path) -> None:
    task = resolve_task("hdbo/levy4_in_25@dev")
    agent = {**AGENT, "refresh_every": 1, "selection_margin": 10.0}
    settings = RunSettings(budget=13, memory="none", agent=agent)
    out = run_task("kernel-discovery", task, settings, tmp_path / "run", with_baseline=False)
    refs = out.extra["refreshes"]
    assert len(refs) == 3 and all(r["best"] == "RBF_ARD" for r in refs)
    # The search did find a (slightly) better kernel on this data; the margin held it back.
    assert any(r["kept_incumbent"] for r in refs)
    assert all(r["kept_incumbent"] == (r["search_best"] != "RBF_ARD") for r in refs)
    assert out.extra["final_loo_crps"]["discovered_kernel"] == "RBF_ARD"
    assert set(out.extra["kernels_used"]) == {"RBF_ARD"}
