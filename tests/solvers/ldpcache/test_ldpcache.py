"""LDPCache unit tests: mechanisms' exact probabilities, accountant, eviction, scheduler, wiring."""

import math

import numpy as np
import pytest

from optiforge.errors import BudgetExceeded, ConfigError
from optiforge.memory.embeddings import HashingEmbedder
from optiforge.solvers.ldpcache import (
    Calibration,
    EvictionWeights,
    ExponentialMechanism,
    LDPCacheConfig,
    LDPCacheSession,
    PerQueryLDP,
    PrivacyAccountant,
    RandomizedResponseDecision,
    ResponseCache,
    SparseVectorDecision,
    chat_asker,
    fit_calibration,
    fit_exponent,
    ldp_violation_bound,
)
from optiforge.solvers.ldpcache.workload import (
    TableLLM,
    calibration_pairs,
    check_answer,
    make_sequence,
    make_table,
)
from optiforge.testing import FunctionLLM

EMBED = HashingEmbedder(1024).embed


def test_k_rr_probabilities_are_exact() -> None:
    eps, k = 1.3, 7
    m = ExponentialMechanism(eps, k=k)
    e = math.exp(eps)
    assert m.keep_probability(3) == pytest.approx(e / (e + k - 1), rel=1e-9)
    assert m.probs[3, 4] == pytest.approx(1 / (e + k - 1), rel=1e-9)
    assert m.ldp_epsilon() == pytest.approx(eps, rel=1e-9)
    assert np.allclose(m.probs.sum(axis=1), 1)


def test_exponential_mechanism_with_structured_utility_is_calibrated_exactly() -> None:
    # utility: half for the same entity, half for the same attribute (4 entities x 3 attrs)
    ent, att = np.divmod(np.arange(12), 3)
    u = 0.5 * (ent[:, None] == ent[None, :]) + 0.5 * (att[:, None] == att[None, :])
    m = ExponentialMechanism(2.0, utility=u)
    assert m.ldp_epsilon() == pytest.approx(2.0, abs=1e-6)
    # more utility -> more probability; releasing the same entity beats a stranger
    assert m.probs[0, 0] > m.probs[0, 1] > m.probs[0, 4]
    with pytest.raises(ConfigError):
        ExponentialMechanism(1.0, utility=2 * u)


def test_randomized_response_decision_probabilities() -> None:
    d = RandomizedResponseDecision(1.0)
    a, b = d.probabilities
    assert a == pytest.approx(math.e / (1 + math.e)) and b == pytest.approx(1 / (1 + math.e))
    assert d.ldp_epsilon() == pytest.approx(1.0)
    asym = RandomizedResponseDecision(2.0, send_floor=0.05)
    a, b = asym.probabilities
    assert a == pytest.approx(0.05 * math.exp(2.0))
    assert asym.ldp_epsilon() == pytest.approx(2.0)


def test_sparse_vector_needs_a_charged_epoch_and_closes_on_send() -> None:
    rng = np.random.default_rng(0)
    svt = SparseVectorDecision(50.0, threshold=0.5)  # tiny noise
    with pytest.raises(ConfigError):
        svt.decide(1.0, rng)
    svt.start_epoch(rng)
    assert svt.decide(0.0, rng) is False and svt.epoch_open
    assert svt.decide(1.0, rng) is True and not svt.epoch_open


def test_sparse_vector_send_probability_matches_the_laplace_formula() -> None:
    # given the epoch's threshold noise rho, P(send) = P(nu >= T + rho - g), nu ~ Lap(4/eps)
    eps, t, rho, runs = 1.0, 0.5, 0.3, 40000
    rng = np.random.default_rng(0)
    svt = SparseVectorDecision(eps, threshold=t)
    scale = 4.0 / eps
    for g in (0.0, 1.0):
        sends = 0
        for _ in range(runs):
            svt.start_epoch(rng)
            svt.rho = rho
            sends += svt.decide(g, rng)
        z = t + rho - g
        p = 0.5 * math.exp(-z / scale) if z >= 0 else 1 - 0.5 * math.exp(z / scale)
        assert sends / runs == pytest.approx(p, abs=4 * math.sqrt(p * (1 - p) / runs))
    # the epoch's threshold noise has scale 2/eps
    rhos = []
    for _ in range(20000):
        svt.start_epoch(rng)
        rhos.append(svt.rho)
    assert np.mean(np.abs(rhos)) == pytest.approx(2.0 / eps, rel=0.05)


