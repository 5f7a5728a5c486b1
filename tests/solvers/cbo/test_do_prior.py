"""Back-door adjustment sets and the do-prior estimate against Monte Carlo truth."""

from __future__ import annotations

import networkx as nx
import numpy as np

from optiforge.solvers.cbo import SCM, backdoor_adjustment_set, fit_do_prior

COMPLETE = nx.DiGraph(
    [("U1", "A"), ("U1", "Y"), ("U2", "B"), ("U2", "Y"), ("F", "A"), ("B", "C"), ("C", "D"),
     ("A", "E"), ("C", "E"), ("D", "Y"), ("E", "Y")]
)  # fmt: skip
EPI = nx.DiGraph([("U", "L"), ("U", "Y"), ("T", "L"), ("T", "R"), ("T", "Y"), ("L", "R"),
                  ("L", "Y"), ("R", "Y")])  # fmt: skip


def _is_backdoor(g: nx.DiGraph, xs: set[str], y: str, z: set[str]) -> bool:
    """Second check: the back-door criterion stated directly."""
    desc = set().union(*(nx.descendants(g, x) for x in xs))
    cut = g.copy()
    cut.remove_edges_from([(x, c) for x in xs for c in g.successors(x)])
    return not (z & desc) and nx.is_d_separator(cut, xs, {y}, z)


def test_backdoor_sets() -> None:
    assert backdoor_adjustment_set(nx.DiGraph([("X", "Z"), ("Z", "Y")]), ["Z"], "Y") == set()
    for xs in (["E"], ["B"], ["D"], ["D", "E"]):
        z = backdoor_adjustment_set(COMPLETE, xs, "Y")
        assert z is not None and _is_backdoor(COMPLETE, set(xs), "Y", z)
    # E <- C -> D -> Y needs C, a descendant of B: no back-door set for {B, E} (same for
    # {B, D} via D <- C -> E -> Y); identifiable, but not by back-door adjustment.
    assert backdoor_adjustment_set(COMPLETE, ["B", "E"], "Y") is None
    assert backdoor_adjustment_set(COMPLETE, ["B", "D"], "Y") is None
    # B <- U2 -> Y cannot be blocked once U2 is unobserved.
    assert backdoor_adjustment_set(COMPLETE, ["B"], "Y", observed=set(COMPLETE) - {"U2"}) is None
    obs = set(EPI) - {"U"}
    z = backdoor_adjustment_set(EPI, ["R"], "Y", observed=obs)
    assert z is not None and _is_backdoor(EPI, {"R"}, "Y", z) and "U" not in z
    # L descends from T, so {T, R} has no back-door set without U.
    assert backdoor_adjustment_set(EPI, ["T", "R"], "Y", observed=obs) is None


def test_do_prior_close_to_mc_truth_on_toy_graph(toy: SCM) -> None:
    data = toy.sample(300, np.random.default_rng(0))
    prior = fit_do_prior(toy.graph, data, ["Z"], "Y")
    inside = np.linspace(0.0, 4.0, 9)[:, None]  # well covered by observational Z
    m, s = prior(inside)
    truth = toy.expected_outcome_batch(["Z"], inside, 20000, seed=1)
    assert np.mean(np.abs(m - truth)) < 0.2
    assert np.max(np.abs(m - truth)) < 0.4
    # Outside the observational support the estimate is uncertain (that is what CBO uses).
    _, s_out = prior(np.array([[18.0], [-4.5]]))
    assert s_out.min() > 2 * s.mean()
    # do(X) has an empty adjustment set; its prior also tracks the truth near X = 0.
    px = fit_do_prior(toy.graph, data, ["X"], "Y")
    xs = np.array([[-0.5], [0.0], [0.5]])
    assert np.max(np.abs(px(xs)[0] - toy.expected_outcome_batch(["X"], xs, 20000, seed=2))) < 0.35


def test_gformula_prior_when_backdoor_fails() -> None:
    from optiforge.evals.suites.cbo.scms import epidemiology, synthetic2

    scm = synthetic2().scm
    data = scm.sample(200, np.random.default_rng(0))
    assert fit_do_prior(scm.graph, data, ["A", "E"], "Y").method == "none"  # opt-in only
    prior = fit_do_prior(scm.graph, data, ["A", "E"], "Y", gformula=True)
    assert prior.method == "gformula"  # E <- C -> D -> Y needs C, a descendant of A
    x = np.array([[-1.0, -0.5], [0.0, 0.0], [1.0, 0.5]])  # inside the observational bulk
    truth = scm.expected_outcome_batch(["A", "E"], x, 20000, seed=4)
    assert np.max(np.abs(prior(x)[0] - truth)) < 0.3
    epi = epidemiology().scm  # U is latent and confounds L, Y: neither criterion applies
    d = epi.sample(100, np.random.default_rng(1))
    assert fit_do_prior(epi.graph, d, ["T", "R"], "Y", gformula=True).method == "none"
    assert fit_do_prior(epi.graph, d, ["R"], "Y").method == "backdoor"


def test_routing_signature_separates_graphs(toy: SCM) -> None:
    from optiforge.solvers.cbo import routing_signature

    obs = ["X", "Z", "Y"]
    same = nx.DiGraph([("X", "Z"), ("Z", "Y")])
    direct = nx.DiGraph([("X", "Z"), ("Z", "Y"), ("X", "Y")])
    sig = routing_signature(toy.graph, ["X", "Z"], "Y", obs)
    assert sig == routing_signature(same, ["X", "Z"], "Y", obs)
    other = routing_signature(direct, ["X", "Z"], "Y", obs)
    assert other != sig and (("X", "Z"), other[-1][1]) == other[-1]  # {X, Z} becomes a MIS
