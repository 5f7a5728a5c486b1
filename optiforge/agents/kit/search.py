"""The shared search loop: propose -> materialize -> evaluate -> reflect -> select.

One LangGraph graph serves every agent that searches over candidates (kernels, programs,
configs). An agent supplies a ``SearchProblem`` (seeds, materialization, a picklable
evaluator, optional reflection) and a ``Proposer`` (an LLM one and a heuristic one behind
the same protocol). The graph state holds only serializable data (ids, payloads,
scores); live handles (LLM, sandbox, memory, executor, budget, tracer) travel in
``RunContext`` through LangGraph's ``context_schema``.

Durability: the graph is compiled with LangGraph's SQLite checkpointer in the run
directory (``checkpoints.sqlite``) and invoked with ``durability="sync"``, so every
finished node is on disk. Inside the evaluate node each finished evaluation is appended
to ``evaluations.jsonl`` at once, and the materialize node appends each candidate it
rejects to ``rejected.jsonl``; a run killed mid-node resumes with ``resume=True``
(``--resume RUN_DIR``) and does not repeat the evaluations that had finished.

The state is of bounded size (checkpointed after every node, so its size is the cost of
a checkpoint): the round's proposals and batch, the population, the best, counters, and
a pointer into the two logs, not the history. The history (every candidate so far, in
order) is the logs' records of the rounds the state has finished (``history_round``),
checked against the state's count and digest of their ids; with no run directory the
logs live in memory, and the code path is the same. Everything a resume needs is in the
state and the logs: a proposer that reads earlier attempts is a ``HistoryProposer``
(handed that history), never one that remembers them itself.

Budgets: the number of evaluations (``SearchConfig.max_evaluations``), LLM spend and
sandbox seconds (``RunContext.budget``). Running out is a normal stop
(``stop_reason``), not a crash.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypedDict, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from optiforge.agents.kit.context import RunContext
from optiforge.agents.kit.driver import CHECKPOINTS, FORCE_RESTART_HINT
from optiforge.agents.kit.lineage import (
    Lesson,
    candidate_batch,
    memory_id,
    record_candidate,
    record_lesson,
    task_id,
    task_signature,
)
from optiforge.agents.kit.outcome import AgentOutcome, search_outcome
from optiforge.agents.kit.recall import recall
from optiforge.agents.kit.run import AgentRun
from optiforge.errors import BudgetExceeded, InvalidCandidate, LLMError, RunRecordError
from optiforge.evals.protocol import Score, Task
from optiforge.memory.provenance import Provenance
from optiforge.runs import to_json_line

EVALUATIONS = "evaluations.jsonl"
REJECTED = "rejected.jsonl"
"""Candidates rejected at materialization (never evaluated), one record a line."""


# ----------------------------------------------------------------------------- records


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


# ----------------------------------------------------------------------------- protocols


@runtime_checkable
class SearchProblem(Protocol):
    """What an agent supplies to the loop."""

    task: Task
    higher_is_better: bool

    def initial(self, ctx: RunContext) -> list[Proposal]:
        """Seed candidates (evaluated in round 0)."""
        ...

    def materialize(self, proposal: Proposal, ctx: RunContext) -> dict[str, Any]:
        """Turn a proposal into an evaluable payload; raise ``InvalidCandidate`` to reject."""
        ...

    def evaluator(self) -> Callable[[dict[str, Any]], Score]:
        """A picklable callable scoring one materialized payload (runs in executor workers).

        One with a ``for_run(ctx)`` method (``SandboxedTaskEvaluator``) is bound to the run
        before it is used, so a problem is built without the run's handles."""
        ...

    def reflect(
        self, batch: list[Evaluated], population: list[Evaluated], ctx: RunContext
    ) -> Sequence[str | Lesson]:
        """Lessons from one round (may be empty); the loop stores them in memory.

        A lesson that holds any candidate output (an ``Evaluated.error``, stdout, stderr)
        is a ``Lesson(provenance="candidate")``; a bare ``str`` counts as ``unknown``.
        Both are shown to later prompts only quoted as untrusted data."""
        ...


@runtime_checkable
class Proposer(Protocol):
    """Makes new candidates from the current population (LLM or heuristic)."""

    name: str

    def propose(
        self,
        problem: SearchProblem,
        population: list[Evaluated],
        n: int,
        round_: int,
        ctx: RunContext,
    ) -> list[Proposal]:
        """Up to ``n`` new proposals; may raise ``BudgetExceeded``/``LLMError``."""
        ...


@runtime_checkable
class HistoryProposer(Protocol):
    """A proposer that reads every candidate evaluated so far, not only the survivors.

    ``history`` is every candidate of the earlier rounds (seeds, failures and candidates
    rejected at materialization included, in evaluation order), read from the run's logs
    up to the checkpointed round: a proposer that shows earlier attempts or skips tried
    configs reads them from here, never from its own or the problem's instance memory,
    so a resumed run proposes exactly as an uninterrupted one (a resume rebuilds the
    proposer and the problem from scratch).
    """

    name: str

    def propose_from_history(
        self,
        problem: SearchProblem,
        history: list[Evaluated],
        population: list[Evaluated],
        n: int,
        round_: int,
        ctx: RunContext,
    ) -> list[Proposal]:
        """Up to ``n`` new proposals; may raise ``BudgetExceeded``/``LLMError``."""
        ...


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
    """XOR of the history's id hashes (``_digest``): the logs are checked against it."""
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


# ----------------------------------------------------------------------------- helpers


def _better(a: float, b: float, higher: bool) -> bool:
    return a > b if higher else a < b


