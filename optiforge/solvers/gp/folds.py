"""Seeded k-fold test sets for held-out scoring of GP kernels (shared by the hdbo scorer
and Kernel Discovery's selection, so both score on the same sets)."""

from __future__ import annotations

import torch


def kfold_splits(n: int, folds: int, seed: int) -> list[list[int]]:
    """``min(folds, n)`` disjoint test-index sets covering ``range(n)`` (a seeded permutation;
    ``folds >= n`` is leave-one-out). Every candidate scored with the same ``(n, folds, seed)``
    gets the same sets, so two kernels can be compared point by point."""
    if folds < 2 or n < 2:
        raise ValueError(f"k-fold scoring needs >= 2 folds and >= 2 points (folds={folds}, n={n})")
    g = torch.Generator().manual_seed(int(seed) * 1_000_003 + 0xF01D)
    perm = torch.randperm(n, generator=g).tolist()
    k = min(folds, n)
    return [sorted(perm[i::k]) for i in range(k)]
