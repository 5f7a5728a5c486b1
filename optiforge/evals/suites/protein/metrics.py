"""Ranking metrics of the ``protein`` suite, computed by the harness from a strategy's
ranking of a pool and the pool's hidden fitness.

Definitions (``ranking``: pool indices best first; ``fitness``: true values, higher better):

- **relevant set** R: the variants whose true fitness is in the pool's top decile
  (``fitness >= the 90th percentile``; at least one variant).
- **pass@k** (k = 5 in reports): 1 if any of the first ``k`` ranked variants is in R, else 0 (its mean over
  seeds is the pass rate).
- **MRR**: ``1 / r`` for the rank ``r`` (1-based) of the first variant of R in the ranking.
- **MAP**: average precision over the whole ranking,
  ``(1/|R|) * sum over ranks r holding a variant of R of precision@r``.
- **NDCG@5**: ``DCG@5 / IDCG@5`` with ``DCG@5 = sum_{r=1..5} g(r) / log2(r + 1)`` and graded
  gain ``g`` = the variant's true-fitness percentile in the pool (0 worst .. 1 best);
  ``IDCG@5`` is the DCG of the pool sorted by true fitness. **NDCG@30** is the same with
  ``k = 30`` (a tenth of a 300-variant test pool).
- **recall@30**: the fraction of R found in the first 30 ranked variants (|R| is about 30:
  a ranking that puts the true top decile first scores 1).
- **spearman**: Spearman's rank correlation of the strategy's scores with the true fitness
  over the whole pool (ties averaged).

Why the last three (REFERENCE.md, "Ranking metrics"): pass@5 and MRR look only at the
first relevant variant, and on these landscapes the initial heuristics already put one
in the top 5 on most tasks (pass@5 saturates at 1, MRR near it), so they cannot show an
improvement; NDCG@5 rests on five variants. MAP (its R = the whole pool's top decile),
NDCG@30, recall@30 and Spearman use the whole ranking or its top tenth, so a better
strategy moves them; Spearman is also the quantity the agents optimise on held-in
measurements, so held-in and test numbers compare directly.
"""

from __future__ import annotations

import math

import numpy as np


def relevant(fitness: list[float], quantile: float = 0.9) -> set[int]:
    """Indices in the top ``1 - quantile`` of ``fitness`` (at least the best one)."""
    f = np.asarray(fitness, dtype=float)
    cut = float(np.quantile(f, quantile))
    out = {i for i, v in enumerate(f) if v >= cut}
    return out or {int(np.argmax(f))}


def pass_at_k(ranking: list[int], rel: set[int], k: int) -> float:
    return float(any(i in rel for i in ranking[:k]))


def mrr(ranking: list[int], rel: set[int]) -> float:
    for r, i in enumerate(ranking, start=1):
        if i in rel:
            return 1.0 / r
    return 0.0


def average_precision(ranking: list[int], rel: set[int]) -> float:
    hits, total = 0, 0.0
    for r, i in enumerate(ranking, start=1):
        if i in rel:
            hits += 1
            total += hits / r
    return total / len(rel) if rel else 0.0


def ndcg_at_k(ranking: list[int], fitness: list[float], k: int = 5) -> float:
    f = np.asarray(fitness, dtype=float)
    pct = (np.argsort(np.argsort(f)) / max(len(f) - 1, 1)).tolist()

    def dcg(order: list[int]) -> float:
        return sum(pct[i] / math.log2(r + 1) for r, i in enumerate(order[:k], start=1))

    ideal = dcg(sorted(range(len(f)), key=lambda i: -f[i]))
    return dcg(ranking) / ideal if ideal > 0 else 0.0


def recall_at_k(ranking: list[int], rel: set[int], k: int) -> float:
    """The fraction of ``rel`` among the first ``k`` ranked items."""
    return sum(i in rel for i in ranking[:k]) / len(rel) if rel else 0.0


def spearman_of(scores: list[float], fitness: list[float]) -> float:
    """Spearman's rank correlation of ``scores`` with ``fitness`` (0 for a constant one)."""
    from scipy.stats import spearmanr

    if float(np.std(scores)) < 1e-12:
        return 0.0
    rho = float(spearmanr(scores, fitness).statistic)
    return rho if math.isfinite(rho) else 0.0


def ranking_metrics(
    ranking: list[int], fitness: list[float], k: int = 5, scores: list[float] | None = None
) -> dict[str, float]:
    """Every metric of the suite for one ranking (``scores``: the strategy's scores in pool
    order, for ``spearman``; without them it is computed from the ranking's ranks)."""
    rel = relevant(fitness)
    if scores is None:  # the ranking's own order as scores: first ranked = highest
        scores = [0.0] * len(ranking)
        for r, i in enumerate(ranking):
            scores[i] = float(len(ranking) - r)
    return {
        f"pass@{k}": pass_at_k(ranking, rel, k),
        "mrr": mrr(ranking, rel),
        "map": average_precision(ranking, rel),
        "ndcg@5": ndcg_at_k(ranking, fitness, 5),
        "ndcg@30": ndcg_at_k(ranking, fitness, 30),
        "recall@30": recall_at_k(ranking, rel, 30),
        "spearman": spearman_of(scores, fitness),
    }
