"""SCM sampling, do-interventions and costs."""

from __future__ import annotations

import numpy as np
import pytest

from optiforge.errors import InvalidCandidate, InvalidTask
from optiforge.solvers.cbo import SCM, InterventionDomain, NoiseSpec, StructuralEquation


def test_observational_moments_match_equations(toy: SCM) -> None:
    d = toy.sample(200_000, np.random.default_rng(0))
    # X ~ N(0,1); Z = exp(-X) + eps: E[Z] = e^{1/2}, Var Z = (e - 1) e + 1 (lognormal + 1).
    assert abs(d["X"].mean()) < 0.01
    assert abs(d["Z"].mean() - np.exp(0.5)) < 0.03
    assert abs(d["Z"].var() - ((np.e - 1) * np.e + 1)) < 0.25
    assert d["Y"].shape == (200_000,)


def test_do_cuts_incoming_edges(toy: SCM) -> None:
    rng = np.random.default_rng(1)
    d = toy.do({"Z": 2.0}, 100_000, rng)
    assert np.all(d["Z"] == 2.0)
    assert abs(d["X"].mean()) < 0.02  # X keeps its own distribution
    # Z no longer depends on X, so X and Y are independent under do(Z).
    assert abs(np.corrcoef(d["X"], d["Y"])[0, 1]) < 0.02
    exact = np.cos(2.0) - np.exp(-0.1)
    assert abs(d["Y"].mean() - exact) < 4 / np.sqrt(100_000)


def test_common_random_numbers_and_batch(toy: SCM) -> None:
    a = toy.do({"X": 0.5}, 50, np.random.default_rng(3))
    b = toy.do({"X": -0.5}, 50, np.random.default_rng(3))
    # Same seed -> same noise: Z - exp(-X) is the identical noise draw.
    assert np.allclose(a["Z"] - np.exp(-0.5), b["Z"] - np.exp(0.5))
    xs = np.array([[0.5], [-0.5]])
    batch = toy.expected_outcome_batch(["X"], xs, 5000, seed=9)
    single = [toy.expected_outcome({"X": v}, 5000, np.random.default_rng(9)) for v in (0.5, -0.5)]
    assert np.allclose(batch, single)


def test_costs_and_validation() -> None:
    eqs = [
        StructuralEquation("A", (), lambda p, e: e),
        StructuralEquation("B", ("A",), lambda p, e: p["A"] + e, NoiseSpec(kind="uniform")),
        StructuralEquation("Y", ("B",), lambda p, e: p["B"] + e),
    ]
    doms = {
        "A": InterventionDomain(low=0, high=1, cost=2),
        "B": InterventionDomain(low=0, high=1, cost=3),
    }
    scm = SCM(eqs, "Y", doms, fixed_cost=0.5)
    assert scm.cost(["A", "B"]) == pytest.approx(5.5)
    assert scm.cost([]) == 0.0
    with pytest.raises(InvalidCandidate, match="outside its domain"):
        scm.do({"A": 3.0}, 5, np.random.default_rng(0))
    with pytest.raises(InvalidCandidate, match="not a manipulable"):
        scm.do({"Y": 0.0}, 5, np.random.default_rng(0))
    cyc = [
        StructuralEquation("A", ("B",), lambda p, e: e),
        StructuralEquation("B", ("A",), lambda p, e: e),
    ]
    with pytest.raises(InvalidTask, match="cycle"):
        SCM(cyc, "A", {})
    with pytest.raises(InvalidTask, match="unknown parent"):
        SCM([StructuralEquation("A", ("Q",), lambda p, e: e)], "A", {})
    with pytest.raises(ValueError):
        InterventionDomain(low=1, high=0)