def _sort_key(higher: bool) -> Callable[[dict[str, Any]], float]:
    def key(ev: dict[str, Any]) -> float:
        v = ev.get("value")
        if not ev.get("passed") or v is None or not math.isfinite(v):
            return math.inf
        return -v if higher else v

    return key


class _EvalLog:
    """Per-run append-only log of candidate records (survives a kill mid-node): finished
    evaluations (``evaluations.jsonl``) or rejected candidates (``rejected.jsonl``); in
    memory only when the run has no directory.

    A last line without its newline is a record torn by a kill mid-append: it is cut
    off (so the next append starts a clean line) and counted in ``torn_tail``. Any
    other unreadable line means the file was damaged: ``RunRecordError`` naming it.
    """

    def __init__(self, run_dir: Path | None, name: str = EVALUATIONS) -> None:
        self.path = run_dir / name if run_dir else None
        self.done: dict[str, dict[str, Any]] = {}
        self.rounds: dict[int, list[str]] = {}
        """The logged ids of each round, in logging order."""
        self.torn_tail = False
        self.lock = threading.Lock()
        """Appends come from evaluator threads too (``overlap``: a submitted round's
        results are logged the moment they land, whichever node is running)."""
        if self.path and self.path.exists():
            data = self.path.read_bytes()
            cut = len(data)
            if data and not data.endswith(b"\n"):
                cut = data.rfind(b"\n") + 1
                with self.path.open("r+b") as fh:
                    fh.truncate(cut)
                self.torn_tail = True
            for i, line in enumerate(data[:cut].splitlines(), 1):
                try:
                    rec = json.loads(line)
                    self._index(rec)
                except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                    raise RunRecordError(
                        f"{self.path}: line {i} is damaged (not a candidate record); "
                        "the run cannot resume from it: rerun with --force-restart to move "
                        "the run aside and start over"
                    ) from None

    def _index(self, rec: dict[str, Any]) -> None:
        rid = rec["id"]
        if rid not in self.done:
            self.rounds.setdefault(int(rec.get("round", 0)), []).append(rid)
        self.done[rid] = rec

    def append(self, rec: dict[str, Any]) -> None:
        with self.lock:
            self._write(rec)

    def append_new(self, rec: dict[str, Any]) -> bool:
        """``append`` unless a record of that id is logged already (whether it was)."""
        with self.lock:
            if rec["id"] in self.done:
                return False
            self._write(rec)
            return True

    def _write(self, rec: dict[str, Any]) -> None:
        """On disk first, then in ``done``: other threads read ``done`` without the lock
        (``_Loop.wait``), and a node that sees a record there may finish and be
        checkpointed at once, so a kill must not find it missing from the file."""
        if self.path:
            with self.path.open("a") as fh:
                fh.write(to_json_line(rec))
                fh.flush()
        self._index(rec)

    def round_ids(self, rnd: int) -> list[str]:
        """The logged ids of round ``rnd`` (a copy: appends may run concurrently)."""
        with self.lock:
            return list(self.rounds.get(rnd, []))


_NO_DIGEST = f"{0:016x}"


def _digest(ids: list[str], start: str = _NO_DIGEST) -> str:
    """``start`` XOR the hashes of ``ids``: the same for the same set of ids in any order."""
    acc = int(start, 16)
    for rid in ids:
        acc ^= int.from_bytes(hashlib.sha256(rid.encode()).digest()[:8], "big")
    return f"{acc:016x}"


def _mine(rid: str, prefix: str) -> bool:
    """Whether candidate ``rid`` belongs to the search of ``prefix`` (one per thread)."""
    return rid.startswith(prefix) if prefix else "." not in rid.split("-", 1)[0]


def _slot(rid: str, prefix: str) -> int:
    """A candidate's position in its round's proposals (its id is ``{prefix}r{R}c{i}-...``)."""
    local = rid[len(prefix) :]
    return int(local[local.index("c") + 1 : local.index("-")])


@dataclass
class _History:
    """One search's history read from the logs, the rounds before ``through``."""

    through: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)
    """The payload keys of its evaluated (not rejected) candidates: what was seen."""
    digest: str = _NO_DIGEST


class _Logs:
    """A run's two candidate logs, and the history of each search read from them."""

    def __init__(self, run_dir: Path | None) -> None:
        self.evaluated = _EvalLog(run_dir, EVALUATIONS)
        self.rejected = _EvalLog(run_dir, REJECTED)
        self._histories: dict[str, _History] = {}

    def history(self, prefix: str, through: int) -> _History:
        """The candidates of search ``prefix`` in the rounds before ``through``, in the
        order they were proposed (a round's rows are read once, when it is finished)."""
        hist = self._histories.get(prefix)
        if hist is None or through < hist.through:
            hist = self._histories[prefix] = _History()
        for rnd in range(hist.through, through):
            rows = {
                rid: log.done[rid]
                for log in (self.rejected, self.evaluated)  # an evaluation wins a tie
                for rid in log.round_ids(rnd)
                if _mine(rid, prefix)
            }
            new = [rows[rid] for rid in sorted(rows, key=lambda rid: _slot(rid, prefix))]
            hist.rows += new
            hist.keys.update(r["key"] for r in new if not _is_invalid(r))
            hist.digest = _digest([r["id"] for r in new], hist.digest)
        hist.through = max(hist.through, through)
        return hist

    def checked_history(self, prefix: str, state: SearchState | dict[str, Any]) -> _History:
        """The history of the state's finished rounds, checked against its count and digest.

        Raises:
            RunRecordError: the logs do not hold the candidates the state counts.
        """
        hist = self.history(prefix, state.get("history_round", 0))
        n = state.get("n_history", 0)
        if len(hist.rows) != n or hist.digest != state.get("history_digest", _NO_DIGEST):
            where = self.evaluated.path.parent if self.evaluated.path else "memory"
            raise RunRecordError(
                f"the candidate logs ({EVALUATIONS}, {REJECTED} in {where}) hold "
                f"{len(hist.rows)} candidates of rounds 0-{hist.through - 1} where the "
                f"search's state records {n} (or other ones): the logs were cut or edited; "
                f"{FORCE_RESTART_HINT}"
            )
        return hist


