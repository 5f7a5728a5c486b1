"""``agent-cbo``: causal BO that learns only the structure the optimizer can feel.

One LangGraph graph, nodes in order::

    language_prior -> discovery -> calibration -> residual_repair -> commit_gate
                                        ^                                 |
                                        +------------ cbo_step <----------+  (until budget)

- ``language_prior``: LLM beliefs about direct edges from the variables' names and
  descriptions (structured output ``EdgeBeliefs``); offline: no beliefs.
- ``discovery``: causal-learn PC on the observational sample (target a sink) merged with
  the beliefs into a protected backbone (PC and LLM agree) and residual uncertain pairs.
- ``cbo_step``: one intervention of cost-aware causal BO on the committed graph
  (``solvers.cbo.CBOSession``).
- ``calibration`` (the Calibration agent): scores every single-edge edit on uncertain
  pairs by the change of an interventional BIC (observational + interventional units,
  intervened mechanisms cut) plus the LLM beliefs' log-odds (a structure prior; zero
  offline). Every ``llm_every`` rounds the LLM first revises its beliefs on uncertain
  pairs against the interventional evidence (``subagents.Calibration``).
- ``residual_repair`` (the Residual Repair agent): picks at most ``max_edits_per_round``
  edits: the language prior's proposals first, then (every ``llm_every`` rounds) the
  candidate edits the LLM chooses (``subagents.RepairPlan``), then the best-scoring data
  edits above the margin. An LLM choice that is not a local edit of an uncertain pair is
  rejected here, with its reason, and never reaches the gate.
- ``commit_gate``: deterministic; accepts an edit only if it keeps the graph acyclic,
  keeps the backbone, gains the score margin, and, when it changes the optimizer's routing
  (exploration sets or do-priors), passes routing-proxy checks. Every decision is a
  tracer event and is returned in ``AgentOutcome.extra["edits"]``.

The offline agent (no LLM) is the ``discovery-only`` baseline of the paper. Graph state
is serializable (edge lists, decisions, trial records, and per trial the units and RNG
state the numerical session needs); the session itself lives in the node closures and is
rebuilt from the state (``CBOSession.restore``) when a node finds none. With
``ctx.run_dir`` set, ``solve`` checkpoints every node to ``agent_cbo_checkpoints.sqlite``
(``durability="sync"``) and ``resume=True`` continues from the last checkpoint: finished
interventions are neither repeated nor re-drawn, and the continuation makes the same
choices as an uninterrupted run of the same seed.
"""

from __future__ import annotations

import operator
import time
from typing import Annotated, Any, Literal, TypedDict, cast

import networkx as nx
import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from optiforge.agents.agent_cbo import subagents
from optiforge.agents.agent_cbo.gate import CommitGate, GateDecision, routing_equivalent
from optiforge.agents.agent_cbo.structure import (
    EdgeBelief,
    EdgeBeliefs,
    Edit,
    InterventionalBIC,
    PCResult,
    Structure,
    belief_log_odds,
    build_structure,
    candidate_edits,
    clean_beliefs,
    language_prior_messages,
    run_pc,
    to_graph,
)
from optiforge.agents.kit import RunContext, run_graph
from optiforge.agents.spec import AgentOutcome, AgentSpec
from optiforge.errors import BudgetExceeded, ConfigError, InvalidTask, LLMError
from optiforge.solvers.cbo import CBOConfig, CBOTrace, run_bo, run_cbo
from optiforge.solvers.cbo.session import CBOSession


