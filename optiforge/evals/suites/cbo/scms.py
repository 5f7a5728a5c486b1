"""The CBO suite's structural causal models (equations from REFERENCE.md / the literature).

Each builder returns a ``BenchmarkSpec``: the SCM, plain-English variable descriptions
(what an LLM is given), the exploration sets and a one-paragraph description. Do-ranges
not fixed by the literature are our choice and marked "ours" in the spec's notes.

What an agent is told never states the graph: no variable description names another
variable or says what it responds to, and no task description draws edges (the graph is
what a causal agent has to find; ``tests/evals/test_task_leaks.py`` checks every task
against its true edges). Real-world variables keep their domain meaning ("patient age in
years"): that is the knowledge a language prior is meant to use. Where ``E[Y|do]`` of an
exploration set has a closed form, the spec carries it (``closed_forms``) and the ground
truth and the task's evaluator use it instead of Monte Carlo.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np
from scipy.optimize import minimize_scalar
from scipy.special import expit

from optiforge.errors import InvalidTask
from optiforge.solvers.cbo import (
    SCM,
    InterventionDomain,
    NoiseSpec,
    StructuralEquation,
    minimal_intervention_sets,
)

P = Mapping[str, np.ndarray]
ClosedForm = Callable[[Mapping[str, Any]], Any]
"""Exact ``E[Y | do(x)]``: intervention values (floats or arrays) -> value(s)."""
N01 = NoiseSpec()
NONE = NoiseSpec(kind="none")


def _u(low: float, high: float) -> NoiseSpec:
    return NoiseSpec(kind="uniform", low=low, high=high)


def _n(scale: float) -> NoiseSpec:
    return NoiseSpec(kind="normal", scale=scale)


def _eq(
    name: str,
    parents: tuple[str, ...],
    fn: Callable[[P, np.ndarray], np.ndarray],
    desc: str,
    noise: NoiseSpec = N01,
    observed: bool = True,
) -> StructuralEquation:
    return StructuralEquation(name, parents, fn, noise, desc, observed)


@dataclass
class BenchmarkSpec:
    """One SCM benchmark before ground truth is attached."""

    name: str
    scm: SCM
    exploration_sets: list[tuple[str, ...]]
    description: str
    notes: str = ""
    source: str = ""
    variables: dict[str, str] = field(default_factory=dict)
    truth_sets: list[tuple[str, ...]] | None = None
    """Sets the true optimum is taken over (default: ``exploration_sets``). It must cover
    every minimal intervention set, so that ``y*`` is the best of all interventions."""
    closed_forms: dict[frozenset[str], ClosedForm] = field(default_factory=dict)
    """Exact ``E[Y | do(S = x)]`` for the sets ``S`` that have one: ``x`` -> value, with
    ``x`` a mapping from each variable of ``S`` to a float or numpy array (broadcast)."""
    optimum_starts: list[dict[str, float]] = field(default_factory=list)
    """Extra starting points for minimising a closed form (known basins of attraction)."""

    def __post_init__(self) -> None:
        if self.truth_sets is None:
            self.truth_sets = list(self.exploration_sets)
        if not self.variables:
            self.variables = {
                v: self.scm.equations[v].description
                for v in self.scm.graph
                if self.scm.equations[v].observed
            }


def _dom(low: float, high: float, cost: float = 1.0) -> InterventionDomain:
    return InterventionDomain(low=low, high=high, cost=cost)


def _mis(scm: SCM, max_size: int | None = 2) -> list[tuple[str, ...]]:
    return minimal_intervention_sets(scm.graph, scm.manipulable, scm.target, max_size=max_size)


def toy_graph() -> BenchmarkSpec:
    """X -> Z -> Y (Aglietti et al. 2020)."""
    eqs = [
        _eq("X", (), lambda p, e: e, "a synthetic variable"),
        _eq("Z", ("X",), lambda p, e: np.exp(-p["X"]) + e, "a synthetic variable"),
        _eq(
            "Y",
            ("Z",),
            lambda p, e: np.cos(p["Z"]) - np.exp(-p["Z"] / 20) + e,
            "the outcome to minimise",
        ),
    ]
    scm = SCM(eqs, "Y", {"X": _dom(-5, 5), "Z": _dom(-5, 20)})

    def do_x(x: Mapping[str, Any]) -> Any:
        # Z = c + eps with c = exp(-x): E cos(c + eps) = e^{-1/2} cos c and
        # E exp(-(c + eps)/20) = exp(-c/20 + 1/800) for eps ~ N(0, 1).
        c = np.exp(-np.asarray(x["X"], dtype=float))
        return np.exp(-0.5) * np.cos(c) - np.exp(-c / 20 + 1 / 800)

    def do_z(x: Mapping[str, Any]) -> Any:
        z = np.asarray(x["Z"], dtype=float)
        return np.cos(z) - np.exp(-z / 20)

    return BenchmarkSpec(
        "toy_graph",
        scm,
        _mis(scm),
        "Three synthetic variables X, Z, Y; minimise E[Y].",
        source="Aglietti et al., AISTATS 2020 (CBO)",
        closed_forms={frozenset({"X"}): do_x, frozenset({"Z"}): do_z},
    )


def _complete(costs: Mapping[str, float], name: str) -> BenchmarkSpec:
    eqs = [
        _eq("U1", (), lambda p, e: e, "a synthetic variable"),
        _eq("U2", (), lambda p, e: e, "a synthetic variable"),
        _eq("F", (), lambda p, e: e, "a synthetic variable"),
        _eq("A", ("F", "U1"), lambda p, e: p["F"] ** 2 + p["U1"] + e, "a synthetic variable"),
        _eq("B", ("U2",), lambda p, e: p["U2"] + e, "a synthetic variable"),
        _eq("C", ("B",), lambda p, e: np.exp(-p["B"]) + e, "a synthetic variable"),
        _eq("D", ("C",), lambda p, e: np.exp(-p["C"]) / 10 + e, "a synthetic variable"),
        _eq(
            "E",
            ("A", "C"),
            lambda p, e: np.cos(p["A"]) + p["C"] / 10 + e,
            "a synthetic variable",
        ),
        _eq(
            "Y",
            ("D", "E", "U1", "U2"),
            lambda p, e: (
                np.cos(p["D"])
                - p["D"] / 5
                + np.sin(p["E"])
                - p["E"] / 4
                + p["U1"]
                + np.exp(-p["U2"])
                + e
            ),
            "the outcome to minimise",
        ),
    ]
    doms = {
        "B": _dom(-5, 4, costs["B"]),
        "D": _dom(-5, 5, costs["D"]),
        "E": _dom(-6, 3, costs["E"]),
    }
    scm = SCM(eqs, "Y", doms)
    return BenchmarkSpec(
        name,
        scm,
        _mis(scm),
        "Nine synthetic variables; intervene on B, D, E.",
        notes=f"costs {dict(costs)}",
        source="Aglietti et al., AISTATS 2020",
    )


def complete_graph() -> BenchmarkSpec:
    """CompleteGraph with equal costs."""
    return _complete({"B": 1.0, "D": 1.0, "E": 1.0}, "complete_graph")


def complete_graph_costs() -> BenchmarkSpec:
    """CompleteGraph with the literature's unequal costs (B 10, D 5, E 20)."""
    return _complete({"B": 10.0, "D": 5.0, "E": 20.0}, "complete_graph_costs")