# ----------------------------------------------------------------------------- graph


@dataclass(frozen=True)
class LLMOrOffline:
    """The LLM proposer when the run has an LLM (``ctx.llm``), else the offline one.

    The choice is made from the runtime context in every node, so a graph is built
    without live handles (``AgentSpec.build``) and proposes as its run's context says.
    """

    llm: Proposer | HistoryProposer
    offline: Proposer | HistoryProposer

    def pick(self, ctx: RunContext) -> Proposer | HistoryProposer:
        """The proposer of a run with context ``ctx``."""
        return self.llm if ctx.llm is not None else self.offline


AnyProposer = Proposer | HistoryProposer | LLMOrOffline
"""What a search takes: one proposer, or the LLM/offline pair chosen per run."""


def pick_proposer(proposer: AnyProposer, ctx: RunContext) -> Proposer | HistoryProposer:
    """The proposer that runs in context ``ctx``."""
    return proposer.pick(ctx) if isinstance(proposer, LLMOrOffline) else proposer


@dataclass
class _Loop:
    """What every node of one search graph reads (fixed for the graph's life)."""

    problem: SearchProblem
    proposer: AnyProposer
    config: SearchConfig
    id_prefix: str
    evaluator: Callable[[dict[str, Any]], Score]
    logs: dict[Path | None, _Logs] = field(default_factory=dict)
    bound: dict[str, Callable[[dict[str, Any]], Score]] = field(default_factory=dict)
    inflight: dict[tuple[str, str], tuple[Future[Score], float]] = field(default_factory=dict)
    """Submitted evaluations by (run dir, candidate id): live only in this process (a
    resume submits again whatever its logs do not hold)."""
    own_pool: Any = None
    """``overlap`` with no executor in the context: one evaluator thread of the loop's own,
    so the next round's proposals overlap this round's evaluations."""

    def run_logs(self, ctx: RunContext) -> _Logs:
        """The run's candidate logs, read once per graph (not once per round)."""
        if ctx.run_dir not in self.logs:
            self.logs[ctx.run_dir] = _Logs(ctx.run_dir)
        return self.logs[ctx.run_dir]

    def history(self, state: SearchState | dict[str, Any], ctx: RunContext) -> _History:
        """The search's history as of ``state`` (see ``_Logs.checked_history``)."""
        return self.run_logs(ctx).checked_history(self.id_prefix, state)

    def overlapping(self, state: SearchState | dict[str, Any]) -> bool:
        """Whether this search pipelines its rounds (see ``SearchState.overlap``)."""
        return bool(state.get("overlap", self.config.overlap))

    def pool(self, ctx: RunContext, overlap: bool) -> Any:
        """Where evaluations run: the run's executor; with none, inline (lock-step
        rounds) or, under ``overlap``, one thread of the loop's own."""
        if ctx.executor is not None or not overlap:
            return ctx.executor
        if self.own_pool is None:
            from optiforge.sandboxes.executors import ThreadExecutor

            self.own_pool = ThreadExecutor(1)
        return self.own_pool

    def submit(self, ctx: RunContext, items: list[dict[str, Any]], rnd: int, overlap: bool) -> None:
        """Start evaluating ``items`` (not logged, not in flight); each result is logged
        the moment it lands, by whichever thread sees it first (``record``)."""
        pool = self.pool(ctx, overlap)
        log = self.run_logs(ctx).evaluated
        fn = self.evaluator_for(ctx)
        for item in items:
            key = (str(ctx.run_dir), item["id"])
            if item["id"] in log.done or key in self.inflight:
                continue
            t0 = time.perf_counter()
            if pool is None:
                fut: Future[Score] = Future()
                try:
                    fut.set_result(fn(item["payload"]))
                except Exception as err:  # noqa: BLE001 - a crashing evaluator fails its candidate
                    fut.set_exception(err)
            else:
                fut = pool.submit(fn, item["payload"])
            self.inflight[key] = (fut, t0)
            fut.add_done_callback(functools.partial(self._landed, ctx, item, rnd, t0))

    def _landed(
        self, ctx: RunContext, item: dict[str, Any], rnd: int, t0: float, fut: Future[Score]
    ) -> None:
        if fut.cancelled():  # the pool was shut down (Ctrl-C, a cap, a crash): not run
            return
        try:
            self.record(ctx, item, rnd, t0, fut)
        except Exception as err:  # noqa: BLE001 - a callback must not die silently
            ctx.tracer.event("evaluation_log_error", id=item["id"], error=repr(err))

    def record(
        self, ctx: RunContext, item: dict[str, Any], rnd: int, t0: float, fut: Future[Score]
    ) -> dict[str, Any]:
        """The finished evaluation's record, logged (once), charged and traced.

        Raises:
            CancelledError: the evaluation was cancelled, never run (nothing is logged: a
                resume runs it).
        """
        log = self.run_logs(ctx).evaluated
        if fut.cancelled():
            raise CancelledError(f"the evaluation of {item['id']} was cancelled")
        try:
            score: Score | BaseException = fut.result()
        except Exception as err:  # noqa: BLE001 - a crashing evaluator fails its candidate
            score = err
        rec = _merge_score(item, score, time.perf_counter() - t0)
        if not log.append_new(rec):
            return log.done[item["id"]]
        sandbox_s = float(rec["metrics"].get("sandbox_s", 0.0))
        if ctx.budget is not None and sandbox_s > 0:
            ctx.budget.charge_sandbox(sandbox_s)
        ctx.tracer.event(
            "evaluation", id=item["id"], passed=rec["passed"], value=rec["value"],
            eval_s=rec["eval_s"], round=rnd, error=rec["error"],
        )  # fmt: skip
        return rec

    def wait(self, ctx: RunContext, items: list[dict[str, Any]], rnd: int, overlap: bool) -> None:
        """Submit what is not yet running and wait for all of ``items`` to be logged."""
        self.submit(ctx, items, rnd, overlap)
        log = self.run_logs(ctx).evaluated
        from concurrent.futures import as_completed

        futs = {
            self.inflight[(str(ctx.run_dir), it["id"])]: it
            for it in items
            if (str(ctx.run_dir), it["id"]) in self.inflight
        }
        by_future = {fut: (item, t0) for (fut, t0), item in futs.items()}
        for fut in as_completed(by_future):
            item, t0 = by_future[fut]
            if item["id"] not in log.done:  # landed before its callback logged it
                self.record(ctx, item, rnd, t0, fut)
            self.inflight.pop((str(ctx.run_dir), item["id"]), None)

    def close(self) -> None:
        """Stop the loop's own evaluator thread (if it started one)."""
        if self.own_pool is not None:
            self.own_pool.shutdown()
            self.own_pool = None

    def evaluator_for(self, ctx: RunContext) -> Callable[[dict[str, Any]], Score]:
        """The problem's evaluator bound to the run (``for_run(ctx)``, when it has one:
        e.g. tracing its sandbox runs to the run's events file)."""
        key = str(ctx.run_dir)
        if key not in self.bound:
            bind = getattr(self.evaluator, "for_run", None)
            self.bound[key] = bind(ctx) if callable(bind) else self.evaluator
        return self.bound[key]


