"""The shared search loop: improvement, lineage in memory, budgets, resume after kill -9."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from optiforge.agents.kit import Proposal, RunContext, SearchConfig, run_search
from optiforge.errors import ConfigError
from optiforge.llm import Budget
from optiforge.runs import ListTracer
from optiforge.testing.scripted import ScriptedLLM
from optiforge.testing.toy_search import GaussianProposer, JSONLLMProposer, ToyProblem

SEED_LOSS = 10.0  # (0-3)^2 + (0+1)^2


def test_heuristic_search_improves_over_seed(tmp_path: Path) -> None:
    ctx = RunContext(seed=1, run_dir=tmp_path / "run", tracer=ListTracer())
    res = run_search(
        ToyProblem(),
        GaussianProposer(),
        ctx,
        SearchConfig(max_evaluations=30, proposals_per_round=5),
    )
    assert res.history[0].value == pytest.approx(SEED_LOSS)
    assert res.best is not None and res.best.value < SEED_LOSS / 4
    assert res.n_evaluations == 30
    assert res.stop_reason == "evaluation budget spent"
    trace = res.trace(higher_is_better=False)
    assert len(trace) == 30 and all(a >= b for a, b in zip(trace, trace[1:], strict=False))
    # every non-seed candidate names a parent that was evaluated before it
    ids = set()
    for ev in res.history:
        assert set(ev.parent_ids) <= ids
        ids.add(ev.id)


def test_scripted_llm_search_improves_and_is_charged(tmp_path: Path) -> None:
    replies = [
        '{"a": 1.0, "b": -0.5}',
        '{"a": 2.5, "b": -1.0}',
        '{"a": 3.0, "b": -1.0}',
        "not json",
        '{"a": 2.9, "b": -0.9}',
    ]
    llm = ScriptedLLM(replies)
    budget = Budget(max_calls=10)
    llm.budget = budget
    ctx = RunContext(llm=llm, budget=budget, run_dir=tmp_path / "run")
    res = run_search(
        ToyProblem(), JSONLLMProposer(), ctx, SearchConfig(max_evaluations=5, proposals_per_round=1)
    )
    assert res.best is not None and res.best.value == pytest.approx(0.0)
    assert res.best.origin == "llm"
    assert budget.calls == len(replies)  # the invalid JSON reply was re-asked, and charged


def test_llm_budget_exhaustion_stops_cleanly(tmp_path: Path) -> None:
    llm = ScriptedLLM(['{"a": 1.0, "b": 0.0}'] * 10)
    budget = Budget(max_calls=2)
    llm.budget = budget
    ctx = RunContext(llm=llm, budget=budget, run_dir=tmp_path / "run")
    res = run_search(
        ToyProblem(),
        JSONLLMProposer(),
        ctx,
        SearchConfig(max_evaluations=20, proposals_per_round=1),
    )
    assert "budget" in res.stop_reason
    assert budget.calls == 2
    assert res.n_evaluations <= 3  # seed + what the two calls produced (duplicates are skipped)


def test_invalid_and_duplicate_candidates_are_counted(tmp_path: Path) -> None:
    class Repeater(GaussianProposer):
        def propose(self, problem, population, n, round_, ctx):  # type: ignore[override]
            props = super().propose(problem, population, n, round_, ctx)
            props[0].payload = {"a": -1.0, "b": 0.0}  # rejected at materialization
            props[1].payload = dict(population[0].payload)  # duplicate of an evaluated one
            return props

    ctx = RunContext(run_dir=tmp_path / "run")
    res = run_search(
        ToyProblem(reject_negative_a=True),
        Repeater(),
        ctx,
        SearchConfig(max_evaluations=10, proposals_per_round=4),
    )
    assert res.n_invalid >= 1 and res.n_duplicates >= 1
    # Invalid and duplicate proposals cost no evaluation; once only 2 evaluations are left,
    # every round's two fresh proposals are the wasted ones, and the loop stops on its own.
    assert 8 <= res.n_evaluations <= 10
    assert res.stop_reason in ("evaluation budget spent", "3 rounds without a new candidate")
    assert any(ev.error and ev.error.startswith("invalid") for ev in res.history)


def test_a_proposal_the_proposer_could_not_make_is_an_invalid_candidate(tmp_path: Path) -> None:
    """A proposer that got an unusable reply says so (``Proposal.error``): the candidate is
    recorded as invalid with that reason, costs no evaluation, and the search goes on."""

    class HalfBroken(GaussianProposer):
        def propose(self, problem, population, n, round_, ctx):  # type: ignore[override]
            props = super().propose(problem, population, n, round_, ctx)
            props[0] = Proposal(payload={}, origin="llm", error="unusable reply: not JSON")
            return props

    res = run_search(ToyProblem(), HalfBroken(), RunContext(run_dir=tmp_path / "run"),
                     SearchConfig(max_evaluations=9, proposals_per_round=4))  # fmt: skip
    unusable = [ev for ev in res.history if ev.error == "invalid: unusable reply: not JSON"]
    assert len(unusable) == res.rounds - 1 >= 3 and res.n_invalid == len(unusable)
    # three fresh candidates a round until one evaluation is left, whose only proposal is
    # the unusable one: the search ends on its own rule, not on an error
    assert 7 <= res.n_evaluations < 9
    assert res.stop_reason == "3 rounds without a new candidate"
    rejected = (tmp_path / "run" / "rejected.jsonl").read_text()
    assert rejected.count("unusable reply: not JSON") == len(unusable)


def test_candidates_are_written_to_memory_with_lineage(tmp_path: Path) -> None:
    from optiforge.memory import Store

    store = Store(f"sqlite:///{tmp_path / 'mem.db'}", embedder=None)
    ctx = RunContext(memory=store, run_dir=tmp_path / "run", agent="toy-agent")
    res = run_search(
        ToyProblem(),
        GaussianProposer(),
        ctx,
        SearchConfig(max_evaluations=9, proposals_per_round=4),
    )
    cands = store.candidates(agent="toy-agent")
    assert len(cands) == res.n_evaluations
    children = [c for c in cands if c.parent_ids]
    assert children, "mutations must record their parents"
    lineage = store.lineage(children[-1].id)
    assert lineage and all(a.agent == "toy-agent" for a in lineage)
    store.close()


def test_process_executor_fans_out(tmp_path: Path) -> None:
    from optiforge.sandboxes import ProcessExecutor

    log = tmp_path / "calls.jsonl"
    with ProcessExecutor(2) as ex:
        ctx = RunContext(executor=ex, run_dir=tmp_path / "run")
        res = run_search(
            ToyProblem(log_path=log, delay_s=0.3),
            GaussianProposer(),
            ctx,
            SearchConfig(max_evaluations=9, proposals_per_round=4),
        )
    pids = {json.loads(line)["pid"] for line in log.read_text().splitlines()}
    assert res.n_evaluations == 9
    assert len(pids) == 2 and os.getpid() not in pids


def test_existing_run_needs_resume_flag(tmp_path: Path) -> None:
    ctx = RunContext(run_dir=tmp_path / "run")
    run_search(ToyProblem(), GaussianProposer(), ctx, SearchConfig(max_evaluations=3))
    with pytest.raises(ConfigError, match="resume"):
        run_search(ToyProblem(), GaussianProposer(), ctx, SearchConfig(max_evaluations=3))


_CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from optiforge.agents.kit import Proposal, RunContext, SearchConfig, run_search
    from optiforge.testing import toy_search
    from optiforge.testing.toy_search import GaussianProposer, ToyProblem
    run_dir, log, resume = Path(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
    block_at = int(sys.argv[4]) if len(sys.argv) > 4 else 0
    if block_at:  # the evaluation after the block_at-th never returns: the kill lands there
        call = toy_search.ToyEvaluator.__call__
        def blocking(self, payload):
            done = len(Path(log).read_text().splitlines()) if Path(log).exists() else 0
            if done >= block_at:
                Path(log + ".blocked").write_text(str(done))
                time.sleep(600)
            return call(self, payload)
        toy_search.ToyEvaluator.__call__ = blocking
    ctx = RunContext(seed=7, run_dir=run_dir)
    res = run_search(ToyProblem(log_path=log, delay_s=0.15), GaussianProposer(), ctx,
                     SearchConfig(max_evaluations=16, proposals_per_round=4), resume=resume)
    print("DONE", res.n_evaluations, res.best.value)
    """
)