def psa() -> BenchmarkSpec:
    """Healthcare PSA graph (Ferro et al. 2015 as used by Aglietti et al. 2020)."""
    eqs = [
        _eq("age", (), lambda p, e: e, "patient age in years", _u(55, 75)),
        _eq("bmi", ("age",), lambda p, e: 27 - 0.01 * p["age"] + e, "body-mass index", _n(0.7)),
        _eq(
            "aspirin",
            ("age", "bmi"),
            lambda p, e: expit(-8 + 0.10 * p["age"] + 0.03 * p["bmi"]),
            "aspirin use (probability/dose in [0, 1])",
            NONE,
        ),
        _eq(
            "statin",
            ("age", "bmi"),
            lambda p, e: expit(-13 + 0.10 * p["age"] + 0.20 * p["bmi"]),
            "statin use (probability/dose in [0, 1])",
            NONE,
        ),
        _eq(
            "cancer",
            ("age", "bmi", "statin", "aspirin"),
            lambda p, e: expit(
                2.2 - 0.05 * p["age"] + 0.01 * p["bmi"] - 0.04 * p["statin"] + 0.02 * p["aspirin"]
            ),
            "cancer risk score",
            NONE,
        ),
        _eq(
            "psa",
            ("age", "bmi", "statin", "aspirin", "cancer"),
            lambda p, e: (
                6.8
                + 0.04 * p["age"]
                - 0.15 * p["bmi"]
                - 0.60 * p["statin"]
                + 0.55 * p["aspirin"]
                + 1.00 * p["cancer"]
                + e
            ),
            "prostate-specific antigen level (minimise)",
            _n(0.4),
        ),
    ]
    scm = SCM(eqs, "psa", {"aspirin": _dom(0, 1), "statin": _dom(0, 1)})
    return BenchmarkSpec(
        "psa",
        scm,
        _mis(scm),
        "Choose aspirin and/or statin levels to minimise PSA.",
        source="Ferro et al. 2015; Aglietti et al. 2020",
    )


