"""Routing equivalence, backbone construction, the interventional score and the commit gate."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from sklearn.linear_model import LinearRegression

from optiforge.agents.agent_cbo.gate import CommitGate, routing_equivalent
from optiforge.agents.agent_cbo.structure import (
    EdgeBelief,
    Edit,
    InterventionalBIC,
    PCResult,
    build_structure,
    candidate_edits,
    run_pc,
    to_graph,
)
from optiforge.evals.suites.cbo.scms import build
from optiforge.solvers.cbo import DoPrior


def _g(edges: list[tuple[str, str]], nodes: tuple[str, ...] = ()) -> nx.DiGraph:
    g = nx.DiGraph(edges)
    g.add_nodes_from(nodes)
    return g


# ------------------------------------------------------------------ routing equivalence


def test_routing_irrelevant_edge_keeps_signature() -> None:
    # ToyGraph X -> Z -> Y plus a non-manipulable W feeding X only: no new set, no new
    # back-door path into Y, so the optimizer cannot tell the two graphs apart.
    base = _g([("X", "Z"), ("Z", "Y")], ("W",))
    plus = _g([("X", "Z"), ("Z", "Y"), ("W", "X")])
    assert routing_equivalent(base, plus, ["X", "Z"], "Y", ["W", "X", "Z", "Y"])


def test_new_parent_of_target_changes_signature() -> None:
    base = _g([("W", "X"), ("X", "Z"), ("Z", "Y")])
    # W -> Y opens the back-door path X <- W -> Y: the do-prior of {X} must adjust for W.
    plus = _g([("W", "X"), ("X", "Z"), ("Z", "Y"), ("W", "Y")])
    assert not routing_equivalent(base, plus, ["X", "Z"], "Y", ["W", "X", "Z", "Y"])
    # A manipulable new parent of Y adds exploration sets.
    more = _g([("X", "Z"), ("Z", "Y"), ("M", "Y")])
    assert not routing_equivalent(
        _g([("X", "Z"), ("Z", "Y")], ("M",)), more, ["X", "Z", "M"], "Y", ["X", "Z", "M", "Y"]
    )


def test_reversal_that_drops_a_set_is_routing_relevant_on_reference_graph() -> None:
    spec = build("graph4nodes")
    scm = spec.scm
    obs = scm.observed
    truth = scm.graph
    rev = truth.copy()
    rev.remove_edge("X", "Z")
    rev.add_edge("Z", "X")
    assert routing_equivalent(truth, truth.copy(), scm.manipulable, "Y", obs)
    assert not routing_equivalent(truth, rev, scm.manipulable, "Y", obs)


# ------------------------------------------------------------------ PC and backbone


def test_pc_recovers_linear_collider_and_target_is_sink() -> None:
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=500), rng.normal(size=500)
    c = a + b + rng.normal(size=500)
    y = c + rng.normal(size=500)
    res = run_pc({"A": a, "B": b, "C": c, "Y": y}, "Y")
    assert set(res.directed) == {("A", "C"), ("B", "C"), ("C", "Y")}
    assert res.undirected == []


def test_backbone_is_agreement_and_llm_claims_become_proposals() -> None:
    pc_res = PCResult(directed=[("X", "Y")], undirected=[("X", "Z")])
    beliefs = [
        EdgeBelief(cause="X", effect="Z", confidence=0.9),  # orients the undirected PC edge
        EdgeBelief(cause="Z", effect="Y", confidence=0.9),  # PC missed it: a proposal
        EdgeBelief(cause="X", effect="Y", present=False, confidence=0.8),  # contradicts PC
        EdgeBelief(cause="Z", effect="X", confidence=0.2),  # too unsure: ignored
    ]
    st = build_structure(["X", "Z", "Y"], "Y", ["X", "Z"], pc_res, beliefs)
    # Only an adjacency PC found and the LLM oriented: protected as an adjacency, the
    # orientation stays editable; nothing is fully protected without PC orienting it.
    assert st.backbone == [] and st.protected_adjacent == [("X", "Z")]
    assert ("add", ("Z", "Y"), 0.9) in st.proposals
    assert ("remove", ("X", "Y"), 0.8) in st.proposals
    assert set(st.initial) == {("X", "Z"), ("X", "Y")}
    assert ("Z", "Y") in st.uncertain
    full = build_structure(["X", "Z", "Y"], "Y", ["X", "Z"], pc_res,
                           [EdgeBelief(cause="X", effect="Y", confidence=0.9)])  # fmt: skip
    assert full.backbone == [("X", "Y")] and ("X", "Y") not in full.uncertain


def test_undirected_edges_oriented_to_keep_most_sets() -> None:
    # X - Z undirected, Z -> Y: X -> Z keeps {X} (and {Z}); Z -> X would drop {X}.
    st = build_structure(
        ["X", "Z", "Y"], "Y", ["X", "Z"],
        PCResult(directed=[("Z", "Y")], undirected=[("X", "Z")]), [],
    )  # fmt: skip
    assert set(st.initial) == {("X", "Z"), ("Z", "Y")}
    assert st.backbone == []


# ------------------------------------------------------------------ score


def test_local_score_matches_independent_least_squares() -> None:
    rng = np.random.default_rng(1)
    n = 300
    x = rng.normal(size=n)
    y = np.sin(x) + 0.2 * rng.normal(size=n)
    flags = np.zeros(n, dtype=bool)
    flags[:50] = True  # the first 50 rows had y set by do(): excluded from y's family
    bic = InterventionalBIC({"X": x, "Y": y}, {"X": np.zeros(n, bool), "Y": flags})
    # Second method: scikit-learn on the same standardised cubic features.
    zx, zy = (x - x.mean()) / x.std(), (y - y.mean()) / y.std()
    f = np.stack([zx, zx**2 / 2, zx**3 / 6], axis=1)[~flags]
    lr = LinearRegression().fit(f, zy[~flags])
    var = np.mean((zy[~flags] - lr.predict(f)) ** 2)
    m = int((~flags).sum())
    expected = -0.5 * m * (np.log(2 * np.pi * var) + 1) - 0.5 * 5 * np.log(m)
    assert bic.local("Y", ["X"]) == pytest.approx(expected, rel=1e-6)
    g = to_graph(["X", "Y"], [])
    assert bic.delta(g, Edit(op="add", edge=("X", "Y"))) > 50  # a real edge is found


def test_rank_basis_is_not_fooled_by_an_outlying_parent() -> None:
    """Z = exp(-X) + e, Y = cos Z + e, with do(X = -4.6) rows (Z ~ 100): with a cubic in
    standardised Z the misfit of Y's mechanism makes the spurious X -> Y look like a gain;
    a spline in the ranks of Z fits cos Z and does not."""
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(size=300), np.full(100, -4.6), np.full(100, 2.0)])
    z = np.exp(-x) + 0.3 * rng.normal(size=x.size)
    y = np.cos(z) + 0.3 * rng.normal(size=x.size)
    flags = {
        "X": np.arange(x.size) >= 300,
        "Z": np.zeros(x.size, bool),
        "Y": np.zeros(x.size, bool),
    }
    cols = {"X": x, "Z": z, "Y": y}
    g = to_graph(["X", "Z", "Y"], [("X", "Z"), ("Z", "Y")])
    spurious = Edit(op="add", edge=("X", "Y"))
    assert InterventionalBIC(cols, flags, basis="cubic").delta(g, spurious) > 6
    rank = InterventionalBIC(cols, flags, basis="rank", n_knots=8)
    assert rank.delta(g, spurious) < 0
    assert rank.delta(to_graph(["X", "Z", "Y"], [("X", "Z")]), Edit(op="add", edge=("Z", "Y"))) > 50


def test_candidate_edits_never_leave_the_target() -> None:
    g = to_graph(["X", "Z", "Y"], [("X", "Y")])
    edits = candidate_edits(g, [("X", "Z"), ("X", "Y"), ("Z", "Y")], "Y")
    labels = {e.label() for e in edits}
    assert "add Y->Z" not in labels and "reverse X->Y" not in labels
    assert {"add Z->Y", "remove X->Y", "add X->Z", "add Z->X"} <= labels


# ------------------------------------------------------------------ commit gate


class _ToyScm:
    manipulable = ["X", "Z"]
    target = "Y"


def _gate(incumbent: tuple[str, ...] | None, outcomes: dict | None = None,
          priors: dict | None = None) -> CommitGate:  # fmt: skip
    def prior_for(g: nx.DiGraph, s: tuple[str, ...]) -> DoPrior:
        return priors[(frozenset(g.edges), s)] if priors else DoPrior(s, 0.0, 1.0)

    def observed(s: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        return (outcomes or {}).get(s, (np.zeros((0, len(s))), np.zeros(0)))

    return CommitGate(
        manipulable=["X", "Z"], target="Y", observed=["X", "Z", "Y"], backbone=[("X", "Z")],
        max_set_size=2, margin=5.0, prior_tolerance=0.25, prior_for=prior_for,
        observed_outcomes=observed, incumbent_set=lambda: incumbent, scm_for_sets=_ToyScm(),
    )  # fmt: skip


def test_gate_hard_rules_and_margin() -> None:
    g = to_graph(["X", "Z", "Y"], [("X", "Z"), ("Z", "Y")])
    gate = _gate(("Z",))
    cyc = gate.check(g, Edit(op="add", edge=("Z", "X")), 100.0, 1)
    assert not cyc.accepted and "creates a cycle" in cyc.reasons
    out = gate.check(g, Edit(op="add", edge=("Y", "X")), 100.0, 1)
    assert not out.accepted and "adds an edge out of the target" in out.reasons
    bb = gate.check(g, Edit(op="reverse", edge=("X", "Z")), 100.0, 1)
    assert not bb.accepted and any("backbone" in r for r in bb.reasons)
    small = gate.check(g, Edit(op="add", edge=("X", "Y")), 1.0, 1)
    assert not small.accepted and any("below margin" in r for r in small.reasons)


def test_gate_rejects_edit_that_drops_the_incumbent_set() -> None:
    g = to_graph(["X", "Z", "Y"], [("X", "Z"), ("Z", "Y")])
    dec = _gate(("Z",)).check(g, Edit(op="remove", edge=("Z", "Y"), source="llm"), 50.0, 3)
    assert not dec.accepted and dec.routing_relevant
    assert any("holding the incumbent" in r for r in dec.reasons)
    assert dec.sets_before == [["X"], ["Z"]]


def test_gate_records_routing_irrelevant_accepts() -> None:
    g = to_graph(["W", "X", "Z", "Y"], [("X", "Z"), ("Z", "Y")])
    gate = _gate(("Z",))
    gate.observed = ["W", "X", "Z", "Y"]
    dec = gate.check(g, Edit(op="add", edge=("W", "X")), 20.0, 2)
    assert dec.accepted and not dec.routing_relevant
    assert "routing-irrelevant" in dec.reasons[0]


def test_gate_rejects_worse_do_prior_on_observed_interventions() -> None:
    class Const(DoPrior):
        def __init__(self, s: tuple[str, ...], m: float) -> None:
            super().__init__(s, m, 1.0)

    # W -> X opens the back-door X <- W -> Y: same sets, new do-prior for {X}.
    g = to_graph(["W", "X", "Z", "Y"], [("X", "Z"), ("Z", "Y"), ("W", "Y")])
    edit = Edit(op="add", edge=("W", "X"))
    cand = edit.apply(g)
    priors = {
        (frozenset(g.edges), ("X",)): Const(("X",), 0.0),
        (frozenset(cand.edges), ("X",)): Const(("X",), 3.0),  # far from the observed y = 0
        (frozenset(g.edges), ("Z",)): Const(("Z",), 0.0),
        (frozenset(cand.edges), ("Z",)): Const(("Z",), 0.0),
    }
    outcomes = {("X",): (np.array([[0.5], [1.0]]), np.array([0.1, -0.1]))}
    gate = _gate(("Z",), outcomes, priors)
    gate.observed = ["W", "X", "Z", "Y"]
    dec = gate.check(g, edit, 50.0, 4)
    assert dec.routing_relevant and dec.sets_after == dec.sets_before
    assert not dec.accepted and any("do-prior of ['X'] worse" in r for r in dec.reasons)
    # The same prior change passes when the candidate's prior fits the data as well.
    priors[(frozenset(cand.edges), ("X",))] = Const(("X",), 0.0)
    assert gate.check(g, edit, 50.0, 4).accepted