@pytest.mark.slow
def test_resume_after_kill_does_not_repeat_finished_evaluations(tmp_path: Path) -> None:
    run_dir, log = tmp_path / "run", tmp_path / "calls.jsonl"
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    proc = subprocess.Popen([sys.executable, str(script), str(run_dir), str(log), "0", "6"])
    # Kill in the middle of a round: in the evaluation after the 6th (round 0: 1, round 1: 4,
    # round 2: 1 of 4), where the child blocks; the deadline only guards against a hang
    deadline = time.time() + 900
    while not Path(str(log) + ".blocked").exists():
        assert proc.poll() is None and time.time() < deadline, "the child never blocked"
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = [json.loads(x) for x in log.read_text().splitlines()]
    assert len(before) == 6
    out = subprocess.run(
        [sys.executable, str(script), str(run_dir), str(log), "1"],
        capture_output=True,
        text=True,
        timeout=900,  # a hang guard
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "DONE 16" in out.stdout
    after = [json.loads(x) for x in log.read_text().splitlines()]
    points = [(c["a"], c["b"]) for c in after]
    # Evaluations run one at a time here, so at most the one in flight at the kill (its
    # side effect logged, its result not yet recorded by the loop) may run again.
    repeats = len(points) - len(set(points))
    assert repeats <= 1, f"{repeats} finished evaluations were repeated after resume"
    assert len(set(points)) == 16

    # An uninterrupted run with the same seed evaluates the same candidates.
    log2 = tmp_path / "calls2.jsonl"
    out2 = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "run2"), str(log2), "0"],
        capture_output=True,
        text=True,
        timeout=900,  # a hang guard
    )
    assert out2.returncode == 0
    ref = {(json.loads(x)["a"], json.loads(x)["b"]) for x in log2.read_text().splitlines()}
    assert set(points) == ref