def propose_node(loop: _Loop, state: SearchState, runtime: Any) -> dict[str, Any]:
    """Seeds in round 0, then up to ``proposals_per_round`` from the proposer."""
    ctx: RunContext = runtime.context
    config = loop.config
    rnd = state.get("round", 0)
    remaining = config.max_evaluations - state.get("n_evaluations", 0)
    if remaining <= 0:
        return {"proposals": [], "done": True, "stop_reason": "evaluation budget spent"}
    if rnd == 0 and ctx.run_dir is None:
        loop.logs.pop(None, None)  # a graph invoked again without a run: a new search
        loop.inflight = {k: v for k, v in loop.inflight.items() if k[0] != "None"}
    update: dict[str, Any] = {}
    if "recalled" in state:
        ctx.recalled = list(state["recalled"])
    else:  # round 0 of a fresh search: recall once, then it lives in the checkpoint
        ctx.recalled = recall(
            ctx, loop.problem.task, config.memory_recall, provenance=config.recall_provenance
        )
        update["recalled"] = ctx.recalled
    if "overlap" not in state and rnd == 0:
        update["overlap"] = resolve_overlap(config, ctx)
    try:
        if rnd == 0:
            props = loop.problem.initial(ctx)
        else:
            population = [Evaluated.model_validate(p) for p in state.get("population", [])]
            n = min(config.proposals_per_round, remaining)
            proposer = pick_proposer(loop.proposer, ctx)
            if isinstance(proposer, HistoryProposer):
                rows = loop.history(state, ctx).rows
                history = [Evaluated.model_validate(h) for h in rows]
                props = proposer.propose_from_history(
                    loop.problem, history, population, n, rnd, ctx
                )
            else:
                props = proposer.propose(loop.problem, population, n, rnd, ctx)
    except BudgetExceeded as err:
        ctx.tracer.event("search_stop", reason=f"budget: {err.limit}", round=rnd)
        return {
            "proposals": [],
            "done": True,
            "stop_reason": f"budget exhausted ({err.limit}): {err}",
        }
    except LLMError as err:
        # A provider failure after retries ends the search with what it has.
        ctx.tracer.event("search_stop", reason="llm_error", error=str(err), round=rnd)
        return {
            "proposals": [],
            "done": True,
            "stop_reason": f"LLM error: {type(err).__name__}: {err}",
        }
    props = props[:remaining] if rnd > 0 else props
    ctx.tracer.event(
        "proposed", round=rnd, n=len(props), proposer=pick_proposer(loop.proposer, ctx).name
    )
    return {**update, "proposals": [p.model_dump(mode="json") for p in props]}


def resolve_overlap(config: SearchConfig, ctx: RunContext) -> bool:
    """``config.overlap``, or (None) whether the run's executor has more than one worker."""
    if config.overlap is not None:
        return config.overlap
    return int(getattr(ctx.executor, "workers", 1) or 1) > 1


def materialize_node(loop: _Loop, state: SearchState, runtime: Any) -> dict[str, Any]:
    """Proposals -> evaluable payloads; invalid ones fail here, duplicates are dropped."""
    ctx: RunContext = runtime.context
    seen = loop.history(state, ctx).keys  # the earlier rounds' payload keys
    batch, n_dup, n_invalid = _materialize(
        loop, ctx, state.get("round", 0), state.get("proposals", []), seen,
        state.get("n_duplicates", 0), state.get("n_invalid", 0),
    )  # fmt: skip
    return {"batch": batch, "n_duplicates": n_dup, "n_invalid": n_invalid}


