"""agent-CBO's problem: the numerical CBO session behind the graph, and how state maps to it.

The graph state holds everything a resume needs (``AgentCBOState``): the assumed
graph and exploration sets (``session_graph``), every trial record (``trials``) and per
trial its units, unit-cube point, RNG and stuck-tracker state (``trial_logs``). From that
and the run's seed, ``restore_session`` rebuilds the ``CBOSession`` without calling the
SCM, and ``state_trace`` reads the run's ``CBOTrace`` straight off the state.

Rebuilding costs 2-4 trials' worth of GP refits (measured on the dev SCMs after 23-30
trials: 170-630 ms against 80-340 ms per trial), and a round enters three or four nodes,
so nodes do not rebuild on every entry: ``SessionCache`` keeps the last session as a pure
cache of the state (see its docstring for the rule).

State: the graph state is the only source of truth. It is serializable (edge lists,
decisions, trial records, and per trial the units and RNG state the numerical session
needs), and the outcome is read from it (``state_trace``), never from a live object. Why a
cache and not the alternatives: rebuilding on every node entry would multiply the run time
(above); a session parked in the runtime context by itself would still be a mutable second
copy of the state next to it. The cache check makes a stale session impossible to act on,
whatever ran before (a fresh run, a resume, a node that failed half-way). The run keeps
its cache in ``AgentContext.memo`` (``nodes.sessions``).

With ``ctx.run_dir`` set, the harness checkpoints every node to
``agent_cbo_checkpoints.sqlite`` (``durability="sync"``) and ``resume=True`` continues from
the last checkpoint: finished interventions are neither repeated nor re-drawn, and the
continuation makes the same choices as an uninterrupted run of the same seed.
"""

from __future__ import annotations

import operator
from typing import Annotated, Any, TypedDict

import networkx as nx
import numpy as np

from optiforge.agents.agent_cbo.config import AgentCBOConfig
from optiforge.agents.agent_cbo.structure import InterventionalBIC, NeighbourScore
from optiforge.agents.kit import RunContext
from optiforge.errors import InvalidTask
from optiforge.evals.suites.cbo.protocol import CausalBOTask
from optiforge.solvers.cbo import CBOConfig, CBOTrace, TrialRecord
from optiforge.solvers.cbo.session import CBOSession


class AgentCBOState(TypedDict, total=False):
    """Serializable graph state."""

    beliefs: list[dict[str, Any]]
    llm_error: str
    pc: dict[str, Any]
    structure: dict[str, Any]
    committed: list[list[str]]
    round: int
    pending: list[dict[str, Any]]
    deltas: dict[str, float]
    """Edit label -> data score + prior log-odds (what the gate compares to the margin)."""
    data_deltas: dict[str, float]
    """Edit label -> structure-score change alone (what the repair prompt shows)."""
    decisions: list[dict[str, Any]]
    llm_tried: dict[str, int]
    trials: list[dict[str, Any]]
    trial_logs: Annotated[list[dict[str, Any]], operator.add]
    """Per trial ``CBOSession.trial_log()`` (appended: a node returns only the new one)."""
    session_graph: dict[str, Any]
    """The graph the session optimises on (``nodes``, ``edges``) and its trace's
    ``exploration_sets``: the committed graph may differ by routing-irrelevant edits."""
    done: bool
    stop_reason: str


def cbo_config(task: CausalBOTask, config: AgentCBOConfig, n_trials: int | None) -> CBOConfig:
    """The numerical session's options for ``task`` under the agent's ``config``."""
    return CBOConfig(
        n_trials=n_trials or task.n_trials, budget_cost=task.budget_cost, n_obs=config.n_obs,
        units_per_trial=config.units_per_trial, grid_1d=config.grid_1d,
        grid_2d=config.grid_2d, max_set_size=config.max_set_size,
        stuck_patience=config.stuck_patience, stuck_margin=config.stuck_margin,
        coverage_patience=config.coverage_patience,
    )  # fmt: skip


def session_graph(session: CBOSession) -> dict[str, Any]:
    """The state's ``session_graph``: the session's graph and its trace's exploration sets."""
    return {
        "nodes": list(session.graph.nodes), "edges": [list(e) for e in session.graph.edges],
        "exploration_sets": [list(e) for e in session.trace.exploration_sets],
    }  # fmt: skip


def restore_session(task: CausalBOTask, config: AgentCBOConfig, n_trials: int | None, seed: int,
                    state: AgentCBOState) -> CBOSession:  # fmt: skip
    """The numerical session as it was when ``state`` was checkpointed."""
    sg = state.get("session_graph")
    if sg is None:
        raise InvalidTask("agent-cbo state has no session yet (discovery did not finish)")
    g = nx.DiGraph()
    g.add_nodes_from(sg["nodes"])
    g.add_edges_from((a, b) for a, b in sg["edges"])
    return CBOSession.restore(
        task.scm, g, cbo_config(task, config, n_trials), seed, state.get("trials", []),
        state.get("trial_logs", []), sg["exploration_sets"],
    )  # fmt: skip


