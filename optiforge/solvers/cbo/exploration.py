"""Exploration sets from a causal graph: minimal intervention sets and POMISs.

Pure functions of (graph, manipulable variables, target[, latent]) so that any candidate
DAG can be compared by the sets it induces (Lee & Bareinboim, NeurIPS 2018,
"Structural Causal Bandits: Where to Intervene?").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import combinations

import networkx as nx

from optiforge.errors import InvalidTask

ExplorationSet = tuple[str, ...]
Bidirected = frozenset[frozenset[str]]


def _check(graph: nx.DiGraph, manipulable: Iterable[str], target: str) -> list[str]:
    if not nx.is_directed_acyclic_graph(graph):
        raise InvalidTask("exploration sets need a DAG")
    if target not in graph:
        raise InvalidTask(f"target {target!r} is not in the graph")
    man = list(manipulable)
    for v in man:
        if v not in graph or v == target:
            raise InvalidTask(f"manipulable variable {v!r} is not a non-target graph node")
    return man


def _order(graph: nx.DiGraph, sets: Iterable[frozenset[str]]) -> list[ExplorationSet]:
    rank = {v: i for i, v in enumerate(nx.lexicographical_topological_sort(graph))}
    tup = [tuple(sorted(s, key=rank.__getitem__)) for s in sets]
    return sorted(set(tup), key=lambda t: (len(t), [rank[v] for v in t]))


def minimal_intervention_sets(
    graph: nx.DiGraph,
    manipulable: Iterable[str],
    target: str,
    *,
    max_size: int | None = None,
    include_empty: bool = False,
) -> list[ExplorationSet]:
    """All MISs: sets ``X`` with ``X`` inside ``An(Y)`` of ``G`` with edges into ``X`` cut.

    Lee & Bareinboim 2018, Prop. 1: ``X`` is minimal (no proper subset gives the same
    ``E[Y|do(X)]`` in every compatible SCM) iff every member stays an ancestor of ``Y``
    once all edges into ``X`` are removed. The graph's latent nodes play no role here.
    Sorted by size, then topological order.
    """
    man = _check(graph, manipulable, target)
    cand = [v for v in man if v in nx.ancestors(graph, target)]
    limit = len(cand) if max_size is None else min(max_size, len(cand))
    found: list[frozenset[str]] = [frozenset()] if include_empty else []
    for k in range(1, limit + 1):
        for xs in combinations(cand, k):
            cut = graph.copy()
            cut.remove_edges_from([(u, v) for v in xs for u in graph.predecessors(v)])
            anc = nx.ancestors(cut, target)
            if all(v in anc for v in xs):
                found.append(frozenset(xs))
    return _order(graph, found)


def latent_projection(graph: nx.DiGraph, latent: Iterable[str]) -> tuple[nx.DiGraph, Bidirected]:
    """Verma's latent projection onto the non-latent nodes: directed DAG + bidirected edges.

    ``a -> b`` iff a directed path from ``a`` to ``b`` has only latent interior nodes;
    ``a <-> b`` iff some latent node reaches both through latent-only directed paths.
    """
    lat = set(latent)
    obs = [v for v in graph if v not in lat]

    def obs_reach(start: str) -> set[str]:
        """Observed nodes reached from ``start`` through latent interior nodes only."""
        seen: set[str] = set()
        hit: set[str] = set()
        stack = list(graph.successors(start))
        while stack:
            u = stack.pop()
            if u in seen:
                continue
            seen.add(u)
            if u in lat:
                stack.extend(graph.successors(u))
            else:
                hit.add(u)
        return hit

    directed = nx.DiGraph()
    directed.add_nodes_from(obs)
    for a in obs:
        directed.add_edges_from((a, b) for b in obs_reach(a))
    bidir: set[frozenset[str]] = set()
    for u in lat:
        for a, b in combinations(sorted(obs_reach(u)), 2):
            bidir.add(frozenset((a, b)))
    return directed, frozenset(bidir)


class _Diagram:
    """A semi-Markovian causal diagram: DAG plus bidirected (confounding) edges."""

    def __init__(self, dag: nx.DiGraph, bidir: Bidirected) -> None:
        self.dag = dag
        self.bidir = frozenset(e for e in bidir if e <= set(dag.nodes))

    def do(self, xs: Iterable[str]) -> _Diagram:
        """Remove every edge (directed or bidirected) into ``xs``."""
        xs = set(xs)
        dag = self.dag.copy()
        dag.remove_edges_from([(u, v) for v in xs for u in self.dag.predecessors(v)])
        return _Diagram(dag, frozenset(e for e in self.bidir if not (e & xs)))

    def sub(self, nodes: Iterable[str]) -> _Diagram:
        return _Diagram(self.dag.subgraph(set(nodes)).copy(), self.bidir)

    def an(self, ys: Iterable[str]) -> set[str]:
        out = set(ys)
        for y in list(out):
            out |= nx.ancestors(self.dag, y)
        return out

    def de(self, xs: Iterable[str]) -> set[str]:
        out = set(xs)
        for x in list(out):
            out |= nx.descendants(self.dag, x)
        return out

    def c_component(self, v: str) -> set[str]:
        ug = nx.Graph()
        ug.add_nodes_from(self.dag.nodes)
        ug.add_edges_from(tuple(e) for e in self.bidir)
        return set(nx.node_connected_component(ug, v))

    def pa(self, xs: Iterable[str]) -> set[str]:
        out: set[str] = set()
        for x in xs:
            out |= set(self.dag.predecessors(x))
        return out


def _muct(g: _Diagram, y: str) -> set[str]:
    """Minimal unobserved-confounders' territory: closure of {Y} under c-components and
    descendants inside ``G[An(Y)]``."""
    h = g.sub(g.an([y]))
    ts = {y}
    queue = [y]
    while queue:
        v = queue.pop()
        grow = h.de(h.c_component(v)) - ts
        ts |= grow
        queue.extend(grow)
    return ts


def _ib(g: _Diagram, ts: set[str]) -> set[str]:
    """Interventional border: parents of the territory outside it."""
    return g.pa(ts) - ts


def pomis(
    graph: nx.DiGraph,
    target: str,
    manipulable: Iterable[str] | None = None,
    *,
    latent: Iterable[str] = (),
    include_empty: bool = False,
) -> list[ExplorationSet]:
    """Possibly-optimal minimal intervention sets (Lee & Bareinboim 2018, Alg. 1).

    Latent nodes become bidirected edges by latent projection. Observed variables that are
    not ``manipulable`` are projected out as well (marginalised), so every returned set is
    manipulable; this is exact when all non-target observed variables are manipulable (the
    paper's setting) and otherwise returns POMISs of the projected diagram (our choice,
    a conservative reading of the non-manipulable case of Lee & Bareinboim 2019).
    Without confounding this is ``{pa(Y)}``.
    """
    lat = set(latent)
    man = (
        [v for v in graph if v != target and v not in lat]
        if manipulable is None
        else _check(graph, manipulable, target)
    )
    if target in lat:
        raise InvalidTask("the target cannot be latent")
    hidden = {v for v in graph if v not in set(man) and v != target}
    dag, bidir = latent_projection(graph, hidden)
    g = _Diagram(dag, bidir)
    g = g.sub(g.an([target]))
    ts = _muct(g, target)
    xs = _ib(g, ts)
    h = g.do(xs).sub(ts | xs)
    order = [v for v in reversed(list(nx.topological_sort(h.dag))) if v in ts and v != target]
    found = {frozenset(xs)} | _sub_pomis(h, target, order, set())
    if not include_empty:
        found.discard(frozenset())
    return _order(graph, found)


def _sub_pomis(g: _Diagram, y: str, ws: Sequence[str], obs: set[str]) -> set[frozenset[str]]:
    out: set[frozenset[str]] = set()
    for i, w in enumerate(ws):
        gw = g.do([w])
        ts = _muct(gw, y)
        xs = _ib(gw, ts)
        new_obs = obs | set(ws[:i])
        new_ws = [v for v in ws[i + 1 :] if v in ts]
        if not (xs & new_obs):
            out.add(frozenset(xs))
            if new_ws:
                out |= _sub_pomis(g.do(xs).sub(ts | xs), y, new_ws, new_obs)
    return out