def _materialize(
    loop: _Loop,
    ctx: RunContext,
    rnd: int,
    proposals: list[dict[str, Any]],
    seen: set[str],
    n_dup: int,
    n_invalid: int,
) -> tuple[list[dict[str, Any]], int, int]:
    """Round ``rnd``'s proposals as its batch (and the updated duplicate / invalid
    counts): rejected ones logged with their reason, those whose key is in ``seen`` or
    earlier in the round dropped."""
    logs = loop.run_logs(ctx)
    fresh: set[str] = set()
    batch: list[dict[str, Any]] = []
    for i, raw in enumerate(proposals):
        prop = Proposal.model_validate(raw)
        # Ids are deterministic in (round, position) so a resumed run re-creates them.
        digest = uuid.uuid5(uuid.NAMESPACE_OID, json.dumps(raw, sort_keys=True, default=str))
        cid = f"{loop.id_prefix}r{rnd}c{i}-{ctx.seed}-{digest.hex[:8]}"
        lineage = Evaluated(
            id=cid, key="", payload={}, round=rnd, parent_ids=prop.parent_ids,
            origin=prop.origin, rationale=prop.rationale,
        )  # fmt: skip
        try:
            if prop.error is not None:
                raise InvalidCandidate(prop.error)
            payload = loop.problem.materialize(prop, ctx)
        except InvalidCandidate as err:
            n_invalid += 1
            ev = lineage.model_copy(
                update={"key": payload_key(prop.payload), "payload": prop.payload,
                        "error": f"invalid: {err}"}
            )  # fmt: skip
            ctx.tracer.event("candidate_invalid", id=cid, reason=str(err), round=rnd)
            rec = ev.model_dump(mode="json")
            logs.rejected.append_new(rec)  # not again when a resume re-runs the node
            batch.append(rec)
            continue
        key = payload_key(payload)
        if key in seen or key in fresh:
            n_dup += 1
            ctx.tracer.event("candidate_duplicate", id=cid, key=key, round=rnd)
            continue
        fresh.add(key)
        ev = lineage.model_copy(update={"key": key, "payload": payload})
        batch.append(ev.model_dump(mode="json"))
    return batch, n_dup, n_invalid


def propose_ahead_node(loop: _Loop, state: SearchState, runtime: Any) -> dict[str, Any]:
    """``overlap``: propose round+1 from the rounds before this one, materialize it and
    submit it, so its evaluations start as soon as a worker frees up."""
    ctx: RunContext = runtime.context
    ctx.recalled = list(state.get("recalled", []))
    config = loop.config
    rnd = state.get("round", 0)
    nxt = rnd + 1
    batch = state.get("batch", [])
    # This round's candidates start first (round 1: not submitted yet), so the workers
    # evaluate them while the LLM proposes the next round, in proposal order.
    loop.submit(ctx, [b for b in batch if b.get("error") is None], rnd, True)
    pending = sum(1 for b in batch if not _is_invalid(b))
    remaining = config.max_evaluations - state.get("n_evaluations", 0) - pending
    if remaining <= 0 or nxt >= config.max_rounds or _budget_spent(ctx):
        return {"ahead": [], "ahead_proposed": False}
    population = [Evaluated.model_validate(p) for p in state.get("population", [])]
    n = min(config.proposals_per_round, remaining)
    proposer = pick_proposer(loop.proposer, ctx)
    try:
        if isinstance(proposer, HistoryProposer):
            rows = loop.history(state, ctx).rows
            history = [Evaluated.model_validate(h) for h in rows]
            props = proposer.propose_from_history(loop.problem, history, population, n, nxt, ctx)
        else:
            props = proposer.propose(loop.problem, population, n, nxt, ctx)
    except BudgetExceeded as err:
        ctx.tracer.event("search_stop", reason=f"budget: {err.limit}", round=nxt)
        return {"ahead": [], "ahead_proposed": False,
                "pending_stop": f"budget exhausted ({err.limit}): {err}"}  # fmt: skip
    except LLMError as err:
        ctx.tracer.event("search_stop", reason="llm_error", error=str(err), round=nxt)
        return {"ahead": [], "ahead_proposed": False,
                "pending_stop": f"LLM error: {type(err).__name__}: {err}"}  # fmt: skip
    props = props[:remaining]
    ctx.tracer.event("proposed", round=nxt, n=len(props), proposer=proposer.name, ahead=True)
    raw = [p.model_dump(mode="json") for p in props]
    # Seen: the history's keys and this round's (in flight, not yet in the history).
    seen = set(loop.history(state, ctx).keys) | {b["key"] for b in batch if not _is_invalid(b)}
    ahead, n_dup, n_invalid = _materialize(
        loop, ctx, nxt, raw, seen, state.get("n_duplicates", 0), state.get("n_invalid", 0)
    )
    loop.submit(ctx, [a for a in ahead if a.get("error") is None], nxt, True)
    return {"ahead": ahead, "ahead_proposed": True, "n_duplicates": n_dup,
            "n_invalid": n_invalid}  # fmt: skip


def evaluate_node(loop: _Loop, state: SearchState, runtime: Any) -> dict[str, Any]:
    """Score the batch through the executor; each result is logged the moment it lands."""
    ctx: RunContext = runtime.context
    log = loop.run_logs(ctx).evaluated
    batch = [dict(b) for b in state.get("batch", [])]
    todo = [b for b in batch if b.get("error") is None and b["id"] not in log.done]
    if todo:
        _check_sandbox_budget(ctx)
    loop.wait(
        ctx, [b for b in batch if b.get("error") is None], state.get("round", 0),
        loop.overlapping(state),
    )  # fmt: skip
    evaluated = [b if b.get("error") is not None else log.done[b["id"]] for b in batch]
    _remember(ctx, loop.problem, evaluated)
    n_new = sum(1 for e in evaluated if not _is_invalid(e))
    # The round joins the history (its records are in the logs by now).
    return {
        "batch": evaluated,
        "history_round": state.get("round", 0) + 1,
        "n_history": state.get("n_history", 0) + len(evaluated),
        "history_digest": _digest(
            [e["id"] for e in evaluated], state.get("history_digest", _NO_DIGEST)
        ),
        "n_evaluations": state.get("n_evaluations", 0) + n_new,
    }