def epidemiology() -> BenchmarkSpec:
    """Epidemiology graph with a latent confounder U of L and Y."""
    eqs = [
        _eq("U", (), lambda p, e: e, "an unobserved background factor", _u(-1, 1), observed=False),
        _eq("T", (), lambda p, e: e, "treatment intensity", _u(4, 8)),
        _eq(
            "L",
            ("T", "U"),
            lambda p, e: expit(0.5 * p["T"] + p["U"]),
            "a biomarker level",
            NONE,
        ),
        _eq("R", ("L", "T"), lambda p, e: 4 + p["L"] * p["T"], "a secondary treatment level", NONE),
        _eq(
            "Y",
            ("T", "L", "R", "U"),
            lambda p, e: 0.5 + np.cos(4 * p["T"]) + np.sin(-p["L"] + 2 * p["R"]) + p["U"] + e,
            "the adverse outcome to minimise",
        ),
    ]
    scm = SCM(eqs, "Y", {"T": _dom(4, 8), "R": _dom(4, 12)})
    return BenchmarkSpec(
        "epidemiology",
        scm,
        [("T",), ("R",), ("T", "R")],
        "Set treatment T and/or R to minimise the outcome.",
        notes="do-ranges T in [4, 8], R in [4, 12] are ours (observational support)",
        source="Havercroft & Didelez 2012 style; as in the CBO literature",
    )


def extended_epidemiology() -> BenchmarkSpec:
    """Epidemiology with extra exogenous parents P, M, E, Z, X ~ U[-1, 1]."""
    ex = ("P", "M", "E", "Z", "X")  # parents of U, T, L, R, Y in that order
    eqs = [_eq(k, (), lambda p, e: e, "a synthetic variable", _u(-1, 1)) for k in ex]
    eqs += [
        _eq(
            "U", ("P",), lambda p, e: e + p["P"], "an unobserved background factor", observed=False
        ),
        _eq("T", ("M",), lambda p, e: e + p["M"], "treatment intensity"),
        _eq(
            "L",
            ("T", "U", "E"),
            lambda p, e: expit(0.5 * p["T"] + p["U"]) + p["E"],
            "a biomarker level",
            NONE,
        ),
        _eq(
            "R",
            ("L", "T", "Z"),
            lambda p, e: 4 + p["L"] * p["T"] + p["Z"],
            "a secondary treatment level",
            NONE,
        ),
        _eq(
            "Y",
            ("T", "L", "R", "U", "X"),
            lambda p, e: (
                0.5 + np.cos(4 * p["T"]) + np.sin(-p["L"] + 2 * p["R"]) + p["U"] + e + p["X"]
            ),
            "the adverse outcome to minimise",
        ),
    ]
    scm = SCM(eqs, "Y", {"T": _dom(-2, 2), "R": _dom(2, 6)})
    return BenchmarkSpec(
        "extended_epidemiology",
        scm,
        [("T",), ("R",), ("T", "R")],
        "Set treatment T and/or R to minimise the outcome (more variables than the basic model).",
        notes="read literally from REFERENCE.md (T = eps + M); do-ranges ours",
    )


def synthetic2() -> BenchmarkSpec:
    """Synthetic2 (six nodes)."""
    eqs = [
        _eq("A", (), lambda p, e: e, "a synthetic variable"),
        _eq("B", (), lambda p, e: e, "a synthetic variable"),
        _eq("C", ("A",), lambda p, e: np.exp(-p["A"]) / 5 + e, "a synthetic variable"),
        _eq(
            "D",
            ("B", "C"),
            lambda p, e: np.cos(p["B"]) + p["C"] / 10 + e,
            "a synthetic variable",
        ),
        _eq("E", ("C",), lambda p, e: np.exp(-p["C"]) / 10 + e, "a synthetic variable"),
        _eq(
            "Y",
            ("D", "E"),
            lambda p, e: np.cos(p["D"]) - p["D"] / 5 + np.sin(p["E"]) - p["E"] / 4 + e,
            "the outcome to minimise",
        ),
    ]
    scm = SCM(eqs, "Y", {"A": _dom(-5, 5), "D": _dom(-1, 1), "E": _dom(-1, 1)})
    return BenchmarkSpec(
        "synthetic2", scm, _mis(scm), "Six synthetic variables; intervene on A, D, E."
    )


