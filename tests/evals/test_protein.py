"""The protein suite: metric definitions on hand-made rankings, landscapes, and the
harness's scoring of strategies in the sandbox."""

from __future__ import annotations

import math

import numpy as np
import pytest

from optiforge.errors import ConfigError
from optiforge.evals.registry import get_benchmark, resolve_task
from optiforge.evals.suites.protein.landscape import Landscape
from optiforge.evals.suites.protein.metrics import (
    average_precision,
    mrr,
    ndcg_at_k,
    pass_at_k,
    ranking_metrics,
    recall_at_k,
    relevant,
    spearman_of,
)

CORE = '''
def score(variant, ctx):
    """buried hydrophobics"""
    return sum(ctx["burial"][p] * (props.hydrophobic(n) - props.hydrophobic(w))
               for p, w, n in variant["mutations"])
'''


def test_metric_definitions_on_a_hand_made_ranking() -> None:
    fitness = [0.0, 9.0, 1.0, 8.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]  # top decile: index 1
    rel = relevant(fitness)
    assert rel == {1}
    ranking = [0, 2, 1, 3, 4, 5, 6, 7, 8, 9]  # the best variant at rank 3
    assert pass_at_k(ranking, rel, 2) == 0.0 and pass_at_k(ranking, rel, 3) == 1.0
    assert mrr(ranking, rel) == pytest.approx(1 / 3)
    assert average_precision(ranking, rel) == pytest.approx(1 / 3)
    ideal = sorted(range(10), key=lambda i: -fitness[i])
    assert ndcg_at_k(ideal, fitness) == pytest.approx(1.0)
    assert ndcg_at_k(ideal[::-1], fitness) < ndcg_at_k(ranking, fitness) < 1.0
    # MAP over two relevant items at ranks 1 and 4: (1/1 + 2/4) / 2
    assert average_precision([5, 0, 1, 6], {5, 6}) == pytest.approx(0.75)


def test_the_unsaturated_metrics_see_the_whole_ranking() -> None:
    """recall@k and Spearman move when the order below the first hit changes (pass@5 and
    MRR do not)."""
    fitness = [float(i) for i in range(100)]  # top decile: 90..99
    rel = relevant(fitness)
    best_first = list(range(99, -1, -1))
    # one relevant variant first, then the rest of the top decile far down
    one_hit = [99, *range(0, 90), *range(90, 99)]
    assert recall_at_k(best_first, rel, 10) == 1.0
    assert recall_at_k(one_hit, rel, 10) == pytest.approx(0.1)
    assert pass_at_k(one_hit, rel, 5) == pass_at_k(best_first, rel, 5) == 1.0
    assert mrr(one_hit, rel) == mrr(best_first, rel) == 1.0
    assert spearman_of(fitness, fitness) == pytest.approx(1.0)
    assert spearman_of([-f for f in fitness], fitness) == pytest.approx(-1.0)
    assert spearman_of([1.0] * 100, fitness) == 0.0
    m = ranking_metrics(one_hit, fitness)
    assert m["spearman"] < 0.5 < ranking_metrics(best_first, fitness)["spearman"]


def test_landscapes_are_seeded_and_epistasis_is_tunable() -> None:
    a, b = (
        Landscape("x", "thermostability", 7, 30, 0.0),
        Landscape("x", "thermostability", 7, 30, 0.0),
    )
    pool = a.pool(50)
    assert pool == b.pool(50) and a.wt == b.wt
    assert all(1 <= len(v["mutations"]) <= 3 for v in pool)
    for v in pool:  # no couplings: fitness is the weighted mechanisms plus the small noise
        add = sum(a.weights[k] * x for k, x in a.additive(v["sequence"]).items())
        assert abs(a.fitness(v["sequence"]) - add) < 5 * a.noise
    rugged = Landscape("x", "thermostability", 7, 30, 1.0)
    epi = [abs(rugged.epistatic(v["sequence"])) for v in pool]
    assert max(epi) > 0.3 and a.fitness(a.wt) == pytest.approx(0.0, abs=5 * a.noise)


def test_a_strategy_is_scored_in_the_sandbox_on_the_unseen_pool() -> None:
    task = resolve_task("protein/thermostability-a@dev")
    good = task.evaluate({"blocks": {"core": CORE}, "weights": {"core": 1.0}})
    flipped = task.evaluate({"blocks": {"core": CORE}, "weights": {"core": -1.0}})
    assert good.passed and set(good.metrics) >= {"pass@5", "mrr", "map", "ndcg@5"}
    assert good.value == good.metrics["ndcg@5"] > flipped.value  # the mechanism is real
    assert good.metrics["map"] > flipped.metrics["map"]
    assert "proxy_gravy_delta" in good.metrics


def test_a_failing_block_fails_the_candidate_with_its_reason() -> None:
    task = resolve_task("protein/solubility-a@dev")
    bad = task.evaluate({"blocks": {"oops": "def score(variant, ctx):\n    return 1 / 0\n"}})
    assert not bad.passed and "block oops: ZeroDivisionError" in bad.details["reason"]
    none = task.evaluate({"blocks": {"x": "y = 1\n"}})
    assert not none.passed and "defines no score" in none.details["reason"]
    assert not task.evaluate({"weights": {}}).passed


def test_measurements_are_held_in_only() -> None:
    task = resolve_task("protein/solubility-a@dev")
    values = task.measure([0, 1])
    assert all(math.isfinite(v) for v in values)
    with pytest.raises(ConfigError, match="no held-in variant 300"):
        task.measure([300])


def test_splits_and_the_initial_heuristics_leave_room() -> None:
    bench = get_benchmark("protein")
    assert [len(bench.tasks(s)) for s in bench.splits] == [4, 4]
    props = {t.landscape.property for t in bench.tasks("heldout")}
    assert props == {"thermostability", "solubility"}
    # a random ranking's MAP sits near the relevant share (0.1); the metrics separate
    task = bench.tasks("dev")[0]
    truth = [task.landscape.fitness(v["sequence"]) for v in task._pools[1]]
    rng = np.random.default_rng(0)
    maps = [ranking_metrics(list(rng.permutation(len(truth))), truth)["map"] for _ in range(20)]
    assert 0.05 < float(np.mean(maps)) < 0.2
