"""A small local cache of (released query, response) pairs with multi-factor eviction.

An entry is keyed by the *released* (privatized) candidate query, whose response the LLM
gave: the response answers that query, whatever the user asked. The cache lives on the
user's device; what it stores is the released query (already public), the response, and
local bookkeeping.

Eviction (``policy="multi"``) removes the entry of least value
``w_div * diversity + w_acc * accuracy + w_rec * recency`` where

- ``diversity = 1 - max cos(entry, other entry)`` (an entry close to another adds little),
- ``accuracy`` is the entry's estimated probability that its response is right (a Beta
  posterior on agreement among repeated answers to the same released query, prior mean the
  LLM's assumed accuracy, prior strength 2),
- ``recency = exp(-(t - last_used) / tau)`` with ``tau`` = capacity (steps since the entry
  was last inserted, confirmed or reused).

``policy="lru"`` evicts the least recently used entry (the comparison in the benchmark).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from optiforge.errors import ConfigError


@dataclass
class CacheEntry:
    """One released query and the responses it got."""

    candidate: int
    """Index of the released candidate query."""
    key: np.ndarray
    """``dim`` unit embedding of the candidate's key text."""
    votes: Counter[str] = field(default_factory=Counter)
    inserted: int = 0
    last_used: int = 0
    hits: int = 0

    @property
    def response(self) -> str:
        """The majority response (first seen wins ties)."""
        return self.votes.most_common(1)[0][0]

    def accuracy(self, prior: float) -> float:
        """Estimated probability that the majority response is right: ``prior`` for a single
        answer (one vote says nothing about agreement), else ``(2 prior + m) / (2 + n)``
        with ``m`` majority votes of ``n`` (agreement raises it, disagreement lowers it)."""
        n = sum(self.votes.values())
        m = self.votes.most_common(1)[0][1]
        return prior if n <= 1 else (2 * prior + m) / (2 + n)


@dataclass
class EvictionWeights:
    """Weights of the eviction value (all >= 0)."""

    diversity: float = 1.0
    accuracy: float = 1.0
    recency: float = 1.0


class ResponseCache:
    """At most ``capacity`` entries; ``insert`` evicts by the chosen policy when full."""

    def __init__(
        self,
        capacity: int,
        *,
        policy: Literal["multi", "lru"] = "multi",
        weights: EvictionWeights | None = None,
        llm_accuracy: float = 0.9,
    ) -> None:
        if capacity < 1:
            raise ConfigError(f"cache capacity must be >= 1, got {capacity}")
        if policy not in ("multi", "lru"):
            raise ConfigError(f"unknown eviction policy {policy!r}")
        self.capacity = capacity
        self.policy = policy
        self.weights = weights or EvictionWeights()
        self.llm_accuracy = llm_accuracy
        self.entries: list[CacheEntry] = []
        self.evicted = 0

    def __len__(self) -> int:
        return len(self.entries)

    def keys(self) -> np.ndarray:
        """``m x dim`` stacked entry keys (m = len(self))."""
        return np.stack([e.key for e in self.entries]) if self.entries else np.zeros((0, 0))

    def values(self, t: int) -> np.ndarray:
        """``m`` eviction values at step ``t`` (lower = evicted first)."""
        m = len(self.entries)
        if self.policy == "lru":
            return np.array([float(e.last_used) for e in self.entries])
        keys = self.keys()
        sims = keys @ keys.T
        np.fill_diagonal(sims, -np.inf)
        diversity = 1.0 - (sims.max(axis=1) if m > 1 else np.zeros(m))
        accuracy = np.array([e.accuracy(self.llm_accuracy) for e in self.entries])
        tau = float(self.capacity)
        recency = np.array([math.exp(-(t - e.last_used) / tau) for e in self.entries])
        w = self.weights
        return w.diversity * diversity + w.accuracy * accuracy + w.recency * recency

    def insert(self, candidate: int, key: np.ndarray, response: str, t: int) -> CacheEntry:
        """Add a response to released ``candidate`` (a vote when it is cached already)."""
        for e in self.entries:
            if e.candidate == candidate:
                e.votes[response] += 1
                e.last_used = t
                return e
        if len(self.entries) >= self.capacity:
            self.entries.pop(int(np.argmin(self.values(t))))
            self.evicted += 1
        entry = CacheEntry(candidate, np.asarray(key, dtype=float), Counter({response: 1}), t, t)
        self.entries.append(entry)
        return entry

    def touch(self, entry: CacheEntry, t: int) -> None:
        """Mark ``entry`` as reused at step ``t``."""
        entry.last_used = t
        entry.hits += 1