class AgentCBOConfig(BaseModel):
    """Options of the ``agent-cbo`` agent."""

    model_config = ConfigDict(extra="forbid")

    n_obs: int = Field(default=200, ge=20)
    """Observational units for PC and the do-priors (free, as in CBO)."""
    pc_alpha: float = Field(default=0.05, gt=0, lt=1)
    """Significance level of PC's conditional-independence tests."""
    pc_test: str = "fisherz"
    """causal-learn test name (``fisherz`` is fast; ``kci`` took 5-80 s per dev SCM)."""
    belief_confidence: float = Field(default=0.7, ge=0, le=1)
    """LLM beliefs below this confidence are ignored."""
    max_edits_per_round: int = Field(default=2, ge=0)
    """Bound on edits sent to the commit gate per round."""
    score_margin: float = Field(default=6.0, ge=0)
    """Minimum interventional-BIC gain (nats) of an accepted edit."""
    prior_tolerance: float = Field(default=0.25, ge=0)
    """Allowed relative rise of the do-prior MSE on observed interventions."""
    score_basis: Literal["cubic", "spline", "rank"] = "cubic"
    """Additive terms of the interventional BIC (see ``InterventionalBIC``). Measured on
    ToyGraph, Synthetic2, Independent and Graph4Nodes (discovery-only, seeds 0-2): cubic
    9/12 runs within tolerance, 5 spurious adjacencies, 2 missed; rank 8/12, 2 spurious,
    6 missed (it misses Synthetic2's weak C -> D, C -> E), so cubic stays the default."""
    score_knots: int = Field(default=5, ge=2)
    """Spline knots of the ``spline`` and ``rank`` bases (``InterventionalBIC``)."""
    prior_weight: float = Field(default=1.0, ge=0)
    """Weight of the LLM beliefs' log-odds in an edit's score (the structure prior)."""
    llm_recheck_every: int = Field(default=5, ge=1)
    """A rejected LLM proposal is re-sent to the gate every this many rounds."""
    llm_every: int = Field(default=5, ge=0)
    """The Calibration and Residual Repair agents consult the LLM every this many rounds
    (from round ``llm_every`` on; 0: the language prior is the only LLM call). Between
    consultations, and offline, both work from the data score alone."""
    repair_candidates_shown: int = Field(default=40, ge=1)
    """The repair prompt lists at most this many candidate edits (best data score first)."""
    max_set_size: int | None = 2
    """Largest exploration set (MIS) considered."""
    grid_1d: int = Field(default=201, ge=5)
    """Candidate points of one-variable sets (see ``CBOConfig``)."""
    grid_2d: int = Field(default=41, ge=5)
    """Candidate points per axis of two-variable sets."""
    units_per_trial: int = Field(default=100, ge=1)
    """Units per intervention (their mean is the observation)."""
    stuck_patience: int | None = Field(default=3, ge=1)
    """``CBOConfig.stuck_patience`` (exploratory EI after this many stale acquisitions);
    the known-graph baseline uses the same default so the comparison stays paired, and it
    equals the suite's known-graph reference (``reference.reference_config``: 21/21 dev
    runs within tolerance against 18/21 with plain EI)."""
    stuck_margin: float = Field(default=1.0, ge=0)
    """``CBOConfig.stuck_margin``."""


# ------------------------------------------------------------------ graph


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
    """Edit label -> interventional-BIC change alone (what the repair prompt shows)."""
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


def _cbo_config(task: Any, config: AgentCBOConfig, n_trials: int | None) -> CBOConfig:
    return CBOConfig(
        n_trials=n_trials or task.n_trials, budget_cost=task.budget_cost, n_obs=config.n_obs,
        units_per_trial=config.units_per_trial, grid_1d=config.grid_1d,
        grid_2d=config.grid_2d, max_set_size=config.max_set_size,
        stuck_patience=config.stuck_patience, stuck_margin=config.stuck_margin,
    )  # fmt: skip


CHECKPOINTS = "agent_cbo_checkpoints.sqlite"
THREAD_ID = "agent_cbo"


def _session_graph(session: CBOSession) -> dict[str, Any]:
    return {
        "nodes": list(session.graph.nodes), "edges": [list(e) for e in session.graph.edges],
        "exploration_sets": [list(e) for e in session.trace.exploration_sets],
    }  # fmt: skip