def independent() -> BenchmarkSpec:
    """Two independent causes of Y."""
    eqs = [
        _eq("X", (), lambda p, e: e, "a synthetic variable"),
        _eq("Z", (), lambda p, e: e, "a synthetic variable"),
        _eq(
            "Y",
            ("X", "Z"),
            lambda p, e: (
                -2 * np.exp(-((p["X"] - 1) ** 2) - (p["Z"] - 1) ** 2)
                - np.exp(-((p["X"] + 1) ** 2) - p["Z"] ** 2)
                + e
            ),
            "the outcome to minimise",
        ),
    ]
    scm = SCM(eqs, "Y", {"X": _dom(-2, 2), "Z": _dom(-2, 2)})
    # For eps ~ N(0, 1): E exp(-(eps - a)^2) = exp(-a^2 / 3) / sqrt(3).
    k0, k1 = 1 / np.sqrt(3), np.exp(-1 / 3) / np.sqrt(3)

    def do_xz(x: Mapping[str, Any]) -> Any:
        a, b = np.asarray(x["X"], dtype=float), np.asarray(x["Z"], dtype=float)
        return -2 * np.exp(-((a - 1) ** 2) - (b - 1) ** 2) - np.exp(-((a + 1) ** 2) - b**2)

    def do_x(x: Mapping[str, Any]) -> Any:
        a = np.asarray(x["X"], dtype=float)
        return -2 * k1 * np.exp(-((a - 1) ** 2)) - k0 * np.exp(-((a + 1) ** 2))

    def do_z(x: Mapping[str, Any]) -> Any:
        b = np.asarray(x["Z"], dtype=float)
        return -2 * k1 * np.exp(-((b - 1) ** 2)) - k1 * np.exp(-(b**2))

    return BenchmarkSpec(
        "independent",
        scm,
        _mis(scm),
        "Three synthetic variables X, Z, Y; minimise E[Y].",
        notes="do-ranges [-2, 2] are ours",
        closed_forms={
            frozenset({"X", "Z"}): do_xz,
            frozenset({"X"}): do_x,
            frozenset({"Z"}): do_z,
        },
    )


def graph4nodes() -> BenchmarkSpec:
    """Four-node graph X -> {Z, T} -> Y."""
    eqs = [
        _eq("X", (), lambda p, e: e, "a synthetic variable"),
        _eq("Z", ("X",), lambda p, e: 1.5 * np.tanh(p["X"]) + e, "a synthetic variable"),
        _eq("T", ("X",), lambda p, e: np.cos(p["X"]) + np.exp(-p["X"]) + e, "a synthetic variable"),
        _eq(
            "Y",
            ("Z", "T"),
            lambda p, e: p["Z"] ** 2 + np.sin(p["T"]) + e,
            "the outcome to minimise",
        ),
    ]
    scm = SCM(eqs, "Y", {"X": _dom(-3, 3), "Z": _dom(-3, 3), "T": _dom(-2, 8)})
    # Given X = x: E Z^2 = 2.25 tanh(x)^2 + 1 and E sin T = e^{-1/2} sin(cos x + e^{-x}).
    # do(Z) and do(T) alone average over X and have no closed form (Monte Carlo).

    def _ez2(a: Any) -> Any:
        return 2.25 * np.tanh(a) ** 2 + 1.0

    def _esin(a: Any) -> Any:
        return np.exp(-0.5) * np.sin(np.cos(a) + np.exp(-a))

    def do_x(x: Mapping[str, Any]) -> Any:
        a = np.asarray(x["X"], dtype=float)
        return _ez2(a) + _esin(a)

    def do_xt(x: Mapping[str, Any]) -> Any:
        a, t = np.asarray(x["X"], dtype=float), np.asarray(x["T"], dtype=float)
        return _ez2(a) + np.sin(t)

    def do_xz(x: Mapping[str, Any]) -> Any:
        a, z = np.asarray(x["X"], dtype=float), np.asarray(x["Z"], dtype=float)
        return z**2 + _esin(a)

    def do_zt(x: Mapping[str, Any]) -> Any:
        z, t = np.asarray(x["Z"], dtype=float), np.asarray(x["T"], dtype=float)
        return z**2 + np.sin(t)

    return BenchmarkSpec(
        "graph4nodes",
        scm,
        _mis(scm),
        "Four synthetic variables X, Z, T, Y; minimise E[Y].",
        notes="do-ranges of X and Z are ours; T in [-2, 8] from the literature",
        closed_forms={
            frozenset({"X"}): do_x,
            frozenset({"X", "T"}): do_xt,
            frozenset({"X", "Z"}): do_xz,
            frozenset({"Z", "T"}): do_zt,
        },
    )