def reflect_node(loop: _Loop, state: SearchState, runtime: Any) -> dict[str, Any]:
    """The problem's lessons from this round, stored in memory."""
    ctx: RunContext = runtime.context
    batch = [Evaluated.model_validate(b) for b in state.get("batch", [])]
    population = [Evaluated.model_validate(p) for p in state.get("population", [])]
    try:
        got = loop.problem.reflect(batch, population, ctx) if batch else []
        lessons = [Lesson.of(item) for item in got]
    except (BudgetExceeded, LLMError) as err:
        ctx.tracer.event("reflect_skipped", reason=str(err))
        lessons = []
    if lessons and ctx.memory is not None:
        _store_lessons(ctx, loop, lessons, batch)
    return {"lessons": list(state.get("lessons", [])) + [les.text for les in lessons]}


def select_node(loop: _Loop, state: SearchState, runtime: Any) -> dict[str, Any]:
    """Keep the best ``population_size``; decide whether the search stops and why."""
    ctx: RunContext = runtime.context
    config, higher = loop.config, loop.problem.higher_is_better
    rnd = state.get("round", 0)
    pool = list(state.get("population", [])) + list(state.get("batch", []))
    passing = [p for p in pool if p.get("passed") and p.get("value") is not None]
    passing.sort(key=_sort_key(higher))
    population = passing[: config.population_size]
    old_best = state.get("best")
    best = population[0] if population else old_best
    improved = best is not None and (
        old_best is None or _better(best["value"], old_best["value"], higher)
    )
    stale = 0 if improved else state.get("stale_rounds", 0) + 1
    batch_new = [b for b in state.get("batch", []) if not _is_invalid(b)]
    dup_rounds = 0 if batch_new else state.get("duplicate_rounds", 0) + 1
    done, reason = bool(state.get("done")), state.get("stop_reason", "")
    ahead_proposed = loop.overlapping(state) and bool(state.get("ahead_proposed"))
    draining = bool(state.get("draining"))
    if draining:  # the round in flight at the stop is evaluated: now the search is done
        done = True
    elif not done:
        if state.get("pending_stop"):
            done, reason = True, str(state["pending_stop"])
        elif state.get("n_evaluations", 0) >= config.max_evaluations:
            done, reason = True, "evaluation budget spent"
        elif rnd + 1 >= config.max_rounds:
            done, reason = True, "max rounds reached"
        elif config.patience is not None and stale >= config.patience:
            done, reason = True, f"no improvement in {stale} rounds"
        elif dup_rounds >= config.max_duplicate_rounds:
            done, reason = True, f"{dup_rounds} rounds without a new candidate"
        elif spent := _budget_spent(ctx):
            done, reason = True, f"budget exhausted ({spent})"
        if done and ahead_proposed:  # round+1 is submitted (paid for): evaluate it first
            done, draining = False, True
    if done:
        loop.close()
    best_value = best["value"] if best else None
    if ctx.progress is not None:
        ctx.progress(
            {
                "round": rnd,
                "evaluations": state.get("n_evaluations", 0),
                "max_evaluations": config.max_evaluations,
                "best": best_value,
            }
        )
    ctx.tracer.event(
        "round_done", round=rnd, best=best_value, evaluations=state.get("n_evaluations", 0),
        done=done, reason=reason,
    )  # fmt: skip
    return {
        "population": population,
        "best": best,
        "stale_rounds": stale,
        "duplicate_rounds": dup_rounds,
        "round": rnd + 1,
        "proposals": [],
        "batch": list(state.get("ahead", [])) if ahead_proposed else [],
        "batch_ready": ahead_proposed,
        "ahead": [],
        "ahead_proposed": False,
        "pending_stop": "",
        "draining": draining,
        "done": done,
        "stop_reason": reason,
    }


def _after_propose(state: SearchState) -> str:
    return "select" if state.get("done") else "materialize"


def _after_materialize(loop: _Loop, state: SearchState) -> str:
    """``overlap`` from round 1 on: the next round is proposed before this one evaluates
    (round 0's seeds are evaluated first: round 1 is proposed from their results)."""
    if loop.overlapping(state) and state.get("round", 0) >= 1:
        return "propose_ahead"
    return "evaluate"


def _after_select(state: SearchState) -> str:
    from langgraph.graph import END

    return END if state.get("done") else "propose"


def _after_select_overlap(state: SearchState) -> str:
    from langgraph.graph import END

    if state.get("done"):
        return END
    if state.get("batch_ready"):
        return "evaluate" if state.get("draining") else "propose_ahead"
    return "propose"


def search_graph(
    problem: SearchProblem, proposer: AnyProposer, config: SearchConfig, *, id_prefix: str = ""
) -> Any:
    """The propose -> materialize -> evaluate -> reflect -> select graph, uncompiled.

    id_prefix: prepended to candidate ids, so several searches sharing one run directory
    (e.g. one per BO round) never share ids or cached evaluations.
    """
    return _graph(_Loop(problem, proposer, config, id_prefix, problem.evaluator()))


