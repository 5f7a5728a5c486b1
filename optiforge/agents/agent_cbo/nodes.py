"""agent-cbo's graph nodes (wired in ``agent.py``), in order::

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
  pairs and on the soft-protected backbone by the change of the structure score
  (``NeighbourScore``: leave-one-out nearest-neighbour likelihood on observational +
  interventional units, intervened mechanisms cut; a reversal or a backbone break counts
  only the rows where the edited pair was intervened on) plus the LLM beliefs' log-odds
  (a structure prior; zero offline). Every ``llm_every`` rounds the LLM first revises its
  beliefs on uncertain pairs against the interventional evidence (``proposers.Calibration``).
- ``residual_repair`` (the Residual Repair agent): picks at most ``max_edits_per_round``
  edits: the language prior's proposals first, then (every ``llm_every`` rounds) the
  candidate edits the LLM chooses (``proposers.RepairPlan``), then the best-scoring data
  edits above the margin. An LLM choice that is not a local edit of an uncertain pair is
  rejected here, with its reason, and never reaches the gate.
- ``commit_gate``: deterministic; accepts an edit only if it keeps the graph acyclic,
  keeps the backbone (unless a trial intervened on the edge's pair), gains the score
  margin, and, when it changes the optimizer's routing (exploration sets or do-priors),
  passes routing-proxy checks. Every decision is a tracer event and is returned in
  ``AgentOutcome.extra["edits"]``.

Every node reads the task, config and handles from ``runtime.context``
(``AgentContext[CausalBOTask, AgentCBOConfig]``) and holds no session of its own: it gets
the numerical session from the run's ``SessionCache`` (``sessions``, kept in
``ctx.memo``), which hands out a session only if it is the one the state describes
(``problem.py`` says why a cache).
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np
from langgraph.graph import END
from langgraph.runtime import Runtime

from optiforge.agents.agent_cbo import proposers
from optiforge.agents.agent_cbo.config import AgentCBOConfig
from optiforge.agents.agent_cbo.gate import CommitGate, GateDecision
from optiforge.agents.agent_cbo.problem import AgentCBOState, SessionCache, session_graph
from optiforge.agents.agent_cbo.structure import (
    EdgeBelief,
    EdgeBeliefs,
    Edit,
    InterventionalBIC,
    NeighbourScore,
    Structure,
    belief_log_odds,
    build_structure,
    candidate_edits,
    clean_beliefs,
    language_prior_messages,
    over_variables,
    run_pc,
    to_graph,
)
from optiforge.agents.kit.context import AgentContext
from optiforge.errors import BudgetExceeded, LLMError
from optiforge.evals.suites.cbo.protocol import CausalBOTask
from optiforge.solvers.cbo.session import CBOSession

Ctx = AgentContext[CausalBOTask, AgentCBOConfig]


def sessions(ctx: Ctx) -> SessionCache:
    """The run's numerical-session cache (one per run, rebuilt after a resume)."""
    return ctx.memo("sessions", lambda: SessionCache(ctx.task, ctx.config, ctx.eval_budget))


def edit_data_delta(
    scorer: InterventionalBIC | NeighbourScore,
    g: nx.DiGraph,
    edit: Edit,
    st: Structure,
    evidence: NeighbourScore | None = None,
) -> float:
    """The data score change of ``edit``.

    An edit that breaks the soft-protected backbone (``Structure.breaks_protection``) is
    judged by ``evidence`` (the nearest-neighbour score, whatever ``scorer`` is) on the
    rows where the edited pair was intervened on: the observational sample already spoke
    through PC. With the ``knn`` score a reversal is judged the same way (observational
    data cannot orient an edge, and that score is not score-equivalent: on CompleteGraph
    it reversed the true B -> C at +44 nats from observational rows). Else: ``scorer``'s
    change on all rows.
    """
    if st.breaks_protection(edit):
        judge = evidence if evidence is not None else scorer
        if isinstance(judge, NeighbourScore):
            return judge.delta(g, edit, interventional=True)
    if edit.op == "reverse" and isinstance(scorer, NeighbourScore):
        return scorer.delta(g, edit, interventional=True)
    return scorer.delta(g, edit)