def dropwave() -> BenchmarkSpec:
    """Dropwave function network (Astudillo & Frazier 2021), negated so we minimise."""
    r = 5.12
    eqs = [
        _eq("x0", (), lambda p, e: e, "a synthetic variable", _n(2.0)),
        _eq("x1", (), lambda p, e: e, "a synthetic variable", _n(2.0)),
        _eq(
            "n0",
            ("x0", "x1"),
            lambda p, e: np.sqrt(p["x0"] ** 2 + p["x1"] ** 2),
            "a synthetic variable",
            NONE,
        ),
        _eq(
            "Y",
            ("n0",),
            lambda p, e: -(1 + np.cos(12 * p["n0"])) / (2 + 0.5 * p["n0"] ** 2) + e,
            "the outcome to minimise",
            _n(0.1),
        ),
    ]
    scm = SCM(eqs, "Y", {"x0": _dom(-r, r), "x1": _dom(-r, r)})

    def do_all(x: Mapping[str, Any]) -> Any:
        n0 = np.hypot(np.asarray(x["x0"], dtype=float), np.asarray(x["x1"], dtype=float))
        return -(1 + np.cos(12 * n0)) / (2 + 0.5 * n0**2)

    return BenchmarkSpec(
        "dropwave",
        scm,
        [("x0", "x1")],
        "Synthetic variables x0, x1, n0, Y; minimise E[Y].",
        notes="inputs observed as N(0, 2^2); outcome noise sd 0.1 (ours)",
        closed_forms={frozenset({"x0", "x1"}): do_all},
    )


def alpine2() -> BenchmarkSpec:
    """Alpine2 six-node chain function network, minimised."""
    eqs = [_eq(f"x{i}", (), lambda p, e: e, "a synthetic variable", _u(0, 10)) for i in range(6)]
    eqs.append(
        _eq(
            "n0",
            ("x0",),
            lambda p, e: -np.sqrt(p["x0"]) * np.sin(p["x0"]),
            "a synthetic variable",
            NONE,
        )
    )
    for i in range(1, 6):

        def link(p: P, e: np.ndarray, i: int = i) -> np.ndarray:
            return np.sqrt(p[f"x{i}"]) * np.sin(p[f"x{i}"]) * p[f"n{i - 1}"]

        eqs.append(_eq(f"n{i}", (f"x{i}", f"n{i - 1}"), link, "a synthetic variable", NONE))
    eqs.append(_eq("Y", ("n5",), lambda p, e: p["n5"] + e, "the outcome to minimise", _n(0.1)))
    scm = SCM(eqs, "Y", {f"x{i}": _dom(0, 10) for i in range(6)})

    def g(a: Any) -> Any:
        return np.sqrt(a) * np.sin(a)

    def do_all(x: Mapping[str, Any]) -> Any:
        # n5 = -prod_i g(x_i): the chain is deterministic and the outcome noise has mean 0.
        out = -g(np.asarray(x["x0"], dtype=float))
        for i in range(1, 6):
            out = out * g(np.asarray(x[f"x{i}"], dtype=float))
        return out

    # The product is separable: every factor at the maximiser of g is the global optimum
    # (|min g| < max g on [0, 10]); a grid over six dimensions only finds local ones.
    g_star = minimize_scalar(lambda a: -g(a), bounds=(6.0, 9.0), method="bounded",
                             options={"xatol": 1e-12}).x  # fmt: skip
    return BenchmarkSpec(
        "alpine2",
        scm,
        [tuple(f"x{i}" for i in range(6))],
        "Synthetic variables x0-x5, n0-n5, Y; minimise E[Y].",
        notes="inputs observed as U[0, 10]; outcome noise sd 0.1 (ours)",
        closed_forms={frozenset(f"x{i}" for i in range(6)): do_all},
        optimum_starts=[{f"x{i}": float(g_star) for i in range(6)}],
    )