def test_distinguishing_statistic_separates_private_from_deterministic() -> None:
    rng = np.random.default_rng(1)
    d = RandomizedResponseDecision(1.0)
    x = [d.decide(True, rng) for _ in range(4000)]
    y = [d.decide(False, rng) for _ in range(4000)]
    est, lower = ldp_violation_bound(x, y)
    assert lower <= 1.0 and est == pytest.approx(1.0, abs=0.15)
    est, lower = ldp_violation_bound([True] * 4000, [False] * 4000)
    assert lower > 5


def test_accountant_filter_basic_and_advanced() -> None:
    acc = PrivacyAccountant(budget=1.0)
    for _ in range(10):
        acc.charge("decision", 0.1)
    assert acc.basic() == pytest.approx(1.0) and not acc.can_afford(0.01)
    with pytest.raises(BudgetExceeded):
        acc.charge("query", 0.01)
    odo = PrivacyAccountant()
    for _ in range(1000):
        odo.charge("query", 0.01)
    adv = math.sqrt(2 * math.log(1e5) * 1000 * 1e-4) + 1000 * 0.01 * math.expm1(0.01)
    assert odo.advanced(1e-5) == pytest.approx(adv) and odo.best() < odo.basic()
    assert odo.by_kind() == {"query": pytest.approx(10.0)}


def _unit(v: list[float]) -> np.ndarray:
    a = np.asarray(v, dtype=float)
    return a / np.linalg.norm(a)


def test_multi_factor_eviction_weighs_diversity_accuracy_recency() -> None:
    # two near-duplicates and one distinct entry: diversity evicts a duplicate
    cache = ResponseCache(3, weights=EvictionWeights(1.0, 0.0, 0.0))
    cache.insert(0, _unit([1, 0, 0]), "a", 0)
    cache.insert(1, _unit([1, 0.05, 0]), "b", 1)
    cache.insert(2, _unit([0, 1, 0]), "c", 2)
    cache.insert(3, _unit([0, 0, 1]), "d", 3)
    assert sorted(e.candidate for e in cache.entries)[-2:] == [2, 3]
    assert {e.candidate for e in cache.entries} & {0, 1} != set()
    # accuracy: the entry whose repeated answers disagree goes first
    cache = ResponseCache(2, weights=EvictionWeights(0.0, 1.0, 0.0))
    cache.insert(0, _unit([1, 0]), "x", 0)
    cache.insert(0, _unit([1, 0]), "y", 1)  # disagreement
    cache.insert(1, _unit([0, 1]), "z", 2)
    cache.insert(1, _unit([0, 1]), "z", 3)  # agreement
    cache.insert(2, _unit([1, 1]), "w", 4)
    assert {e.candidate for e in cache.entries} == {1, 2}
    # recency: the least recently used goes first (as LRU does)
    for policy in ("multi", "lru"):
        cache = ResponseCache(2, policy=policy, weights=EvictionWeights(0.0, 0.0, 1.0))  # type: ignore[arg-type]
        e0 = cache.insert(0, _unit([1, 0]), "a", 0)
        cache.insert(1, _unit([0, 1]), "b", 1)
        cache.touch(e0, 5)
        cache.insert(2, _unit([1, 1]), "c", 6)
        assert {e.candidate for e in cache.entries} == {0, 2}


def test_calibration_fit_recovers_a_logistic_curve() -> None:
    rng = np.random.default_rng(0)
    s = rng.uniform(0, 1, 4000)
    y = rng.random(4000) < Calibration(0.6, 0.05)(s)
    cal = fit_calibration(s, y)
    assert cal.tau == pytest.approx(0.6, abs=0.02) and cal.width == pytest.approx(0.05, abs=0.015)