def test_search_without_run_dir_runs_in_memory() -> None:
    res = run_search(
        ToyProblem(), GaussianProposer(), RunContext(seed=3), SearchConfig(max_evaluations=6)
    )
    assert res.n_evaluations == 6 and res.best is not None


class _HistoryReader(GaussianProposer):
    """A HistoryProposer: rejects one proposal in round 1, records the history it saw."""

    def __init__(self, crash_at: int | None = None) -> None:
        super().__init__()
        self.crash_at = crash_at
        self.seen: list[list[str]] = []

    def propose_from_history(self, problem, history, population, n, round_, ctx):  # type: ignore[no-untyped-def]
        if round_ == self.crash_at:
            raise RuntimeError("killed")  # the run dies with round 1 checkpointed
        self.seen.append([h.id for h in history])
        props = self.propose(problem, population, n, round_, ctx)
        if round_ == 1:
            props[0].payload = {"a": -1.0, "b": 0.0}  # rejected at materialization
        return props


def test_history_proposer_reads_the_checkpointed_history_on_resume(tmp_path: Path) -> None:
    from optiforge.agents.kit import HistoryProposer

    assert isinstance(_HistoryReader(), HistoryProposer)
    cfg = SearchConfig(max_evaluations=5, proposals_per_round=2)
    straight = _HistoryReader()
    ref = run_search(
        ToyProblem(reject_negative_a=True), straight, RunContext(run_dir=tmp_path / "a"), cfg
    )
    # Round r sees every candidate of the rounds before it, the rejected one included.
    ids = [h.id for h in ref.history]
    assert straight.seen[:2] == [ids[:1], ids[:3]]
    assert ref.history[1].error is not None and ref.history[1].error.startswith("invalid")

    run_dir = tmp_path / "b"
    with pytest.raises(RuntimeError, match="killed"):
        run_search(
            ToyProblem(reject_negative_a=True), _HistoryReader(crash_at=2), RunContext(run_dir=run_dir), cfg
        )  # fmt: skip
    # The checkpointed history holds a rejected candidate that was never evaluated (in
    # rejected.jsonl, not evaluations.jsonl): the resume check accepts it, and the new
    # proposer is handed the same history the uninterrupted run's was.
    resumed = _HistoryReader()
    res = run_search(
        ToyProblem(reject_negative_a=True), resumed, RunContext(run_dir=run_dir), cfg, resume=True
    )
    assert resumed.seen == straight.seen[1:]
    assert [h.model_dump(exclude={"eval_s"}) for h in res.history] == [
        h.model_dump(exclude={"eval_s"}) for h in ref.history
    ]


