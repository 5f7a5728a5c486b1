"""Claim: offline KnowEvo's final strategy ranks unseen variants better than its initial
heuristics AND than random mutation at the same budgets (measurements and candidate
tests), over several fresh landscapes.

The measure is Spearman's correlation with the true fitness on each landscape's test
pool (never measured by the agent; ``protein/metrics.py`` says why not pass@5 or MRR).
The margin is the measured spread: the claim holds when the lower end of the one-sided
95% Student-t interval of the paired differences (one per landscape and seed) is above
zero. Measured here (6 landscapes, budget 120, 3 tests per expansion): knowevo - initial
+0.241 (sd 0.130), knowevo - random mutation +0.089 (sd 0.053). The weaker stand-in, random
mutation under another seed put in knowevo's place, fails it (vs random mutation -0.027,
sd 0.136, lower end -0.139), although it passes "beats the initial heuristics" alone
(+0.126, sd 0.112): that part alone does not discriminate, the pair does.
"""

from __future__ import annotations

import math
import os
import statistics
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
from scipy.stats import t as student_t

from optiforge.agents.kit import RunContext
from optiforge.agents.knowevo import KnowEvoConfig, build
from optiforge.agents.knowevo.baselines import BASELINES
from optiforge.agents.knowevo.blocks import initial_strategy
from optiforge.evals.suites.protein import ProteinTask
from optiforge.evals.suites.protein.landscape import Landscape
from optiforge.evals.suites.protein.metrics import spearman_of

LANDSCAPES = 6
BUDGET = 120
CONFIG = KnowEvoConfig(tests_per_expansion=3)
Method = Callable[[ProteinTask, int], dict[str, Any]]


def landscape_task(s: int) -> ProteinTask:
    """A fresh landscape per seed, the two properties alternating (not a suite task)."""
    prop = ("thermostability", "solubility")[s % 2]
    return ProteinTask(name=f"claim-{s}", split="dev",
                       landscape=Landscape(f"claim-{s}", prop, 7000 + s, 40, 0.5))  # fmt: skip


def knowevo(task: ProteinTask, seed: int) -> dict[str, Any]:
    run = replace(build(task, CONFIG, BUDGET), durable=False)
    return dict(run.execute(RunContext(seed=seed)).best_candidate)


def random_mutation(task: ProteinTask, seed: int) -> dict[str, Any]:
    return dict(
        BASELINES["random-mutation"](task, RunContext(seed=seed), BUDGET, CONFIG).best_candidate
    )


def random_mutation_reseeded(task: ProteinTask, seed: int) -> dict[str, Any]:
    """The weaker stand-in: random mutation, another seed than the reference's."""
    return random_mutation(task, seed + 1000)


def lower_bound(diffs: list[float]) -> float:
    """Lower end of the one-sided 95% Student-t interval of the mean of ``diffs``."""
    se = statistics.stdev(diffs) / math.sqrt(len(diffs))
    return statistics.fmean(diffs) - float(student_t.ppf(0.95, len(diffs) - 1)) * se


def claim(method: Method) -> tuple[float, float, list[list[float]]]:
    """``(lower bound vs initial, lower bound vs random mutation, rows)``; a row is the
    test-pool Spearman of [initial, method, random mutation] on one landscape."""
    rows = []
    for s in range(LANDSCAPES):
        task = landscape_task(s)
        finals = [initial_strategy(), method(task, s), random_mutation(task, s)]
        outs = task.score_strategies(finals, pool="test")  # one sandbox run for the three
        truth = [task.landscape.fitness(v["sequence"]) for v in task._pools[1]]
        rows.append([spearman_of(o["scores"], truth) for o in outs])
    vs_init = lower_bound([r[1] - r[0] for r in rows])
    vs_random = lower_bound([r[1] - r[2] for r in rows])
    return vs_init, vs_random, rows


@pytest.mark.slow
@pytest.mark.parametrize(
    "method,holds",
    [
        (knowevo, True),
        pytest.param(random_mutation_reseeded, False, marks=pytest.mark.skipif(
            not os.environ.get("OPTIFORGE_CLAIM_NEGATIVES"),
            reason="the stand-in's run (as slow again); OPTIFORGE_CLAIM_NEGATIVES=1 runs it")),
    ],
    ids=["knowevo", "stand-in-random-mutation"],
)  # fmt: skip
def test_knowevo_beats_its_initial_heuristics_and_random_mutation(
    method: Method, holds: bool
) -> None:
    vs_init, vs_random, rows = claim(method)
    assert (vs_init > 0 and vs_random > 0) == holds, (vs_init, vs_random, rows)
