"""MIS / POMIS on reference graphs, against brute force and published examples."""

from __future__ import annotations

from itertools import chain, combinations

import networkx as nx
import numpy as np
import pytest

from optiforge.solvers.cbo import latent_projection, minimal_intervention_sets, pomis
from optiforge.solvers.cbo.exploration import _Diagram, _ib, _muct

TOY = nx.DiGraph([("X", "Z"), ("Z", "Y")])
COMPLETE = nx.DiGraph(
    [("U1", "A"), ("U1", "Y"), ("U2", "B"), ("U2", "Y"), ("F", "A"), ("B", "C"), ("C", "D"),
     ("A", "E"), ("C", "E"), ("D", "Y"), ("E", "Y")]
)  # fmt: skip


def test_toy_graph_reference_sets() -> None:
    assert minimal_intervention_sets(TOY, ["X", "Z"], "Y") == [("X",), ("Z",)]
    assert pomis(TOY, "Y", ["X", "Z"]) == [("Z",)]


def test_complete_graph_mis() -> None:
    got = minimal_intervention_sets(COMPLETE, ["B", "D", "E"], "Y")
    # {B, D, E} is not minimal: with all three fixed, B no longer reaches Y.
    assert set(got) == {("B",), ("D",), ("E",), ("B", "D"), ("B", "E"), ("D", "E")}


def test_non_mis_set_gives_identical_outcomes_per_unit() -> None:
    """Semantic check of minimality with the CompleteGraph SCM and common random numbers."""
    from optiforge.evals.suites.cbo.scms import complete_graph

    scm = complete_graph().scm
    full = scm.do({"B": 1.0, "D": 0.5, "E": -1.0}, 2000, np.random.default_rng(5))["Y"]
    part = scm.do({"D": 0.5, "E": -1.0}, 2000, np.random.default_rng(5))["Y"]
    assert np.allclose(full, part)
    other = scm.do({"B": 1.0, "D": 0.5}, 2000, np.random.default_rng(5))["Y"]
    assert not np.allclose(other, part)


def test_latent_projection_complete_graph() -> None:
    dag, bidir = latent_projection(COMPLETE, ["U1", "U2"])
    assert frozenset(("A", "Y")) in bidir and frozenset(("B", "Y")) in bidir
    assert len(bidir) == 2 and set(dag.edges) == set(COMPLETE.subgraph(set(dag)).edges)


def test_pomis_published_examples() -> None:
    # Lee & Bareinboim (2018) XYZWST: X<->W via U0, Z<->Y via U1.
    g = nx.DiGraph(
        [("Z", "X"), ("X", "Y"), ("W", "Y"), ("S", "W"), ("T", "X"), ("T", "Y"),
         ("U0", "X"), ("U0", "W"), ("U1", "Z"), ("U1", "Y")]
    )  # fmt: skip
    assert set(pomis(g, "Y", latent=["U0", "U1"])) == {("S", "T"), ("T", "W"), ("T", "W", "X")}
    # Front-door-like X -> Z -> Y with X <-> Y: only {} and {Z} can be optimal.
    fd = nx.DiGraph([("U", "X"), ("U", "Y"), ("X", "Z"), ("Z", "Y")])
    assert pomis(fd, "Y", ["X", "Z"], latent=["U"], include_empty=True) == [(), ("Z",)]
    # Markovian: only the parents of Y.
    got = pomis(COMPLETE, "Y", ["A", "B", "C", "D", "E", "F", "U1", "U2"])
    assert len(got) == 1 and set(got[0]) == {"U1", "U2", "D", "E"}


def _brute_force_pomis(dag: nx.DiGraph, bidir: frozenset, y: str) -> set[frozenset]:
    """{IB(G_{do(W)}, Y) : W subset of V minus Y} (Lee & Bareinboim 2018, Thm. 5)."""
    g = _Diagram(dag, bidir)
    others = [v for v in dag if v != y]
    out = set()
    for ws in chain.from_iterable(combinations(others, k) for k in range(len(others) + 1)):
        gw = g.do(ws)
        out.add(frozenset(_ib(gw, _muct(gw, y))))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_pomis_matches_brute_force_on_random_semi_markovian(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 6
    names = [f"V{i}" for i in range(n)]
    g = nx.DiGraph()
    g.add_nodes_from(names)
    for i in range(n):
        for j in range(i + 1, n):
            if rng.random() < 0.4:
                g.add_edge(names[i], names[j])
    for k in range(2):  # two latent confounders
        a, b = rng.choice(n, size=2, replace=False)
        g.add_edge(f"L{k}", names[a])
        g.add_edge(f"L{k}", names[b])
    y = names[-1]
    dag, bidir = latent_projection(g, ["L0", "L1"])
    an = _Diagram(dag, bidir).an([y])
    want = _brute_force_pomis(dag.subgraph(an).copy(), bidir, y)
    got = {frozenset(s) for s in pomis(g, y, latent=["L0", "L1"], include_empty=True)}
    assert got == want