def _last_checkpoint(run_dir: Path) -> tuple[int, dict[str, object]]:
    """The size of the run's last checkpoint and its state."""
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    conn = sqlite3.connect(run_dir / "checkpoints.sqlite")
    try:
        (size,) = conn.execute(
            "SELECT length(checkpoint) FROM checkpoints ORDER BY rowid DESC LIMIT 1"
        ).fetchone()
        tup = SqliteSaver(conn).get_tuple({"configurable": {"thread_id": "search"}})
        assert tup is not None
        return size, dict(tup.checkpoint["channel_values"])
    finally:
        conn.close()


def test_the_checkpointed_state_does_not_grow_with_the_run(tmp_path: Path) -> None:
    sizes = {}
    for n in (20, 160):
        cfg = SearchConfig(max_evaluations=n, proposals_per_round=4, max_duplicate_rounds=n)
        res = run_search(
            ToyProblem(), GaussianProposer(), RunContext(run_dir=tmp_path / f"{n}"), cfg
        )
        assert len(res.history) == res.n_evaluations == n
        sizes[n], state = _last_checkpoint(tmp_path / f"{n}")
        assert "history" not in state and "seen" not in state
        assert state["n_history"] == n and state["history_round"] == state["round"]
    assert sizes[160] < 1.2 * sizes[20], sizes


class _Repeater(GaussianProposer):
    """Each round: one proposal rejected at materialization, one duplicate."""

    def propose(self, problem, population, n, round_, ctx):  # type: ignore[no-untyped-def]
        props = super().propose(problem, population, n, round_, ctx)
        props[0].payload = {"a": -1.0 - round_, "b": 0.0}
        props[1].payload = dict(population[-1].payload)
        return props


def test_the_history_is_the_same_with_or_without_a_run_dir(tmp_path: Path) -> None:
    cfg = SearchConfig(max_evaluations=12, proposals_per_round=4)
    problem = ToyProblem(reject_negative_a=True)
    on_disk = run_search(problem, _Repeater(), RunContext(seed=5, run_dir=tmp_path / "run"), cfg)
    in_memory = run_search(problem, _Repeater(), RunContext(seed=5), cfg)
    assert on_disk.n_invalid >= 3 and on_disk.n_duplicates >= 3
    timeless = {"eval_s": True}  # wall time of an evaluation
    drop = {"best": timeless, "population": {"__all__": timeless}, "history": {"__all__": timeless}}
    assert on_disk.model_dump(exclude=drop) == in_memory.model_dump(exclude=drop)
    # in proposal order: round by round, and in a round in the order proposed
    order = [(h.round, int(h.id.split("c")[1].split("-")[0])) for h in on_disk.history]
    assert order == sorted(order)
    assert len(on_disk.history) == on_disk.n_evaluations + on_disk.n_invalid
    # the evaluation log holds the evaluated candidates, the rejection log the others
    lines = {
        name: [json.loads(x) for x in (tmp_path / "run" / name).read_text().splitlines()]
        for name in ("evaluations.jsonl", "rejected.jsonl")
    }
    assert len(lines["evaluations.jsonl"]) == on_disk.n_evaluations
    assert [r["id"] for r in lines["rejected.jsonl"]] == [
        h.id for h in on_disk.history if h.error and h.error.startswith("invalid:")
    ]


