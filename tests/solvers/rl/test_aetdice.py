"""AETDICE's parts: the objective grammar, the multi-objective environments and datasets,
the exact augmented-state DP (checked by brute force), DualDICE's ratios (behaviour policy
-> w = 1) and the OptiDICE dual."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from optiforge.errors import ConfigError
from optiforge.solvers.rl import aetdice as A
from optiforge.solvers.rl import catalogue, mo_data
from optiforge.solvers.rl.api import ControlProblem
from optiforge.solvers.rl.mo_envs import TabularModel, dst_model, make_mo_env, resource_model

DST_MIN = "min:0.00806452,0.05@0,-20"  # min(treasure / 124, (20 - steps) / 20)


# ------------------------------------------------------------------------- grammar
@pytest.mark.parametrize(
    ("text", "kind", "mode"),
    [("linear:0.7,0.3", "linear", "esr"), ("min", "min", "esr"), ("ser:min:1,2@0,-20", "min", "ser"),
     ("fair", "fair", "esr"), ("fair@0,-20", "fair", "esr"), ("esr:cvar:0.2", "cvar", "esr"),
     ("cvar:0.5:1,0", "cvar", "esr"), ("threshold:50,-14", "threshold", "esr")],
)  # fmt: skip
def test_objective_grammar(text: str, kind: str, mode: str) -> None:
    obj = A.parse_objective(text, 2)
    assert (obj.kind, obj.mode) == (kind, mode)


def test_objective_fields() -> None:
    o = A.parse_objective("min:1,2@0,-20")
    assert o.weights == (1.0, 2.0) and o.ref == (0.0, -20.0)
    assert A.parse_objective("cvar:0.25:1,0").level == 0.25
    assert A.parse_objective("fair@0,-20").ref == (0.0, -20.0)


@pytest.mark.parametrize(
    "text",
    ["", "max", "linear", "linear:a,b", "cvar", "cvar:0", "cvar:1.5", "cvar:x",
     "ser:cvar:0.2", "ser:threshold:1,1", "threshold", "fair:1,2", "linear:1,2,3", "min:1"],
)  # fmt: skip
def test_bad_objective_is_one_line_config_error(text: str) -> None:
    with pytest.raises(ConfigError) as e:
        A.parse_objective(text, 2)
    assert "\n" not in str(e.value) and "objective" in str(e.value)


def test_objective_values() -> None:
    R = np.array([[0.0, 4.0], [2.0, 2.0], [4.0, 0.0], [10.0, 10.0]])
    p = np.array([0.1, 0.2, 0.3, 0.4])
    assert A.parse_objective("linear:1,0").value(R, p) == pytest.approx(5.6)
    assert A.parse_objective("min").value(R, p) == pytest.approx(0.2 * 2 + 0.4 * 10)
    assert A.parse_objective("ser:min").value(R, p) == pytest.approx(min(5.6, 4.8))
    # w . R = (4, 4, 4, 20): the worst half is 4
    assert A.parse_objective("cvar:0.5").value(R, p) == pytest.approx(4.0)
    # worst 0.7: 0.6 at 4 and 0.1 at 20
    assert A.parse_objective("cvar:0.7").value(R, p) == pytest.approx((0.6 * 4 + 0.1 * 20) / 0.7)
    assert A.parse_objective("threshold:2,2").value(R, p) == pytest.approx(0.6)
    # Rockafellar-Uryasev: max over tau of E[g_tau] is the CVaR
    cv = A.parse_objective("cvar:0.7")
    best = max(float(p @ cv.terminal_reward(R, tau)) for tau in (4.0, 20.0))
    assert best == pytest.approx(cv.value(R, p))


# -------------------------------------------------------------------- environments
def test_envs_return_reward_vectors() -> None:
    for spec in ("dst", "resource", "point:noise=0.1"):
        env = make_mo_env(spec)
        env.reset(seed=0)
        _, r, _, _, info = env.step(env.action_space.sample())
        assert isinstance(r, np.ndarray) and r.shape == (len(env.reward_names),)
        assert np.array_equal(r, info["rewards"])
    for m in (dst_model(slip=0.2), resource_model()):
        assert np.allclose(m.P.sum(axis=2), 1.0)
    with pytest.raises(ConfigError):
        make_mo_env("nowhere")
    with pytest.raises(ConfigError):
        make_mo_env("dst:slip=2")


def test_dst_front_is_the_classic_one() -> None:
    m = dst_model()
    aug = A.AugmentedMDP.build(m)
    front = [(1, 1), (2, 3), (3, 5), (5, 7), (8, 8), (16, 9), (24, 13), (50, 14), (74, 17),
             (124, 19)]  # fmt: skip
    for v, steps in front:  # reachable in `steps`, not in fewer
        assert A.dp_optimum(m, A.parse_objective(f"threshold:{v},{-steps}"), aug)[0] == 1.0
        assert A.dp_optimum(m, A.parse_objective(f"threshold:{v},{1 - steps}"), aug)[0] == 0.0


def test_dataset_is_seeded_and_round_trips(tmp_path) -> None:  # type: ignore[no-untyped-def]
    d1 = mo_data.collect_dataset("resource", 20, seed=3)
    d2 = mo_data.collect_dataset("resource", 20, seed=3)
    assert all(np.array_equal(d1[k], d2[k]) for k in d1)
    assert d1["rew"].shape == (len(d1["t"]), 2) and d1["last"].sum() == 20
    mo_data.save(d1, tmp_path / "d.npz")
    d3 = mo_data.load(tmp_path / "d.npz")
    assert all(np.array_equal(d1[k], d3[k]) for k in d1)
    p = mo_data.collect_dataset("point", 5, seed=0, behaviour="scripted")
    assert p["obs"].shape[1] == 1 and p["last"].sum() == 5
    with pytest.raises(ConfigError):
        mo_data.collect_dataset("dst", 5, behaviour="greedy")


# ------------------------------------------------------------ exact DP vs brute force
def _tiny(seed: int) -> TabularModel:
    gen = np.random.default_rng(seed)
    S, Ac, K = 3, 2, 2
    P = gen.dirichlet(np.ones(S) * 0.7, size=(S, Ac))
    P[P < 0.15] = 0.0
    P /= P.sum(axis=2, keepdims=True)
    R = gen.integers(0, 3, size=(S, Ac, S, K)).astype(float)
    done = np.zeros((S, Ac, S), dtype=bool)
    done[:, :, 2] = gen.random((S, Ac)) < 0.5
    mu0 = np.array([1.0, 0.0, 0.0])
    return TabularModel(P, R, done, mu0, 2, ("a", "b"))


def _brute_value(m: TabularModel, obj: A.Objective, choice: dict) -> float:  # type: ignore[type-arg]
    """Enumerate every trajectory of the deterministic history policy ``choice``."""
    atoms: list[np.ndarray] = []
    probs: list[float] = []

    def rec(t: int, s: int, G: np.ndarray, p: float) -> None:
        a = choice[(t, s, tuple(G))]
        for s2 in range(m.n_states):
            q = m.P[s, a, s2]
            if q == 0:
                continue
            G2 = G + m.R[s, a, s2]
            if m.done[s, a, s2] or t + 1 == m.horizon:
                atoms.append(G2)
                probs.append(p * q)
            else:
                rec(t + 1, s2, G2, p * q)

    rec(0, 0, np.zeros(m.n_rewards), 1.0)
    return obj.value(np.asarray(atoms), np.asarray(probs))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_dp_optimum_matches_brute_force(seed: int) -> None:
    m = _tiny(seed)
    aug = A.AugmentedMDP.build(m)
    nodes = [(int(aug.t[i]), int(aug.s[i]), tuple(aug.G[i])) for i in range(aug.n_nodes)]
    assert len(nodes) <= 10
    for text in ("min", "fair", "cvar:0.3", "threshold:2,1", "linear:0.3,0.7"):
        obj = A.parse_objective(text)
        best = max(_brute_value(m, obj, dict(zip(nodes, acts, strict=True)))
                   for acts in itertools.product(range(m.n_actions), repeat=len(nodes)))  # fmt: skip
        dp, pol = A.dp_optimum(m, obj, aug)
        assert dp == pytest.approx(best, abs=1e-12), text
        # the DP's own policy attains it, exactly evaluated
        pi = np.eye(m.n_actions)[pol]
        assert obj.value(*A.evaluate_exact(aug, pi)) == pytest.approx(best, abs=1e-12)


# ---------------------------------------------------------------------- DICE parts
def test_dualdice_behaviour_policy_has_unit_ratios() -> None:
    data = mo_data.collect_dataset("resource:attack=0.3", 150, seed=0)
    obj = A.parse_objective("cvar:0.3")
    for augmented in (True, False):
        emp = A.EmpiricalMDP.from_data(data, augmented, 4)
        tr = emp.trans
        beh = np.bincount(tr.pair_node, weights=tr.dD, minlength=tr.n_nodes)
        w, atoms, mass = A.dualdice_distribution(tr, tr.dD / beh[tr.pair_node])
        assert np.allclose(w, 1.0, atol=1e-9)
        R = np.zeros((150, 2))
        np.add.at(R, data["episode"], data["rew"])
        assert obj.value(atoms, mass) == pytest.approx(obj.value(R, np.ones(150)), abs=1e-9)


def test_dualdice_matches_exact_value_on_deterministic_world() -> None:
    """On DST (deterministic) the empirical model is exact on the data's support, so the
    DualDICE estimate of any in-support policy equals its exact value."""
    data = mo_data.collect_dataset("dst", 200, seed=1)
    m = dst_model()
    aug = A.AugmentedMDP.build(m)
    obj = A.parse_objective(DST_MIN)
    emp = A.EmpiricalMDP.from_data(data, True, 4)
    for alpha in (1e-1, 1e-3):
        w, est = A.optidice(emp.trans, np.where(emp.trans.tr_dst < 0,
                                                obj.terminal_reward(emp.trans.tr_gend), 0.0),
                            alpha)  # fmt: skip
        pol = A._policy(emp, emp.trans.dD * w, 21, False)
        exact = obj.value(*A.evaluate_exact(aug, pol.on_aug(aug)))
        assert A.estimate(emp, obj, pol) == pytest.approx(exact, abs=1e-9)


def test_optidice_flow_constraints_hold() -> None:
    """At the dual optimum ``d = d^D w`` satisfies the empirical Bellman flow (the dual's
    gradient), so the start layer carries mass 1."""
    data = mo_data.collect_dataset("resource", 100, seed=2)
    emp = A.EmpiricalMDP.from_data(data, True, 4)
    tr = emp.trans
    g = np.where(tr.tr_dst < 0, A.parse_objective("fair").terminal_reward(tr.tr_gend), 0.0)
    w, _ = A.optidice(tr, g, 1e-2)
    u = tr.dD * w
    out = np.bincount(tr.pair_node, weights=u, minlength=tr.n_nodes)
    keep = tr.tr_dst >= 0
    inflow = np.bincount(tr.tr_dst[keep], weights=(u[tr.tr_pair] * tr.tr_w)[keep],
                         minlength=tr.n_nodes)  # fmt: skip
    assert np.abs(out - tr.mu0 - inflow).max() < 1e-5
    assert w.min() >= 0.0


# --------------------------------------------------------------------------- methods
def test_catalogue_methods_run() -> None:
    for name in ("aetdice", "linear-scalarization", "markov-dice"):
        meth = catalogue.get(name)
        assert meth.kinds == frozenset({"mo-offline"})
    prob = ControlProblem("dst-min", "mo-offline", "deep-sea treasure, fair", "dst",
                          objective=DST_MIN, options={"episodes": 200})  # fmt: skip
    res = catalogue.get("aetdice").run(prob, seed=0)
    assert res.extra["value"] == pytest.approx(res.extra["dp_optimum"], abs=1e-9)
    with pytest.raises(ConfigError):
        catalogue.get("aetdice").run(ControlProblem("x", "mo-offline", "", "dst", objective="max"))


def test_point_env_discretized() -> None:
    data = mo_data.collect_dataset("point", 60, seed=0)
    obj = A.parse_objective("min")
    pol, info = A.solve("aetdice", data, obj, 3)
    R = A.rollout_returns("point", pol, 20, 10_000)
    assert R.shape == (20, 2) and np.isfinite(info["estimate"])


def test_ser_objective_via_concave_programme() -> None:
    """``ser:`` objectives: the exact programme's optimum bounds every policy's f(E[R]) (here
    the ESR-optimal one's), and AETDICE's regularized solution stays below it."""
    spec = "resource:horizon=20,attack=0.3"
    m = make_mo_env(spec).model()  # type: ignore[union-attr]
    aug = A.AugmentedMDP.build(m)
    ser = A.parse_objective("ser:fair")
    opt, _ = A.dp_optimum(m, ser, aug)
    _, esr_pol = A.dp_optimum(m, A.parse_objective("fair"), aug)
    assert ser.value(*A.evaluate_exact(aug, np.eye(4)[esr_pol])) <= opt + 1e-6
    pol, _ = A.solve("aetdice", mo_data.collect_dataset(spec, 150, seed=0), ser, 4)
    v = ser.value(*A.evaluate_exact(aug, pol.on_aug(aug)))
    assert opt - 0.3 < v <= opt + 1e-6