def structure_edits(g: nx.DiGraph, st: Structure, target: str) -> list[Edit]:
    """Every local edit the agent may consider: uncertain pairs and the soft-protected
    backbone pairs (the gate asks the latter for interventional evidence)."""
    return candidate_edits(g, [*st.uncertain, *st.protected_pairs()], target)


def language_prior(state: AgentCBOState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """The LLM's beliefs about direct edges (none offline, or when the call fails)."""
    ctx = runtime.context
    task = ctx.task
    if ctx.llm is None:
        ctx.tracer.event("cbo_language_prior", n_beliefs=0, offline=True)
        return {"beliefs": []}
    msgs = language_prior_messages(task.variables, task.target, task.description)
    try:
        schema = over_variables(EdgeBeliefs, list(task.variables), "edges", EdgeBelief)
        reply = ctx.llm.complete(msgs, schema=schema)
    except (LLMError, BudgetExceeded) as err:
        # No beliefs is the discovery-only agent: a failed prior degrades, not crashes.
        ctx.tracer.event("cbo_language_prior", n_beliefs=0, error=str(err))
        return {"beliefs": [], "llm_error": f"{type(err).__name__}: {err}"}
    assert isinstance(reply.parsed, EdgeBeliefs)
    beliefs = clean_beliefs(reply.parsed.edges, task.variables)
    ctx.tracer.event("cbo_language_prior", n_beliefs=len(beliefs),
                     dropped=len(reply.parsed.edges) - len(beliefs))  # fmt: skip
    return {"beliefs": [b.model_dump() for b in beliefs]}


def discovery(state: AgentCBOState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """PC on a fresh observational sample, merged with the beliefs: the first graph."""
    ctx = runtime.context
    config, target = ctx.config, ctx.task.target
    session = sessions(ctx).new(ctx.seed)
    pc_res = run_pc(session.obs, target, alpha=config.pc_alpha, indep_test=config.pc_test)
    beliefs = [EdgeBelief.model_validate(b) for b in state.get("beliefs", [])]
    st = build_structure(
        list(session.obs), target, list(ctx.task.domains), pc_res, beliefs,
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
        "llm_tried": {}, "trials": [], "session_graph": session_graph(session),
    }  # fmt: skip


def cbo_step(state: AgentCBOState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """One intervention of causal BO on the session's graph (done when the budget is)."""
    ctx = runtime.context
    session = sessions(ctx).get(state, ctx)
    rec = None if session.done else session.step()
    if rec is None:
        return {"done": True, "stop_reason": "intervention budget spent"}
    ctx.tracer.event("cbo_trial", trial=rec.model_dump())
    if ctx.progress is not None:
        ctx.progress({"evaluations": rec.index + 1, "max_evaluations": session.config.n_trials,
                      "best": rec.best_true})  # fmt: skip
    out: dict[str, Any] = {"trials": [*state.get("trials", []), rec.model_dump()],
                           "trial_logs": [session.trial_log()],
                           "round": state.get("round", 0) + 1}  # fmt: skip
    if session.done:  # no structure round after the last intervention
        out.update(done=True, stop_reason="intervention budget spent")
    return out


def after_step(state: AgentCBOState) -> str:
    """Route after ``cbo_step``: the next structure round, or the end."""
    return END if state.get("done") else "calibration"


def llm_due(state: AgentCBOState, ctx: Ctx) -> bool:
    """Whether this round consults the LLM (every ``llm_every`` rounds, from round one on)."""
    rnd = state.get("round", 0)
    every = ctx.config.llm_every
    return ctx.llm is not None and every > 0 and rnd > 0 and (rnd % every == 0)


def evidence_of(session: CBOSession) -> list[proposers.SetEvidence]:
    """What the interventions so far showed, per intervened set (for the prompts)."""
    return proposers.intervention_evidence(
        session.obs, [(d.x, d.units) for d in session.interventions]
    )


def calibration(state: AgentCBOState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """Score every candidate edit (data score + prior log-odds); the LLM first revises its
    beliefs when due."""
    ctx = runtime.context
    task, config, cache = ctx.task, ctx.config, sessions(ctx)
    st = Structure.model_validate(state["structure"])
    g = to_graph(st.nodes, [(e[0], e[1]) for e in state["committed"]])
    session = cache.get(state, ctx)
    scorer = cache.scorer(session)
    edits = structure_edits(g, st, task.target)
    beliefs = [EdgeBelief.model_validate(b) for b in state.get("beliefs", [])]
    out: dict[str, Any] = {}
    if llm_due(state, ctx):
        msgs = proposers.calibration_messages(
            task.variables, task.target, list(g.edges), st.backbone, st.uncertain, beliefs,
            evidence_of(session),
        )  # fmt: skip
        schema = over_variables(proposers.Calibration, st.nodes, "revised", EdgeBelief)
        reply = proposers.ask(ctx, "calibration", msgs, schema)
        if isinstance(reply, proposers.Calibration):
            beliefs, notes = proposers.merge_calibration(
                beliefs, reply.revised, st.uncertain, st.nodes
            )
            ctx.tracer.event("cbo_calibration", round=state.get("round", 0), changes=notes)
            out["beliefs"] = [b.model_dump() for b in beliefs]
    evidence = cache.evidence(session)
    data = {e.label(): edit_data_delta(scorer, g, e, st, evidence) for e in edits}
    deltas = {e.label(): data[e.label()] + config.prior_weight * belief_log_odds(e, g, beliefs)
              for e in edits}  # fmt: skip
    return {**out, "deltas": deltas, "data_deltas": data}


def residual_repair(state: AgentCBOState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """Pick this round's edits for the gate: the prior's proposals, the LLM's choices when
    due, then the best data edits above the margin."""
    ctx = runtime.context
    task, config = ctx.task, ctx.config
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
        applicable = (op == "add" and not g.has_edge(*edge)) or (op != "add" and g.has_edge(*edge))
        last = tried.get(e.label())
        if applicable and (last is None or rnd - last >= config.llm_recheck_every):
            chosen.append(e)
            tried[e.label()] = rnd
    deltas = state.get("deltas", {})
    candidates = structure_edits(g, st, task.target)
    decisions = list(state.get("decisions", []))
    if k > len(chosen) and llm_due(state, ctx):
        data = state.get("data_deltas", {})
        shown = sorted(candidates, key=lambda e: -data.get(e.label(), 0.0))
        msgs = proposers.repair_messages(
            task.variables, task.target, list(g.edges), st.backbone,
            evidence_of(sessions(ctx).get(state, ctx)),
            shown[: config.repair_candidates_shown], data, k - len(chosen),
        )  # fmt: skip
        schema = over_variables(proposers.RepairPlan, st.nodes, "edits",
                                proposers.RepairChoice)  # fmt: skip
        plan = proposers.ask(ctx, "repair", msgs, schema)
        if isinstance(plan, proposers.RepairPlan):
            picked, dropped = proposers.plan_edits(plan, candidates, k - len(chosen))
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


def commit_gate(state: AgentCBOState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """Judge each pending edit (``CommitGate``); commit the accepted ones."""
    ctx = runtime.context
    task, config, cache = ctx.task, ctx.config, sessions(ctx)
    session = cache.get(state, ctx)
    scorer = cache.scorer(session)  # calibration's, unless resumed in between
    beliefs = [EdgeBelief.model_validate(b) for b in state.get("beliefs", [])]
    st = Structure.model_validate(state["structure"])
    g = to_graph(st.nodes, [(e[0], e[1]) for e in state["committed"]])
    gate = CommitGate(
        manipulable=list(task.domains), target=task.target, observed=list(session.obs),
        backbone=st.backbone, protected_adjacent=st.protected_adjacent,
        max_set_size=config.max_set_size, margin=config.score_margin,
        prior_tolerance=config.prior_tolerance, prior_for=session.prior_for,
        observed_outcomes=session.observed_outcomes,
        incumbent_set=lambda: session.incumbent_set, scm_for_sets=task.scm,
        intervened=lambda: {v for d in session.interventions for v in d.x},
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
            edit_data_delta(scorer, g, edit, st, cache.evidence(session))
            + config.prior_weight * belief_log_odds(edit, g, beliefs)
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
            "session_graph": session_graph(session)}  # fmt: skip