@pytest.fixture(scope="module")
def table_setup():  # type: ignore[no-untyped-def]
    table = make_table(8, 3, seed=0)
    texts, keys, same = calibration_pairs(table)
    cal = fit_calibration((EMBED(texts) @ EMBED(keys).T).ravel(), same.ravel())
    return table, keys, cal


def test_workload_repeats_and_checker(table_setup) -> None:  # type: ignore[no-untyped-def]
    table, _, _ = table_setup
    seq = make_sequence(table, 100, seed=0)
    assert len(seq.texts) == 100 and len(set(seq.truth)) < 40  # queries repeat
    c = seq.truth[0]
    assert check_answer(table, c, f"It is {table.answer(c)}.")
    assert not check_answer(table, c, "I don't know.")
    llm = TableLLM(table)
    assert llm(table.questions()[5]) == table.answer(5)
    assert llm(seq.texts[0]) == "I don't know."  # only canonical questions are understood


def test_session_reuses_the_cache_and_stays_within_budget(table_setup) -> None:  # type: ignore[no-untyped-def]
    table, keys, cal = table_setup
    llm = TableLLM(table)
    cfg = LDPCacheConfig(math.inf, 50, eps_decision=40.0, eps_query=40.0, threshold=0.5)
    s = LDPCacheSession(cfg, keys, table.questions(), llm, EMBED, cal, seed=0)
    q = table.paraphrase(4, 0)
    first, second = s.step(q), s.step(table.paraphrase(4, 1))
    assert first.sent and first.released == 4 and first.answer == table.answer(4)
    assert not second.sent and second.answer == table.answer(4) and len(llm.calls) == 1
    # epoch 1 + its send, then epoch 2 opened for the reuse (charged at its start)
    assert second.spent == pytest.approx(120.0) and s.accountant.by_kind()["query"] == 40.0
    # a budget filter: the spent epsilon never passes it, and reuses continue after it
    cfg = LDPCacheConfig(10.0, 60, planned_send_fraction=0.2)
    s = LDPCacheSession(cfg, keys, table.questions(), TableLLM(table), EMBED, cal, seed=1)
    out = s.run(make_sequence(table, 60, seed=1).texts)
    assert out[-1].spent <= 10.0 + 1e-9 and s.accountant.by_kind().keys() <= {"decision", "query"}


def test_budget_plan() -> None:
    e1, eq = LDPCacheConfig(100.0, 100, planned_send_fraction=0.19, decision_share=0.25).plan()
    assert (e1, eq) == (pytest.approx(1.25), pytest.approx(3.75))
    es, eq = LDPCacheConfig(100.0, 100, decision="rr", planned_send_fraction=0.2).plan()
    assert (es, eq) == (pytest.approx(0.5), pytest.approx(2.5))
    assert LDPCacheConfig(100.0, 50, decision="always").plan() == (0.0, 2.0)
    with pytest.raises(ConfigError):
        LDPCacheConfig(100.0, 50, eps_query=1.0).plan()


def test_per_query_baseline_spends_linearly(table_setup) -> None:  # type: ignore[no-untyped-def]
    table, keys, _ = table_setup
    b = PerQueryLDP(30.0, 30, keys, table.questions(), TableLLM(table), EMBED, seed=0)
    out = b.run(make_sequence(table, 30, seed=0).texts)
    spent = np.array([r.spent for r in out])
    assert all(r.sent for r in out) and fit_exponent(np.arange(1, 31), spent) == pytest.approx(1)


def test_chat_asker_goes_through_the_llm_layer(table_setup) -> None:  # type: ignore[no-untyped-def]
    table, keys, cal = table_setup
    answer = TableLLM(table)
    llm = FunctionLLM(lambda msgs, tools, schema: answer(msgs[-1]["content"]))
    ask = chat_asker(llm, system="Answer from the table.")
    cfg = LDPCacheConfig(math.inf, 10, eps_decision=40.0, eps_query=40.0)
    s = LDPCacheSession(cfg, keys, table.questions(), ask, EMBED, cal, seed=0)
    r = s.step(table.paraphrase(7, 2))
    assert r.sent and r.answer == table.answer(7)
    assert llm.calls[0][0]["role"] == "system"
    assert llm.calls[0][1]["content"] == table.questions()[7]  # the raw wording never leaves