def _graph(loop: _Loop) -> Any:
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(SearchState, context_schema=RunContext)
    nodes = {
        "propose": propose_node,
        "materialize": materialize_node,
        "evaluate": evaluate_node,
        "reflect": reflect_node,
        "select": select_node,
    }
    if loop.config.overlap is not False:  # on, or decided at round 0 (None)
        nodes["propose_ahead"] = propose_ahead_node
    for name, fn in nodes.items():
        graph.add_node(name, functools.partial(fn, loop))
    graph.add_edge(START, "propose")
    graph.add_conditional_edges("propose", _after_propose, ["materialize", "select"])
    graph.add_edge("evaluate", "reflect")
    graph.add_edge("reflect", "select")
    if loop.config.overlap is not False:
        graph.add_conditional_edges(
            "materialize",
            functools.partial(_after_materialize, loop),
            ["propose_ahead", "evaluate"],
        )
        graph.add_edge("propose_ahead", "evaluate")
        graph.add_conditional_edges(
            "select", _after_select_overlap, ["propose_ahead", "evaluate", "propose", END]
        )
    else:
        graph.add_edge("materialize", "evaluate")
        graph.add_conditional_edges("select", _after_select, ["propose", END])
    return graph


def build_search_graph(
    problem: SearchProblem,
    proposer: AnyProposer,
    config: SearchConfig,
    *,
    checkpointer: Any | None = None,
    id_prefix: str = "",
) -> Any:
    """``search_graph`` compiled with ``checkpointer``."""
    graph = search_graph(problem, proposer, config, id_prefix=id_prefix)
    return graph.compile(checkpointer=checkpointer)


def _is_invalid(ev: dict[str, Any]) -> bool:
    """Rejected at materialization (never evaluated, costs no evaluation budget)."""
    return str(ev.get("error") or "").startswith("invalid:")


def _merge_score(b: dict[str, Any], score: Score | BaseException, share_s: float) -> dict[str, Any]:
    rec = dict(b)
    if isinstance(score, BaseException):
        rec.update(
            passed=False, value=None, error=f"evaluator crashed: {type(score).__name__}: {score}"
        )
        rec["eval_s"] = share_s
        return rec
    value = float(score.value) if score.value is not None else None
    finite = value is not None and math.isfinite(value)
    rec.update(
        passed=bool(score.passed and finite),
        value=value if finite else None,
        metrics={k: float(v) for k, v in score.metrics.items()},
        details=json.loads(json.dumps(score.details, default=str)),
        error=None
        if (score.passed and finite)
        else str(score.details.get("reason", "did not pass")),
        eval_s=float(score.metrics.get("eval_s", share_s)),
    )
    return rec


def _check_sandbox_budget(ctx: RunContext) -> None:
    if ctx.budget is not None:
        ctx.budget.check_sandbox()


def _budget_spent(ctx: RunContext) -> str | None:
    """The cap that is spent (``calls``, ``usd``, ``wall_s``, ...), None while none is."""
    if ctx.budget is None:
        return None
    try:
        ctx.budget.check_before_call()
        ctx.budget.check_sandbox()
    except BudgetExceeded as err:
        return str(err.limit or "budget")
    return None


def _remember(ctx: RunContext, problem: SearchProblem, evaluated: list[dict[str, Any]]) -> None:
    """Write each candidate to memory with its lineage (idempotent on resume)."""
    if ctx.memory is None:
        return
    task = task_id(problem.task)
    with candidate_batch(ctx):  # one transaction for the round's candidates
        for ev in evaluated:
            payload = ev["payload"]
            code = payload.get("code") if isinstance(payload.get("code"), str) else None
            config = {k: v for k, v in payload.items() if k != "code"} or None
            record_candidate(
                ctx,
                mem_id=memory_id(ctx, ev["id"]),
                task=task,
                code=code,
                config=config,
                parent_ids=[memory_id(ctx, p) for p in ev.get("parent_ids", [])],
                metrics=dict(ev.get("metrics") or {}),
                score=ev.get("value"),
                status="evaluated" if ev.get("passed") else "failed",
                tags=[t for t in (ev.get("origin"), f"round-{ev.get('round', 0)}") if t],
            )


def _store_lessons(
    ctx: RunContext, loop: _Loop, lessons: Sequence[str | Lesson], batch: list[Evaluated]
) -> None:
    """Store the round's lessons; with a run directory their ids are stable, so a round
    re-run after a kill (between the memory write and the node's checkpoint) does not
    store them twice, and later prompts see the memory an uninterrupted run would."""
    # ids and measured values only: an error text here would be candidate output in a
    # record whose provenance is the lesson's
    summary = "; ".join(
        f"{ev.id}: failed" if ev.error else f"{ev.id}: value={ev.value:.6g}"
        if ev.value is not None else ev.id
        for ev in batch[:6]
    )  # fmt: skip
    rnd = batch[0].round if batch else 0
    for i, les in enumerate(map(Lesson.of, lessons)):
        digest = hashlib.sha256(les.text.encode()).hexdigest()[:12]
        local = f"{loop.id_prefix}lesson-r{rnd}-{i}-{ctx.seed}-{digest}"
        record_lesson(
            ctx,
            mem_id=memory_id(ctx, local, prefix="exp") if ctx.run_dir else None,
            task=task_signature(loop.problem.task),
            lesson=les.text,
            trajectory_summary=summary,
            outcome=f"round {rnd}",
            provenance=les.provenance,
            tags=[ctx.agent, getattr(loop.problem.task, "suite", "task")],
        )


# ----------------------------------------------------------------------------- driver


SearchOutcome = Callable[[SearchResult, RunContext], AgentOutcome]
"""``outcome(result, ctx) -> AgentOutcome``: a search's result as the run's outcome."""