def restore_session(task: Any, config: AgentCBOConfig, n_trials: int | None, seed: int,
                    state: AgentCBOState) -> CBOSession:  # fmt: skip
    """The numerical session as it was when ``state`` was checkpointed."""
    sg = state.get("session_graph")
    if sg is None:
        raise InvalidTask("agent-cbo state has no session yet (discovery did not finish)")
    g = nx.DiGraph()
    g.add_nodes_from(sg["nodes"])
    g.add_edges_from((a, b) for a, b in sg["edges"])
    return CBOSession.restore(
        task.scm, g, _cbo_config(task, config, n_trials), seed, state.get("trials", []),
        state.get("trial_logs", []), sg["exploration_sets"],
    )  # fmt: skip


def build_graph(
    task: Any, config: AgentCBOConfig, n_trials: int | None, checkpointer: Any | None = None
) -> tuple[Any, dict]:
    """Compile the agent's StateGraph for ``task``; returns (graph, live handles)."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.runtime import Runtime

    scm = task.scm  # used only as the environment: sample() and do(), never its graph
    target = task.target
    manipulable = list(task.domains)
    live: dict[str, Any] = {}

    def get_session(state: AgentCBOState, ctx: RunContext) -> CBOSession:
        # A resumed run enters a node with no live session: rebuild it from the state.
        if "session" not in live:
            live["session"] = restore_session(task, config, n_trials, ctx.seed, state)
            ctx.tracer.event("cbo_resume", n_trials_restored=len(state.get("trials", [])))
        return live["session"]

    def language_prior(state: AgentCBOState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        ctx = runtime.context
        if ctx.llm is None:
            ctx.tracer.event("cbo_language_prior", n_beliefs=0, offline=True)
            return {"beliefs": []}
        msgs = language_prior_messages(task.variables, target, task.description)
        try:
            reply = ctx.llm.complete(msgs, schema=EdgeBeliefs)
        except (LLMError, BudgetExceeded) as err:
            # No beliefs is the discovery-only agent: a failed prior degrades, not crashes.
            ctx.tracer.event("cbo_language_prior", n_beliefs=0, error=str(err))
            return {"beliefs": [], "llm_error": f"{type(err).__name__}: {err}"}
        assert isinstance(reply.parsed, EdgeBeliefs)
        beliefs = clean_beliefs(reply.parsed.edges, task.variables)
        ctx.tracer.event("cbo_language_prior", n_beliefs=len(beliefs),
                         dropped=len(reply.parsed.edges) - len(beliefs))  # fmt: skip
        return {"beliefs": [b.model_dump() for b in beliefs]}

    def discovery(state: AgentCBOState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        ctx = runtime.context
        session = CBOSession(scm, None, _cbo_config(task, config, n_trials), seed=ctx.seed)
        live["session"] = session
        pc_res = run_pc(session.obs, target, alpha=config.pc_alpha, indep_test=config.pc_test)
        beliefs = [EdgeBelief.model_validate(b) for b in state.get("beliefs", [])]
        st = build_structure(
            list(session.obs), target, manipulable, pc_res, beliefs,
            confidence=config.belief_confidence, max_set_size=config.max_set_size,
        )  # fmt: skip
        g = to_graph(st.nodes, st.initial)
        session.set_graph(g)
        ctx.tracer.event("cbo_discovery", pc_directed=pc_res.directed,
                         pc_undirected=pc_res.undirected, backbone=st.backbone,
                         initial=st.initial, n_uncertain=len(st.uncertain),
                         llm_proposals=st.proposals, sets=session.sets)  # fmt: skip
        return {
            "pc": pc_res.model_dump(), "structure": st.model_dump(),
            "committed": [list(e) for e in g.edges], "round": 0, "decisions": [],
            "llm_tried": {}, "trials": [], "session_graph": _session_graph(session),
        }  # fmt: skip

    def cbo_step(state: AgentCBOState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        session = get_session(state, runtime.context)
        rec = None if session.done else session.step()
        if rec is None:
            return {"done": True, "stop_reason": "intervention budget spent"}
        runtime.context.tracer.event("cbo_trial", trial=rec.model_dump())
        if runtime.context.progress is not None:
            runtime.context.progress({"evaluations": rec.index + 1,
                                      "max_evaluations": session.config.n_trials,
                                      "best": rec.best_true})  # fmt: skip
        out: dict[str, Any] = {"trials": [*state.get("trials", []), rec.model_dump()],
                               "trial_logs": [session.trial_log()],
                               "round": state.get("round", 0) + 1}  # fmt: skip
        if session.done:  # no structure round after the last intervention
            out.update(done=True, stop_reason="intervention budget spent")
        return out

    def _scorer(session: CBOSession) -> InterventionalBIC:
        names = list(session.obs)
        cols = {v: [session.obs[v]] for v in names}
        flags = {v: [np.zeros(len(session.obs[v]), dtype=bool)] for v in names}
        for d in session.interventions:
            for v in names:
                cols[v].append(d.units[v])
                flags[v].append(np.full(len(d.units[v]), v in d.x))
        return InterventionalBIC(
            {v: np.concatenate(c) for v, c in cols.items()},
            {v: np.concatenate(f) for v, f in flags.items()},
            basis=config.score_basis,
            n_knots=config.score_knots,
        )

    def _llm_due(state: AgentCBOState, ctx: RunContext) -> bool:
        rnd = state.get("round", 0)
        return (
            ctx.llm is not None
            and config.llm_every > 0
            and rnd > 0
            and (rnd % config.llm_every == 0)
        )

    def _evidence(session: CBOSession) -> list[subagents.SetEvidence]:
        return subagents.intervention_evidence(
            session.obs, [(d.x, d.units) for d in session.interventions]
        )

    def _ask(ctx: RunContext, node: str, msgs: list[dict[str, str]], schema: type[BaseModel]
             ) -> BaseModel | None:  # fmt: skip
        """One sub-agent LLM call; a failure is an event and leaves the round to the data."""
        assert ctx.llm is not None
        try:
            reply = ctx.llm.complete(msgs, schema=schema)
        except (LLMError, BudgetExceeded) as err:
            ctx.tracer.event(f"cbo_{node}_llm", error=f"{type(err).__name__}: {err}")
            return None
        assert isinstance(reply.parsed, schema)
        return reply.parsed

    def calibration(state: AgentCBOState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        ctx = runtime.context
        st = Structure.model_validate(state["structure"])
        g = to_graph(st.nodes, [(e[0], e[1]) for e in state["committed"]])
        session = get_session(state, ctx)
        scorer = _scorer(session)
        live["scorer"] = scorer
        edits = candidate_edits(g, st.uncertain, target)
        beliefs = [EdgeBelief.model_validate(b) for b in state.get("beliefs", [])]
        out: dict[str, Any] = {}
        if _llm_due(state, ctx):
            msgs = subagents.calibration_messages(
                task.variables, target, list(g.edges), st.backbone, st.uncertain, beliefs,
                _evidence(session),
            )  # fmt: skip
            reply = _ask(ctx, "calibration", msgs, subagents.Calibration)
            if isinstance(reply, subagents.Calibration):
                beliefs, notes = subagents.merge_calibration(
                    beliefs, reply.revised, st.uncertain, st.nodes
                )
                ctx.tracer.event("cbo_calibration", round=state.get("round", 0), changes=notes)
                out["beliefs"] = [b.model_dump() for b in beliefs]
        data = {e.label(): scorer.delta(g, e) for e in edits}
        deltas = {e.label(): data[e.label()] + config.prior_weight * belief_log_odds(e, g, beliefs)
                  for e in edits}  # fmt: skip
        return {**out, "deltas": deltas, "data_deltas": data}

    def residual_repair(state: AgentCBOState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        ctx = runtime.context
        st = Structure.model_validate(state["structure"])
        g = to_graph(st.nodes, [(e[0], e[1]) for e in state["committed"]])
        rnd = state.get("round", 0)
        k = config.max_edits_per_round
        tried = dict(state.get("llm_tried", {}))
        chosen: list[Edit] = []
        for op, edge, _conf in st.proposals:  # the LLM's residual claims come first
            if len(chosen) >= k:
                break
            e = Edit(op=op, edge=tuple(edge), source="llm")  # type: ignore[arg-type]
            applicable = (op == "add" and not g.has_edge(*edge)) or (
                op != "add" and g.has_edge(*edge)
            )
            last = tried.get(e.label())
            if applicable and (last is None or rnd - last >= config.llm_recheck_every):
                chosen.append(e)
                tried[e.label()] = rnd
        deltas = state.get("deltas", {})
        candidates = candidate_edits(g, st.uncertain, target)
        decisions = list(state.get("decisions", []))
        if k > len(chosen) and _llm_due(state, ctx):
            data = state.get("data_deltas", {})
            shown = sorted(candidates, key=lambda e: -data.get(e.label(), 0.0))
            msgs = subagents.repair_messages(
                task.variables, target, list(g.edges), st.backbone,
                _evidence(get_session(state, ctx)),
                shown[: config.repair_candidates_shown], data, k - len(chosen),
            )  # fmt: skip
            plan = _ask(ctx, "repair", msgs, subagents.RepairPlan)
            if isinstance(plan, subagents.RepairPlan):
                picked, dropped = subagents.plan_edits(plan, candidates, k - len(chosen))
                have = {c.label() for c in chosen}
                chosen += [e for e in picked if e.label() not in have]
                for why in dropped:  # rejected before the gate: recorded all the same
                    label, reason = why.split(": ", 1)
                    dec = GateDecision(
                        round=rnd, edit=label, source="llm", accepted=False,
                        routing_relevant=False, score_delta=0.0, reasons=[reason],
                        sets_before=[], sets_after=[],
                    )  # fmt: skip
                    ctx.tracer.event("cbo_edit", **dec.model_dump())
                    decisions.append(dec.model_dump())
                ctx.tracer.event("cbo_repair", round=rnd, picked=[e.label() for e in picked],
                                 dropped=dropped)  # fmt: skip
        labels = {c.label() for c in chosen}
        data_edits = [
            e for e in candidates
            if deltas.get(e.label(), -np.inf) >= config.score_margin and e.label() not in labels
        ]  # fmt: skip
        data_edits.sort(key=lambda e: -deltas[e.label()])
        chosen += data_edits[: max(0, k - len(chosen))]
        return {"pending": [c.model_dump() for c in chosen], "llm_tried": tried,
                "decisions": decisions}  # fmt: skip

    def commit_gate(state: AgentCBOState, runtime: Runtime[RunContext]) -> dict[str, Any]:
        ctx = runtime.context
        session = get_session(state, ctx)
        if "scorer" not in live:  # resumed between calibration and here
            live["scorer"] = _scorer(session)
        scorer: InterventionalBIC = live["scorer"]
        beliefs = [EdgeBelief.model_validate(b) for b in state.get("beliefs", [])]
        st = Structure.model_validate(state["structure"])
        g = to_graph(st.nodes, [(e[0], e[1]) for e in state["committed"]])
        gate = CommitGate(
            manipulable=manipulable, target=target, observed=list(session.obs),
            backbone=st.backbone, protected_adjacent=st.protected_adjacent,
            max_set_size=config.max_set_size, margin=config.score_margin,
            prior_tolerance=config.prior_tolerance, prior_for=session.prior_for,
            observed_outcomes=session.observed_outcomes,
            incumbent_set=lambda: session.incumbent_set, scm_for_sets=scm,
        )  # fmt: skip
        decisions = list(state.get("decisions", []))
        changed = False
        for raw in state.get("pending", []):
            edit = Edit.model_validate(raw)
            valid = (edit.op == "add" and not g.has_edge(*edit.edge)) or (
                edit.op != "add" and g.has_edge(*edit.edge)
            )
            if not valid:  # an earlier edit this round already changed this pair
                continue
            cand = edit.apply(g)
            delta = (
                scorer.delta(g, edit) + config.prior_weight * belief_log_odds(edit, g, beliefs)
                if nx.is_directed_acyclic_graph(cand)
                else -np.inf
            )
            dec = gate.check(g, edit, delta, state.get("round", 0))
            ctx.tracer.event("cbo_edit", **dec.model_dump())
            decisions.append(dec.model_dump())
            if dec.accepted:
                g = cand
                changed = changed or dec.routing_relevant
        if changed:
            session.set_graph(g)
        return {"committed": [list(e) for e in g.edges], "decisions": decisions, "pending": [],
                "session_graph": _session_graph(session)}  # fmt: skip

    def after_step(state: AgentCBOState) -> str:
        return END if state.get("done") else "calibration"

    builder = StateGraph(AgentCBOState, context_schema=RunContext)
    builder.add_node("language_prior", language_prior)
    builder.add_node("discovery", discovery)
    builder.add_node("cbo_step", cbo_step)
    builder.add_node("calibration", calibration)
    builder.add_node("residual_repair", residual_repair)
    builder.add_node("commit_gate", commit_gate)
    builder.add_edge(START, "language_prior")
    builder.add_edge("language_prior", "discovery")
    # Round 0 gates the language prior's proposals on observational data alone, so a
    # good prior shapes the very first interventions.
    builder.add_edge("discovery", "calibration")
    builder.add_conditional_edges("cbo_step", after_step, ["calibration", END])
    builder.add_edge("calibration", "residual_repair")
    builder.add_edge("residual_repair", "commit_gate")
    builder.add_edge("commit_gate", "cbo_step")
    return builder.compile(checkpointer=checkpointer), live


# ------------------------------------------------------------------ solve and baselines


def _outcome(trace: CBOTrace, stop: str, wall: float, extra: dict[str, Any]) -> AgentOutcome:
    best: list[float | None] = [t.best_true for t in trace.trials]
    return AgentOutcome(
        best_candidate=trace.model_dump(), claimed_value=best[-1] if best else None,
        trace=best, n_evaluations=len(trace.trials), stop_reason=stop,
        extra={
            "cumulative_cost": [t.cumulative_cost for t in trace.trials],
            "exploration_sets": trace.exploration_sets, "wall_s": round(wall, 3), **extra,
        },
    )  # fmt: skip


def run_agent(
    task: Any,
    ctx: RunContext,
    config: AgentCBOConfig,
    n_trials: int | None = None,
    *,
    durable: bool = False,
    resume: bool = False,
) -> AgentOutcome:
    """Run the agent graph on a CBO task (LLM beliefs when ``ctx.llm`` is set).

    durable: checkpoint every node to ``ctx.run_dir / CHECKPOINTS`` (needs ``run_dir``);
    resume: continue the checkpointed run there instead of refusing to overwrite it.
    """
    if not hasattr(task, "scm") or not hasattr(task, "domains"):
        raise InvalidTask(f"agent-cbo needs a cbo-suite task, got {type(task).__name__}")
    if (durable or resume) and ctx.run_dir is None:
        raise ConfigError("agent-cbo: checkpointing and resume need a run directory")
    t0 = time.perf_counter()
    budget_trials = n_trials or task.n_trials
    built: dict[str, Any] = {}  # the graph's live handles (its nodes write the session there)

    def build(checkpointer: Any | None) -> Any:
        graph, built["live"] = build_graph(task, config, n_trials, checkpointer)
        return graph

    run = run_graph(
        build, ctx, start={}, thread_id=THREAD_ID, resume=resume, durable=durable or resume,
        recursion_limit=8 * budget_trials + 20, what="an agent-cbo run", checkpoints=CHECKPOINTS,
    )  # fmt: skip
    final, live = run.state, built["live"]
    if run.already_done:  # nothing ran: rebuild the session from the final state
        state = cast(AgentCBOState, final)  # run_graph returns the graph's state as a plain dict
        live["session"] = restore_session(task, config, n_trials, ctx.seed, state)
    session: CBOSession = live["session"]
    if not session.trace.trials:
        raise InvalidTask("agent-cbo ran no intervention")
    decisions = final.get("decisions", [])
    return _outcome(
        session.trace, final.get("stop_reason", ""), time.perf_counter() - t0,
        {
            "proposer": "llm" if ctx.llm is not None else "discovery-only",
            "edits": decisions,
            "n_accepted": sum(d["accepted"] for d in decisions),
            "n_rejected": sum(not d["accepted"] for d in decisions),
            "beliefs": final.get("beliefs", []), "pc": final.get("pc", {}),
            "backbone": final["structure"]["backbone"], "final_graph": final["committed"],
            "llm_error": final.get("llm_error"),
        },
    )  # fmt: skip


def solve(task: Any, ctx: RunContext, config: BaseModel, budget: int | None,
          resume: bool) -> AgentOutcome:  # fmt: skip
    """``AgentSpec.solve``: ``budget`` is the number of interventions (cost budget: the task's).

    With ``ctx.run_dir`` set every node is checkpointed; ``resume`` continues from there.
    """
    assert isinstance(config, AgentCBOConfig)
    if resume and ctx.run_dir is None:
        raise ConfigError("agent-cbo: resume needs a run directory")
    return run_agent(task, ctx, config, budget, durable=ctx.run_dir is not None, resume=resume)


def known_graph_baseline(
    task: Any, ctx: RunContext, budget: int | None, config: Any = None
) -> AgentOutcome:
    """CBO with the task's true exploration sets and graph (the paper's upper reference)."""
    t0 = time.perf_counter()
    d = config if isinstance(config, AgentCBOConfig) else AgentCBOConfig()
    cfg = CBOConfig(n_trials=budget or task.n_trials, budget_cost=task.budget_cost,
                    stuck_patience=d.stuck_patience, stuck_margin=d.stuck_margin)  # fmt: skip
    tr = run_cbo(task.scm, exploration_sets=task.exploration_sets, config=cfg, seed=ctx.seed)
    return _outcome(tr, "baseline", time.perf_counter() - t0, {"proposer": "known-graph"})


def plain_bo_baseline(
    task: Any, ctx: RunContext, budget: int | None, config: Any = None
) -> AgentOutcome:
    """One GP over all manipulable variables, no causal knowledge."""
    t0 = time.perf_counter()
    cfg = CBOConfig(n_trials=budget or task.n_trials, budget_cost=task.budget_cost)
    tr = run_bo(task.scm, config=cfg, seed=ctx.seed)
    return _outcome(tr, "baseline", time.perf_counter() - t0, {"proposer": "plain-bo"})


def discovery_only_baseline(
    task: Any, ctx: RunContext, budget: int | None, config: Any = None
) -> AgentOutcome:
    """The agent without LLM beliefs (PC priors only): what the language prior is measured against."""
    from dataclasses import replace

    cfg = config if isinstance(config, AgentCBOConfig) else AgentCBOConfig()
    return run_agent(task, replace(ctx, llm=None), cfg, budget)


SPEC = AgentSpec(
    name="agent-cbo",
    description="Causal BO with LLM + PC structure priors, score-gated local repair and a "
    "routing-equivalence commit gate",
    config_model=AgentCBOConfig,
    solve=solve,
    default_benchmark="cbo",
    baselines={
        "known-graph-cbo": known_graph_baseline,
        "plain-bo": plain_bo_baseline,
        "discovery-only": discovery_only_baseline,
    },
    default_budget=30,
    offline_equivalent="discovery-only",
)

__all__ = [
    "SPEC",
    "AgentCBOConfig",
    "CommitGate",
    "EdgeBelief",
    "EdgeBeliefs",
    "GateDecision",
    "PCResult",
    "build_graph",
    "routing_equivalent",
    "run_agent",
]