def _cut_line(path: Path, index: int) -> None:
    lines = path.read_text().splitlines(keepends=True)
    del lines[index]
    path.write_text("".join(lines))


@pytest.mark.parametrize(
    "damage",
    ["rejected line cut", "evaluation line cut", "evaluation of a later round"],
)
def test_resume_refuses_logs_that_disagree_with_the_checkpoint(tmp_path: Path, damage: str) -> None:
    from optiforge.errors import RunRecordError

    cfg = SearchConfig(max_evaluations=5, proposals_per_round=2)
    run_dir = tmp_path / "run"
    with pytest.raises(RuntimeError, match="killed"):
        run_search(
            ToyProblem(reject_negative_a=True), _HistoryReader(crash_at=2), RunContext(run_dir=run_dir), cfg
        )  # fmt: skip
    evaluations, rejected = run_dir / "evaluations.jsonl", run_dir / "rejected.jsonl"
    assert len(rejected.read_text().splitlines()) == 1  # round 1's rejected proposal
    if damage == "rejected line cut":
        _cut_line(rejected, 0)
        match = "cut or edited"
    elif damage == "evaluation line cut":
        _cut_line(evaluations, 1)
        match = "cut or edited"
    else:  # the checkpoint lost rounds the log has (a cut WAL)
        rec = json.loads(evaluations.read_text().splitlines()[-1])
        with evaluations.open("a") as fh:
            fh.write(json.dumps({**rec, "id": "r5c0-0-0000", "round": 5}) + "\n")
        match = "is behind"
    with pytest.raises(RunRecordError, match=match):
        run_search(
            ToyProblem(reject_negative_a=True), _HistoryReader(), RunContext(run_dir=run_dir), cfg,
            resume=True,
        )  # fmt: skip


def test_a_round_reflected_twice_stores_its_lessons_once(tmp_path: Path) -> None:
    """A kill between reflect's memory write and its checkpoint re-runs the node."""
    from optiforge.agents.kit import Evaluated
    from optiforge.agents.kit.search.loop import SearchLoop
    from optiforge.agents.kit.search.nodes import store_lessons
    from optiforge.memory import Store

    store = Store(f"sqlite:///{tmp_path / 'mem.db'}", embedder=None)
    ctx = RunContext(memory=store, run_dir=tmp_path / "run", agent="toy-agent")
    problem = ToyProblem()
    loop = SearchLoop(problem, GaussianProposer(), SearchConfig(), "", problem.evaluator())
    batch = [Evaluated(id="r1c0", key="k", payload={"a": 1.0, "b": 0.0}, round=1)]
    for _ in range(2):
        store_lessons(ctx, loop, ["a lesson", "another"], batch)
    assert sorted(e.lesson for e in store.experiences(agent="toy-agent")) == ["a lesson", "another"]
    # a bare string says nothing of its origin: stored as unknown (untrusted)
    assert {e.provenance for e in store.experiences(agent="toy-agent")} == {"unknown"}
    store.close()


def test_a_logged_candidate_is_on_disk_before_other_threads_see_it(tmp_path: Path) -> None:
    """The evaluate node reads the log's index without its lock, and once it has seen its
    round there it may finish and be checkpointed: a record in the index but not yet in
    the file (an evaluator thread still writing it) made a kill then leave a checkpoint
    ahead of evaluations.jsonl, which the resume refused."""
    from optiforge.agents.kit.search import logs as search

    log = search.EvalLog(tmp_path)
    indexed, path = log._index, tmp_path / search.EVALUATIONS
    on_disk: list[bool] = []

    def index(rec: dict[str, object]) -> None:
        on_disk.append(path.exists() and str(rec["id"]) in path.read_text())
        indexed(rec)

    log._index = index  # type: ignore[method-assign]
    log.append({"id": "r0c0-1-aa", "round": 0})
    assert log.append_new({"id": "r0c1-1-bb", "round": 0})
    assert on_disk == [True, True]
