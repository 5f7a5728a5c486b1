"""Red team: the protein suite's heldout landscapes cannot be rebuilt from the package.

The generator (``landscape.py``) and the task table (``_SPECS``) are public: anyone, a
strategy's block code included, can run them. A heldout landscape therefore mixes a
secret drawn when its task is built into the generator's seed; the draw is recorded in
the score's details (after evaluation) so the result can be rebuilt afterwards. Fails if
heldout landscapes follow from public seeds again."""

from __future__ import annotations

from typing import Any

import pytest

from optiforge.evals.registry import get_benchmark
from optiforge.evals.suites.protein.benchmark import _SPECS
from optiforge.evals.suites.protein.landscape import Landscape
from optiforge.evals.suites.protein.metrics import ranking_metrics


def _rebuilt_ndcg(task: Any) -> float:
    """NDCG@5 of ranking the task's test pool by the landscape rebuilt from public seeds."""
    name, _, prop, seed, length, eps = next(s for s in _SPECS if s[0] == task.name)
    public = Landscape(name, prop, seed, length, eps)
    test = task._pools[1]
    guess = [public.fitness(v["sequence"]) for v in test]
    truth = [task.landscape.fitness(v["sequence"]) for v in test]
    ranking = sorted(range(len(test)), key=lambda i: (-guess[i], i))
    return float(ranking_metrics(ranking, truth)["ndcg@5"])


# Each build draws a fresh secret, so the rebuilt NDCG@5 is a random variable: one draw of
# solubility-c reached >= 0.9 in 4 of 25 builds (median 0.78), which made a one-draw test fail
# about one run in six. The median over DRAWS builds is the claim (it was 1.0 for every task
# before the secret: the public seed rebuilt the landscape exactly).
DRAWS = 15


@pytest.mark.parametrize("name", [t.name for t in get_benchmark("protein").tasks("heldout")])
def test_heldout_cannot_be_rebuilt_from_the_public_generator(name: str) -> None:
    bench = get_benchmark("protein")
    builds = [next(t for t in bench.tasks("heldout") if t.name == name) for _ in range(DRAWS)]
    public_wt = Landscape(name, *next(s[2:] for s in _SPECS if s[0] == name)).wt
    assert all(task.landscape.wt != public_wt for task in builds)
    ndcg = sorted(_rebuilt_ndcg(task) for task in builds)
    assert ndcg[DRAWS // 2] < 0.9, ndcg


def test_the_draw_is_recorded_after_evaluation_and_rebuilds_the_landscape() -> None:
    from optiforge.evals.suites.protein import heldout_task

    bench = get_benchmark("protein")
    one, two = bench.tasks("heldout")[0], bench.tasks("heldout")[0]
    assert one.landscape.wt != two.landscape.wt  # a fresh draw per task list
    assert [t.landscape.wt for t in bench.tasks("dev")] == [
        t.landscape.wt for t in bench.tasks("dev")
    ]
    assert (
        one.draw is not None
        and one.draw not in one.description
        and one.draw not in str(one.context)
    )
    score = one.evaluate(
        {"blocks": {"b": "def score(variant, ctx):\n    return -len(variant['mutations'])\n"}}
    )
    assert score.passed and score.details["landscape_draw"] == one.draw
    again = heldout_task(one.name, score.details["landscape_draw"])
    assert again.landscape.wt == one.landscape.wt
    assert (
        again.evaluate(
            {"blocks": {"b": "def score(variant, ctx):\n    return -len(variant['mutations'])\n"}}
        ).value
        == score.value
    )
    assert (
        "landscape_draw"
        not in bench.tasks("dev")[0]
        .evaluate({"blocks": {"b": "def score(variant, ctx):\n    return 0.0\n"}})
        .details
    )