def search_run(
    problem: SearchProblem,
    proposer: AnyProposer,
    config: SearchConfig,
    *,
    outcome: SearchOutcome | None = None,
    thread_id: str = "search",
) -> AgentRun:
    """The search as an ``AgentRun``; checkpoints go to ``ctx.run_dir`` when it is set.

    outcome: the result read as an ``AgentOutcome``; default ``search_outcome`` with the
    proposer that ran (an LLM one's run fails when none of its proposals passed).
    """
    return _search_run(problem, proposer, config, outcome, thread_id)[0]


def _search_run(
    problem: SearchProblem,
    proposer: AnyProposer,
    config: SearchConfig,
    outcome: SearchOutcome | None,
    thread_id: str,
) -> tuple[AgentRun, Callable[[dict[str, Any], RunContext], SearchResult]]:
    """``search_run`` and ``result(final_state, ctx)``: its ``SearchResult`` (the
    history read from the run's logs)."""
    prefix = "" if thread_id == "search" else f"{thread_id}."
    loop = _Loop(problem, proposer, config, prefix, problem.evaluator())

    def check(conn: sqlite3.Connection, values: dict[str, Any], ctx: RunContext) -> None:
        _check_checkpoint(conn, values, ctx.run_dir, prefix, config)

    def result(state: dict[str, Any], ctx: RunContext) -> SearchResult:
        return search_result(state, loop.history(state, ctx).rows)

    def read(state: dict[str, Any], ctx: RunContext) -> AgentOutcome:
        res = result(state, ctx)
        if outcome is not None:
            return outcome(res, ctx)
        return search_outcome(
            res, proposer=pick_proposer(proposer, ctx).name,
            higher_is_better=problem.higher_is_better, llm=ctx.llm is not None,
        )  # fmt: skip

    run = AgentRun(
        graph=_graph(loop), outcome=read,
        start={"round": 0}, thread_id=thread_id, recursion_limit=10 * config.max_rounds + 50,
        check=check, what=f"search {thread_id!r}",
    )  # fmt: skip
    return run, result


def run_search(
    problem: SearchProblem,
    proposer: AnyProposer,
    ctx: RunContext,
    config: SearchConfig,
    *,
    thread_id: str = "search",
    resume: bool = False,
) -> SearchResult:
    """Run (or resume) the search; checkpoints go to ``ctx.run_dir`` when it is set.

    Raises:
        ConfigError: ``resume`` without a run directory, or a fresh start over a run.
        RunRecordError: the checkpoint or the evaluation log is damaged.
    """
    run, result = _search_run(problem, proposer, config, None, thread_id)
    return result(run.drive(ctx, resume=resume).state, ctx)


def _check_checkpoint(
    conn: Any, values: dict[str, Any], run_dir: Path | None, prefix: str, config: SearchConfig
) -> None:
    """Refuse to resume from a damaged checkpoint (one line naming the file).

    A torn or cut WAL does not fail to open: SQLite drops the frames after the damage
    and the run would silently continue from an older state. So the checkpoint is
    cross-checked against the candidate logs: the candidates of the rounds it has
    finished must be exactly the ones it counts (their number and the digest of their
    ids), and the evaluation log may be ahead of it by at most the round in flight
    (the rejection log too, which is not checked: a re-run round logs no rejection twice).
    """
    assert run_dir is not None
    db = run_dir / CHECKPOINTS
    hint = FORCE_RESTART_HINT
    try:
        row = conn.execute("PRAGMA integrity_check").fetchone()
    except sqlite3.DatabaseError as e:
        raise RunRecordError(f"{db} is damaged ({e}); {hint}") from None
    if not row or row[0] != "ok":
        raise RunRecordError(f"{db} is damaged (integrity check: {row}); {hint}")
    if "history" in values or "seen" in values:
        raise RunRecordError(
            f"{db} was written by an older optiforge (its state holds the whole history) "
            f"and cannot be resumed by this one; {hint}"
        )
    logs = _Logs(run_dir)
    through = values.get("history_round", 0)
    hist = logs.history(prefix, through)
    n = values.get("n_history", 0)
    if len(hist.rows) != n or hist.digest != values.get("history_digest", _NO_DIGEST):
        raise RunRecordError(
            f"{run_dir / EVALUATIONS} and {REJECTED} hold {len(hist.rows)} candidates of the "
            f"rounds {db} has finished, where it records {n} (or other ones): the logs "
            f"were cut or edited; {hint}"
        )
    ahead = [
        r for rid, r in logs.evaluated.done.items() if _mine(rid, prefix) and r["round"] >= through
    ]
    in_flight = max(config.proposals_per_round, len(values.get("batch") or []))
    overlap = values.get("overlap", config.overlap)
    rounds_in_flight = 2 if overlap else 1  # overlap: this round and the next
    if len(ahead) > rounds_in_flight * in_flight or any(
        r["round"] >= through + rounds_in_flight for r in ahead
    ):
        raise RunRecordError(
            f"{db} is behind {EVALUATIONS} by {len(ahead)} evaluations (at most "
            f"{rounds_in_flight * in_flight} of its rounds from {through} can be in flight): the checkpoint or its "
            f"WAL was cut or damaged; {hint}"
        )


def search_result(state: dict[str, Any], history: list[dict[str, Any]]) -> SearchResult:
    """The search's final graph state and its history (read from the run's logs, see
    ``search_run``) as a ``SearchResult``."""
    best = state.get("best")
    return SearchResult(
        best=Evaluated.model_validate(best) if best else None,
        history=[Evaluated.model_validate(h) for h in history],
        population=[Evaluated.model_validate(p) for p in state.get("population", [])],
        n_evaluations=state.get("n_evaluations", 0),
        n_duplicates=state.get("n_duplicates", 0),
        n_invalid=state.get("n_invalid", 0),
        rounds=state.get("round", 0),
        stop_reason=state.get("stop_reason", ""),
        lessons=state.get("lessons", []),
    )
