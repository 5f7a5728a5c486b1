"""The search loop's steady pipeline (``SearchConfig.overlap``): round r+1 is proposed and
submitted while round r evaluates, results do not depend on timing, resume is exact."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from optiforge.agents.kit import RunContext, SearchConfig, run_search
from optiforge.evals.protocol import Score
from optiforge.runs import ListTracer
from optiforge.sandboxes import ThreadExecutor
from optiforge.testing.toy_search import GaussianProposer, ToyEvaluator, ToyProblem


class _UnevenEvaluator(ToyEvaluator):
    """Every third candidate (by payload hash) is slow: lock-step rounds wait for it."""

    def __call__(self, payload: dict[str, Any]) -> Score:
        h = int(hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest(), 16)
        time.sleep(0.25 if h % 3 == 0 else 0.01)
        return super().__call__(payload)


class _UnevenProblem(ToyProblem):
    def evaluator(self) -> ToyEvaluator:
        return _UnevenEvaluator()


def _rounds_in_log_order(run_dir: Path) -> list[int]:
    lines = (run_dir / "evaluations.jsonl").read_text().splitlines()
    return [json.loads(line)["round"] for line in lines]


def _run(tmp: Path, name: str, overlap: bool, workers: int | None, **cfg: Any) -> Any:
    ex = ThreadExecutor(workers) if workers else None
    try:
        ctx = RunContext(seed=5, run_dir=tmp / name, executor=ex, tracer=ListTracer())
        config = SearchConfig(
            max_evaluations=cfg.pop("max_evaluations", 22), proposals_per_round=3,
            overlap=overlap, **cfg,
        )  # fmt: skip
        return run_search(_UnevenProblem(), GaussianProposer(), ctx, config), ctx
    finally:
        if ex is not None:
            ex.shutdown()


def test_overlap_evaluates_the_next_round_while_this_one_finishes(tmp_path: Path) -> None:
    res, ctx = _run(tmp_path, "overlap", True, 2)
    assert res.n_evaluations == 22 and res.stop_reason == "evaluation budget spent"
    rounds = _rounds_in_log_order(tmp_path / "overlap")
    # A later round's result landed before an earlier round's slow one: no round barrier.
    assert any(a > b for a, b in zip(rounds, rounds[1:], strict=False)), rounds
    ahead = [e for e in ctx.tracer.of("proposed") if e.get("ahead")]
    assert ahead, "rounds from 2 on are proposed ahead"
    # Lock-step rounds never interleave (the assertion above can fail).
    _run(tmp_path, "lockstep", False, 2)
    lock = _rounds_in_log_order(tmp_path / "lockstep")
    assert lock == sorted(lock)


def test_overlap_results_do_not_depend_on_timing_or_workers(tmp_path: Path) -> None:
    runs = [_run(tmp_path, f"w{w}", True, w)[0] for w in (2, 1, None)]
    ids = [[ev.id for ev in r.history] for r in runs]
    values = [[ev.value for ev in r.history] for r in runs]
    assert ids[0] == ids[1] == ids[2]
    assert values[0] == values[1] == values[2]


def test_overlap_proposals_see_results_one_round_older(tmp_path: Path) -> None:
    seen: dict[int, int] = {}

    class Reader(GaussianProposer):
        def propose_from_history(self, problem, history, population, n, round_, ctx):  # type: ignore[no-untyped-def]
            seen[round_] = max((h.round for h in history), default=-1)
            return self.propose(problem, population, n, round_, ctx)

    ctx = RunContext(seed=2, run_dir=tmp_path / "run")
    cfg = SearchConfig(max_evaluations=16, proposals_per_round=3, overlap=True)
    run_search(ToyProblem(), Reader(), ctx, cfg)
    assert seen[1] == 0  # round 1 waits for the seeds
    assert all(seen[r] == r - 2 for r in seen if r >= 2), seen


def test_a_stop_with_a_round_in_flight_evaluates_that_round(tmp_path: Path) -> None:
    class Flat(ToyProblem):
        """Nothing ever improves on the seed: patience runs out."""

        def materialize(self, proposal, ctx):  # type: ignore[no-untyped-def]
            out = super().materialize(proposal, ctx)
            return {**out, "b": out["b"] + 50.0}

    ctx = RunContext(seed=1, run_dir=tmp_path / "run", tracer=ListTracer())
    cfg = SearchConfig(max_evaluations=100, proposals_per_round=2, patience=2, overlap=True)
    res = run_search(Flat(), GaussianProposer(), ctx, cfg)
    assert res.stop_reason == "no improvement in 2 rounds"
    # Rounds 0..2 decide the stop; round 3 was already submitted, so it was evaluated too.
    assert res.rounds == 4 and res.n_evaluations == 1 + 3 * 2
    logged = {json.loads(x)["id"] for x in (tmp_path / "run/evaluations.jsonl").open()}
    assert logged == {ev.id for ev in res.history}


_CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from optiforge.agents.kit import RunContext, SearchConfig, run_search
    from optiforge.sandboxes import ThreadExecutor
    from optiforge.testing.toy_search import GaussianProposer, ToyProblem
    run_dir, log, resume = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
    with ThreadExecutor(2) as ex:
        ctx = RunContext(seed=7, run_dir=run_dir, executor=ex)
        res = run_search(ToyProblem(log_path=log, delay_s=0.1), GaussianProposer(), ctx,
                         SearchConfig(max_evaluations=20, proposals_per_round=3, overlap=True),
                         resume=resume)
    print("DONE", res.n_evaluations, [e.id for e in res.history])
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("after", [5, 11])
def test_overlap_resume_after_kill_is_exact(tmp_path: Path, after: int) -> None:
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    run_dir, log = tmp_path / "run", tmp_path / "calls.jsonl"
    proc = subprocess.Popen([sys.executable, str(script), str(run_dir), str(log), "0"])
    deadline = time.time() + 60
    while time.time() < deadline:
        if log.exists() and len(log.read_text().splitlines()) >= after:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert len(log.read_text().splitlines()) < 20, "the run finished before the kill"
    out = subprocess.run(
        [sys.executable, str(script), str(run_dir), str(log), "1"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    ref = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "ref"), str(tmp_path / "ref.jsonl"), "0"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert ref.returncode == 0, ref.stderr[-2000:]
    assert out.stdout.splitlines()[-1] == ref.stdout.splitlines()[-1]
    points = [(json.loads(x)["a"], json.loads(x)["b"]) for x in log.read_text().splitlines()]
    # At most the two evaluations in flight at the kill (2 workers) ran twice.
    assert len(points) - len(set(points)) <= 2


_CHILD_KILLED_AFTER_WRITES = textwrap.dedent(
    """
    import os, signal, sys
    from pathlib import Path
    from langgraph.checkpoint.sqlite import SqliteSaver
    from optiforge.agents.kit import RunContext, SearchConfig, run_search
    from optiforge.sandboxes import ThreadExecutor
    from optiforge.testing.toy_search import GaussianProposer, ToyProblem
    run_dir, channel, nth = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
    saved = SqliteSaver.put_writes
    count = [0]

    def put_writes(self, config, writes, task_id, task_path=""):
        saved(self, config, writes, task_id, task_path)
        # the node's writes are on disk, the checkpoint that follows them is not: die here
        if any(ch == channel for ch, _ in writes):
            count[0] += 1
            if count[0] == nth:
                os.kill(os.getpid(), signal.SIGKILL)

    if nth > 0:
        SqliteSaver.put_writes = put_writes
    with ThreadExecutor(2) as ex:
        ctx = RunContext(seed=7, run_dir=run_dir, executor=ex)
        res = run_search(ToyProblem(delay_s=0.01), GaussianProposer(), ctx,
                         SearchConfig(max_evaluations=20, proposals_per_round=3, overlap=True),
                         resume=nth == 0)
    print("DONE", res.n_evaluations, res.stop_reason, [e.id for e in res.history])
    """
)


@pytest.mark.parametrize("node_channel", ["history_round", "stale_rounds"])
def test_resume_after_a_kill_between_a_nodes_writes_and_its_checkpoint_is_exact(
    tmp_path: Path, node_channel: str
) -> None:
    """LangGraph saves a node's writes, then the step's checkpoint: a kill between the two
    leaves a checkpoint whose ``snapshot.next`` is empty mid-run (it leaves out tasks with
    saved writes). The resume must go on, not return that state as the final one (it did:
    ``DONE 10`` instead of 20, the failure of issue 40). ``history_round`` is written by
    the evaluate node, ``stale_rounds`` by select; the 4th is round 3's."""
    script = tmp_path / "child.py"
    script.write_text(_CHILD_KILLED_AFTER_WRITES)
    run_dir = tmp_path / "run"
    killed = subprocess.run([sys.executable, str(script), str(run_dir), node_channel, "4"],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    out = subprocess.run([sys.executable, str(script), str(run_dir), node_channel, "0"],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    with ThreadExecutor(2) as ex:
        ctx = RunContext(seed=7, run_dir=tmp_path / "ref", executor=ex)
        cfg = SearchConfig(max_evaluations=20, proposals_per_round=3, overlap=True)
        ref = run_search(ToyProblem(), GaussianProposer(), ctx, cfg)
    assert ref.n_evaluations == 20
    expected = f"DONE {ref.n_evaluations} {ref.stop_reason} {[e.id for e in ref.history]}"
    assert out.stdout.splitlines()[-1] == expected


@pytest.mark.slow
def test_default_overlap_is_on_with_two_workers_and_off_with_one(tmp_path: Path) -> None:
    """``overlap=None`` (every agent's default but evolve's): a 2-worker run pipelines its
    rounds (the LLM proposes while the workers evaluate), a 1-worker run keeps lock-step
    rounds, exactly as the explicit settings do."""
    auto2, ctx2 = _run(tmp_path, "auto2", None, 2)  # type: ignore[arg-type]
    on2, _ = _run(tmp_path, "on2", True, 2)
    assert [e.id for e in auto2.history] == [e.id for e in on2.history]
    assert [e.value for e in auto2.history] == [e.value for e in on2.history]
    assert any(e.get("ahead") for e in ctx2.tracer.of("proposed"))
    auto1, ctx1 = _run(tmp_path, "auto1", None, None)  # type: ignore[arg-type]
    off1, _ = _run(tmp_path, "off1", False, None)
    assert [e.id for e in auto1.history] == [e.id for e in off1.history]
    assert [e.value for e in auto1.history] == [e.value for e in off1.history]
    assert not any(e.get("ahead") for e in ctx1.tracer.of("proposed"))
    lock = _rounds_in_log_order(tmp_path / "auto1")
    assert lock == sorted(lock)


def test_default_overlap_is_decided_once_and_kept_on_resume(tmp_path: Path) -> None:
    """A run begun with 2 workers pipelines to its end when resumed with one (the decision
    lives in the checkpoint), and the resumed result equals an uninterrupted one."""

    class Crash(GaussianProposer):
        def propose(self, problem, population, n, round_, ctx):  # type: ignore[no-untyped-def]
            if round_ == 4:
                raise RuntimeError("killed at round 4")
            return super().propose(problem, population, n, round_, ctx)

    config = SearchConfig(max_evaluations=16, proposals_per_round=3)
    whole, _ = _run(tmp_path, "whole", None, 2, max_evaluations=16)  # type: ignore[arg-type]
    with ThreadExecutor(2) as ex:
        ctx = RunContext(seed=5, run_dir=tmp_path / "cut", executor=ex, tracer=ListTracer())
        with pytest.raises(RuntimeError, match="round 4"):
            run_search(_UnevenProblem(), Crash(), ctx, config)
    # evaluations still queued at the crash were cancelled, not run: none is logged
    cut_log = (tmp_path / "cut" / "evaluations.jsonl").read_text()
    assert "Cancelled" not in cut_log
    ctx = RunContext(seed=5, run_dir=tmp_path / "cut", tracer=ListTracer())  # one worker now
    res = run_search(_UnevenProblem(), GaussianProposer(), ctx, config, resume=True)
    assert any(e.get("ahead") for e in ctx.tracer.of("proposed"))  # still pipelined
    assert [e.id for e in res.history] == [e.id for e in whole.history]
    assert [e.value for e in res.history] == [e.value for e in whole.history]