def describes(state: AgentCBOState, session: CBOSession, seed: int) -> bool:
    """True when ``session`` is the session ``state`` describes for ``seed``.

    Same seed, assumed graph and exploration sets, the same trial records, and the last
    trial's log (its units, RNG and stuck-tracker state after it) equal to the state's.
    """
    trials, logs = state.get("trials", []), state.get("trial_logs", [])
    return (
        session.seed == seed
        and session_graph(session) == state.get("session_graph")
        and len(session.interventions) == len(trials) == len(logs)
        and [t.model_dump() for t in session.trace.trials] == trials
        and (not logs or session.trial_log() == logs[-1])
    )


def state_trace(state: AgentCBOState, seed: int) -> CBOTrace:
    """The run's trace read from the state (equal to its session's ``trace``)."""
    sg = state.get("session_graph") or {"exploration_sets": []}
    return CBOTrace(
        method="agent_cbo", exploration_sets=[list(e) for e in sg["exploration_sets"]],
        trials=[TrialRecord.model_validate(t) for t in state.get("trials", [])], seed=seed,
    )  # fmt: skip


def interventional_scorer(
    session: CBOSession, config: AgentCBOConfig, basis: str | None = None
) -> InterventionalBIC | NeighbourScore:
    """The structure score (``basis``, default ``config.score_basis``) on the session's
    observational and interventional units."""
    basis = basis or config.score_basis
    names = list(session.obs)
    cols = {v: [session.obs[v]] for v in names}
    flags = {v: [np.zeros(len(session.obs[v]), dtype=bool)] for v in names}
    # The knn score reads at most ``score_units`` units of a trial (its first ones):
    # nearest-neighbour searches over every unit of 30-50 trials cost seconds a round.
    cap = config.score_units if basis == "knn" else None
    for d in session.interventions:
        for v in names:
            cols[v].append(np.asarray(d.units[v])[:cap])
            flags[v].append(np.full(len(cols[v][-1]), v in d.x))
    columns = {v: np.concatenate(c) for v, c in cols.items()}
    intervened = {v: np.concatenate(f) for v, f in flags.items()}
    if basis == "knn":
        return NeighbourScore(columns, intervened, k=config.score_neighbours)
    return InterventionalBIC(
        columns,
        intervened,
        basis=config.score_basis if basis == "knn" else basis,  # type: ignore[arg-type]
        n_knots=config.score_knots,
    )


class SessionCache:
    """The last numerical session of one compiled graph, as a pure cache of its state.

    The rule: the graph state is the only source of truth. ``get(state, ctx)`` returns
    the cached session only when ``describes(state, session, ctx.seed)``; otherwise it
    rebuilds the session from the state (``restore_session``, a ``cbo_resume`` event) and
    caches that. A node may change the session it got (``step``, ``set_graph``) only to
    return the state that describes the result, so the next node finds it again; a node
    that fails half-way leaves a session no state describes, which is never reused.
    ``scorer`` is cached the same way: per session and number of interventions (the
    interventional BIC depends on nothing else).
    """

    def __init__(self, task: CausalBOTask, config: AgentCBOConfig, n_trials: int | None) -> None:
        self.task, self.config, self.n_trials = task, config, n_trials
        self._session: CBOSession | None = None
        self._scorer: tuple[CBOSession, int, InterventionalBIC | NeighbourScore] | None = None
        self._evidence: tuple[CBOSession, int, NeighbourScore] | None = None

    def new(self, seed: int) -> CBOSession:
        """A fresh session (observational sample drawn, no graph yet), now the cached one."""
        self._session = CBOSession(
            self.task.scm, None, cbo_config(self.task, self.config, self.n_trials), seed=seed
        )
        return self._session

    def get(self, state: AgentCBOState, ctx: RunContext) -> CBOSession:
        """The session ``state`` describes: the cached one if it is that, else rebuilt."""
        s = self._session
        if s is None or not describes(state, s, ctx.seed):
            s = restore_session(self.task, self.config, self.n_trials, ctx.seed, state)
            self._session = s
            ctx.tracer.event("cbo_resume", n_trials_restored=len(state.get("trials", [])))
        return s

    def evidence(self, session: CBOSession) -> NeighbourScore | None:
        """The nearest-neighbour score that judges backbone breaks (``edit_data_delta``);
        None until a trial has run (no interventional rows to judge by)."""
        if not session.interventions:
            return None
        main = self.scorer(session)
        if isinstance(main, NeighbourScore):
            return main
        c = self._evidence
        if c is None or c[0] is not session or c[1] != len(session.interventions):
            ev = interventional_scorer(session, self.config, "knn")
            assert isinstance(ev, NeighbourScore)
            c = (session, len(session.interventions), ev)
            self._evidence = c
        return c[2]

    def scorer(self, session: CBOSession) -> InterventionalBIC | NeighbourScore:
        """The structure score of ``session``'s data as it is now."""
        c = self._scorer
        if c is None or c[0] is not session or c[1] != len(session.interventions):
            c = (session, len(session.interventions),
                 interventional_scorer(session, self.config))  # fmt: skip
            self._scorer = c
        return c[2]