_G = (
    lambda x: x,
    lambda x: 2 * np.tanh(x),
    lambda x: 1.5 * np.sin(x),
    lambda x: -2 * np.exp(-(x**2)),
)


def random_dag(n_nodes: int, seed: int) -> BenchmarkSpec:
    """Seeded random DAG with random nonlinear additive equations (ours).

    Nodes ``V0..V{n-1}`` in topological order; the last node is the target. Each node draws
    1-3 parents among earlier ones and ``value = sum_j w_j g_j(parent_j) / sqrt(k) + 0.5 eps``
    with ``g`` from {identity, 2 tanh, 1.5 sin, -2 exp(-x^2)}, weights U(0.5, 1.5) with random
    sign. Three (four from 10 nodes) ancestors of the target are manipulable in [-2, 2],
    costs integers 1-4.
    """
    if n_nodes < 4:
        raise InvalidTask("random_dag needs at least 4 nodes")
    rng = np.random.default_rng(seed)
    names = [f"V{i}" for i in range(n_nodes)]
    eqs: list[StructuralEquation] = []
    for i, v in enumerate(names):
        if i == 0:
            eqs.append(_eq(v, (), lambda p, e: e, "a synthetic variable"))
            continue
        k = int(rng.integers(1, min(3, i) + 1))
        if i == n_nodes - 1:
            k = min(3, i)
        # Prefer recent nodes so long chains (and deep ancestries) appear.
        pool = np.arange(i)
        w_pool = (pool + 1.0) / (pool + 1.0).sum()
        pars = tuple(names[j] for j in sorted(rng.choice(pool, size=k, replace=False, p=w_pool)))
        gs = [int(rng.integers(len(_G))) for _ in pars]
        ws = [float(rng.uniform(0.5, 1.5) * rng.choice([-1, 1])) for _ in pars]

        def fn(
            p: P,
            e: np.ndarray,
            pars: tuple[str, ...] = pars,
            gs: list[int] = gs,
            ws: list[float] = ws,
        ) -> np.ndarray:
            tot = sum(w * _G[g](p[q]) for q, g, w in zip(pars, gs, ws, strict=True))
            return tot / np.sqrt(len(pars)) + 0.5 * e

        desc = "the outcome to minimise" if i == n_nodes - 1 else "a synthetic variable"
        eqs.append(_eq(v, pars, fn, desc))
    graph = nx.DiGraph([(p, eq.name) for eq in eqs for p in eq.parents])
    target = names[-1]
    anc = sorted(nx.ancestors(graph, target), key=names.index)
    n_man = min(len(anc), 3 if n_nodes < 10 else 4)
    man = sorted(rng.choice(anc, size=n_man, replace=False).tolist(), key=names.index)
    doms = {v: _dom(-2, 2, float(rng.integers(1, 5))) for v in man}
    scm = SCM(eqs, target, doms)
    return BenchmarkSpec(
        f"random_dag_{n_nodes}_s{seed}",
        scm,
        _mis(scm),
        f"{n_nodes} synthetic variables; intervene on {', '.join(man)}.",
        notes="generator and parameters are ours; exploration sets are the MISs of size <= 2, "
        "the optimum is taken over all MISs",
        truth_sets=_mis(scm, max_size=None),
    )


LITERATURE = {
    "toy_graph": toy_graph,
    "complete_graph": complete_graph,
    "psa": psa,
    "epidemiology": epidemiology,
    "extended_epidemiology": extended_epidemiology,
    "synthetic2": synthetic2,
    "independent": independent,
    "graph4nodes": graph4nodes,
    "dropwave": dropwave,
    "alpine2": alpine2,
}
"""The ten literature SCMs by name."""


def build(name: str) -> BenchmarkSpec:
    """Build a benchmark by name (literature name, ``complete_graph_costs`` or
    ``random_dag_<n>_s<seed>``)."""
    if name in LITERATURE:
        return LITERATURE[name]()
    if name == "complete_graph_costs":
        return complete_graph_costs()
    if name.startswith("random_dag_"):
        try:
            n_s, s_s = name.removeprefix("random_dag_").split("_s")
            return random_dag(int(n_s), int(s_s))
        except ValueError as exc:
            raise InvalidTask(f"bad random DAG name {name!r}") from exc
    raise InvalidTask(f"unknown CBO benchmark {name!r}")
