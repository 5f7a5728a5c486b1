"""The CBO suite's structural causal models (equations from REFERENCE.md / the literature).

Each builder returns a ``BenchmarkSpec``: the SCM, plain-English variable descriptions
(what an LLM is given), the exploration sets and a one-paragraph description. Do-ranges
not fixed by the literature are our choice and marked "ours" in the spec's notes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
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
        _eq("X", (), lambda p, e: e, "an upstream driver, standard normal"),
        _eq("Z", ("X",), lambda p, e: np.exp(-p["X"]) + e, "a mediator that falls as X rises"),
        _eq(
            "Y",
            ("Z",),
            lambda p, e: np.cos(p["Z"]) - np.exp(-p["Z"] / 20) + e,
            "the outcome to minimise",
        ),
    ]
    scm = SCM(eqs, "Y", {"X": _dom(-5, 5), "Z": _dom(-5, 20)})
    return BenchmarkSpec(
        "toy_graph",
        scm,
        _mis(scm),
        "Chain X -> Z -> Y; minimise E[Y].",
        source="Aglietti et al., AISTATS 2020 (CBO)",
    )


def _complete(costs: Mapping[str, float], name: str) -> BenchmarkSpec:
    eqs = [
        _eq("U1", (), lambda p, e: e, "an exogenous background factor affecting A and Y"),
        _eq("U2", (), lambda p, e: e, "an exogenous background factor affecting B and Y"),
        _eq("F", (), lambda p, e: e, "an exogenous input to A"),
        _eq("A", ("F", "U1"), lambda p, e: p["F"] ** 2 + p["U1"] + e, "intermediate variable A"),
        _eq("B", ("U2",), lambda p, e: p["U2"] + e, "intermediate variable B"),
        _eq("C", ("B",), lambda p, e: np.exp(-p["B"]) + e, "intermediate variable C"),
        _eq("D", ("C",), lambda p, e: np.exp(-p["C"]) / 10 + e, "intermediate variable D"),
        _eq(
            "E",
            ("A", "C"),
            lambda p, e: np.cos(p["A"]) + p["C"] / 10 + e,
            "intermediate variable E",
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
        "Nine-variable graph with confounders U1, U2; intervene on B, D, E.",
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
            "a biomarker responding to treatment",
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
    ex = {"P": "U", "M": "T", "E": "L", "Z": "R", "X": "Y"}
    eqs = [
        _eq(k, (), lambda p, e: e, f"an exogenous factor acting on {v}", _u(-1, 1))
        for k, v in ex.items()
    ]
    eqs += [
        _eq(
            "U", ("P",), lambda p, e: e + p["P"], "an unobserved background factor", observed=False
        ),
        _eq("T", ("M",), lambda p, e: e + p["M"], "treatment intensity"),
        _eq(
            "L",
            ("T", "U", "E"),
            lambda p, e: expit(0.5 * p["T"] + p["U"]) + p["E"],
            "a biomarker responding to treatment",
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
        "Epidemiology with extra exogenous noise sources; set T and/or R.",
        notes="read literally from REFERENCE.md (T = eps + M); do-ranges ours",
    )


def synthetic2() -> BenchmarkSpec:
    """Synthetic2 (six nodes)."""
    eqs = [
        _eq("A", (), lambda p, e: e, "root variable A"),
        _eq("B", (), lambda p, e: e, "root variable B"),
        _eq("C", ("A",), lambda p, e: np.exp(-p["A"]) / 5 + e, "intermediate variable C"),
        _eq(
            "D",
            ("B", "C"),
            lambda p, e: np.cos(p["B"]) + p["C"] / 10 + e,
            "intermediate variable D",
        ),
        _eq("E", ("C",), lambda p, e: np.exp(-p["C"]) / 10 + e, "intermediate variable E"),
        _eq(
            "Y",
            ("D", "E"),
            lambda p, e: np.cos(p["D"]) - p["D"] / 5 + np.sin(p["E"]) - p["E"] / 4 + e,
            "the outcome to minimise",
        ),
    ]
    scm = SCM(eqs, "Y", {"A": _dom(-5, 5), "D": _dom(-1, 1), "E": _dom(-1, 1)})
    return BenchmarkSpec("synthetic2", scm, _mis(scm), "Six-node graph; intervene on A, D, E.")


def independent() -> BenchmarkSpec:
    """Two independent causes of Y."""
    eqs = [
        _eq("X", (), lambda p, e: e, "first independent cause"),
        _eq("Z", (), lambda p, e: e, "second independent cause"),
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
    return BenchmarkSpec(
        "independent",
        scm,
        _mis(scm),
        "Y has two independent causes X, Z.",
        notes="do-ranges [-2, 2] are ours",
    )


def graph4nodes() -> BenchmarkSpec:
    """Four-node graph X -> {Z, T} -> Y."""
    eqs = [
        _eq("X", (), lambda p, e: e, "root variable X"),
        _eq("Z", ("X",), lambda p, e: 1.5 * np.tanh(p["X"]) + e, "a saturating response to X"),
        _eq(
            "T", ("X",), lambda p, e: np.cos(p["X"]) + np.exp(-p["X"]) + e, "a second response to X"
        ),
        _eq(
            "Y",
            ("Z", "T"),
            lambda p, e: p["Z"] ** 2 + np.sin(p["T"]) + e,
            "the outcome to minimise",
        ),
    ]
    scm = SCM(eqs, "Y", {"X": _dom(-3, 3), "Z": _dom(-3, 3), "T": _dom(-2, 8)})
    return BenchmarkSpec(
        "graph4nodes",
        scm,
        _mis(scm),
        "X drives Z and T, which drive Y.",
        notes="do-ranges of X and Z are ours; T in [-2, 8] from the literature",
    )


def dropwave() -> BenchmarkSpec:
    """Dropwave function network (Astudillo & Frazier 2021), negated so we minimise."""
    r = 5.12
    eqs = [
        _eq("x0", (), lambda p, e: e, "first input coordinate", _n(2.0)),
        _eq("x1", (), lambda p, e: e, "second input coordinate", _n(2.0)),
        _eq(
            "n0",
            ("x0", "x1"),
            lambda p, e: np.sqrt(p["x0"] ** 2 + p["x1"] ** 2),
            "distance of the input from the origin",
            NONE,
        ),
        _eq(
            "Y",
            ("n0",),
            lambda p, e: -(1 + np.cos(12 * p["n0"])) / (2 + 0.5 * p["n0"] ** 2) + e,
            "negated dropwave response (minimise)",
            _n(0.1),
        ),
    ]
    scm = SCM(eqs, "Y", {"x0": _dom(-r, r), "x1": _dom(-r, r)})
    return BenchmarkSpec(
        "dropwave",
        scm,
        [("x0", "x1")],
        "Two inputs feed a radial wave.",
        notes="inputs observed as N(0, 2^2); outcome noise sd 0.1 (ours)",
    )


def alpine2() -> BenchmarkSpec:
    """Alpine2 six-node chain function network, minimised."""
    eqs = [_eq(f"x{i}", (), lambda p, e: e, f"input {i}", _u(0, 10)) for i in range(6)]
    eqs.append(
        _eq(
            "n0",
            ("x0",),
            lambda p, e: -np.sqrt(p["x0"]) * np.sin(p["x0"]),
            "first stage of the chain",
            NONE,
        )
    )
    for i in range(1, 6):
        eqs.append(
            _eq(
                f"n{i}",
                (f"x{i}", f"n{i - 1}"),
                lambda p, e, i=i: np.sqrt(p[f"x{i}"]) * np.sin(p[f"x{i}"]) * p[f"n{i - 1}"],
                f"stage {i} of the chain",
                NONE,
            )
        )
    eqs.append(
        _eq("Y", ("n5",), lambda p, e: p["n5"] + e, "the chain's output (minimise)", _n(0.1))
    )
    scm = SCM(eqs, "Y", {f"x{i}": _dom(0, 10) for i in range(6)})
    return BenchmarkSpec(
        "alpine2",
        scm,
        [tuple(f"x{i}" for i in range(6))],
        "Six inputs multiply along a chain.",
        notes="inputs observed as U[0, 10]; outcome noise sd 0.1 (ours)",
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
            eqs.append(_eq(v, (), lambda p, e: e, "a root variable (synthetic)"))
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
        eqs.append(_eq(v, pars, fn, f"{desc} (node {i} of a seeded random DAG)"))
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
        f"A seeded random {n_nodes}-node DAG; intervene on {', '.join(man)}.",
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
