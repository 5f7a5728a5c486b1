"""Euclidean TSP on the unit square: instances, tour lengths, and a strong local search
(2-opt plus Or-opt moves from several greedy and random starts) that the ``nco`` suite
uses as its reference ("best known": exact for most n = 20 instances, within about 1-2%
of optimal at n = 100 in the literature's experience with 2-opt + Or-opt; it is not
Concorde, and the suite says so)."""

from __future__ import annotations

import numpy as np


def uniform_instances(n: int, count: int, seed: int) -> np.ndarray:
    """``count x n x 2`` cities uniform on the unit square."""
    return np.random.default_rng([seed, n, 1]).random((count, n, 2))


def clustered_instances(n: int, count: int, seed: int, clusters: int = 4) -> np.ndarray:
    """``count x n x 2`` cities in Gaussian clusters (a distribution shift), clipped."""
    rng = np.random.default_rng([seed, n, 2])
    centers = rng.random((count, clusters, 2))
    which = rng.integers(clusters, size=(count, n))
    pts = centers[np.arange(count)[:, None], which] + rng.normal(0, 0.06, (count, n, 2))
    return np.clip(pts, 0.0, 1.0)


def distances(coords: np.ndarray) -> np.ndarray:
    d = coords[:, None, :] - coords[None, :, :]
    return np.sqrt((d**2).sum(-1))


def tour_length(coords: np.ndarray, tour: list[int] | np.ndarray) -> float:
    """Length of the closed tour visiting ``coords`` in the order ``tour``."""
    t = np.asarray(tour)
    p = coords[t]
    return float(np.sqrt(((p - np.roll(p, -1, axis=0)) ** 2).sum(-1)).sum())


def _two_opt(d: np.ndarray, tour: np.ndarray) -> np.ndarray:
    n = len(tour)
    improved, passes = True, 0
    while improved and passes < 50 * n:  # each pass strictly shortens the tour; a cap all the same
        improved, passes = False, passes + 1
        for i in range(n - 1):
            a, b = tour[i], tour[i + 1]
            c, e = tour[i + 2 : n], tour[np.r_[i + 3 : n, 0][: n - i - 2]]
            delta = d[a, c] + d[b, e] - d[a, b] - d[c, e]
            if len(delta) and delta.min() < -1e-9:
                j = i + 2 + int(delta.argmin())
                tour[i + 1 : j + 1] = tour[i + 1 : j + 1][::-1]
                improved = True
    return tour


def _or_opt(d: np.ndarray, tour: np.ndarray) -> tuple[np.ndarray, bool]:
    n = len(tour)
    for seg in (1, 2, 3):
        for i in range(n):
            idx = [(i + k) % n for k in range(seg)]
            prev, nxt = tour[(i - 1) % n], tour[(i + seg) % n]
            s0, s1 = tour[idx[0]], tour[idx[-1]]
            gain = d[prev, s0] + d[s1, nxt] - d[prev, nxt]
            rest = [tour[(i + seg + k) % n] for k in range(n - seg)]
            for j in range(len(rest) - 1):
                u, v = rest[j], rest[j + 1]
                for a, b in ((s0, s1), (s1, s0)):
                    if d[u, a] + d[b, v] - d[u, v] < gain - 1e-9:
                        segment = (
                            [tour[k] for k in idx] if a == s0 else [tour[k] for k in idx][::-1]
                        )
                        return np.array(rest[: j + 1] + segment + rest[j + 1 :]), True
    return tour, False


def local_search(coords: np.ndarray, restarts: int = 8, seed: int = 0) -> tuple[list[int], float]:
    """The best tour of 2-opt + Or-opt from a nearest-neighbour start and ``restarts - 1``
    random starts: ``(tour, length)``."""
    coords = np.asarray(coords, dtype=np.float64)
    d = distances(coords)
    n = len(coords)
    rng = np.random.default_rng(seed)
    best, best_len = None, np.inf
    for r in range(max(1, restarts)):
        if r == 0:
            tour, left = [0], set(range(1, n))
            while left:
                nxt = min(left, key=lambda j: d[tour[-1], j])
                tour.append(nxt)
                left.remove(nxt)
            t = np.array(tour)
        else:
            t = rng.permutation(n)
        moved, rounds = True, 0
        while moved and rounds < 20 * n:
            t = _two_opt(d, t)
            t, moved = _or_opt(d, t)
            rounds += 1
        length = tour_length(coords, t)
        if length < best_len:
            best, best_len = t.tolist(), length
    assert best is not None
    return [int(x) for x in best], float(best_len)


def nearest_neighbour(coords: np.ndarray, start: int = 0) -> list[int]:
    """The nearest-neighbour tour from ``start`` (a classic constructive baseline)."""
    d = distances(np.asarray(coords, dtype=np.float64))
    tour, left = [start], set(range(len(d))) - {start}
    while left:
        nxt = min(left, key=lambda j: d[tour[-1], j])
        tour.append(nxt)
        left.remove(nxt)
    return tour


def farthest_insertion(coords: np.ndarray, start: int = 0) -> list[int]:
    """The farthest-insertion tour (a classic constructive baseline, Rosenkrantz et al.
    1977): repeatedly take the unvisited city farthest from the tour and insert it where
    it lengthens the tour least; rotated to begin at ``start``."""
    d = distances(np.asarray(coords, dtype=np.float64))
    n = len(d)
    if n < 3:
        return list(range(start, n)) + list(range(start))
    far = int(np.argmax(d[start]))
    tour = [start, far]
    left = set(range(n)) - set(tour)
    near = np.minimum(d[start], d[far])  # each city's distance to the tour
    while left:
        j = max(left, key=lambda k: near[k])
        nxt = tour[1:] + tour[:1]
        cost = [d[a, j] + d[j, b] - d[a, b] for a, b in zip(tour, nxt, strict=True)]
        i = int(np.argmin(cost))
        tour.insert(i + 1, j)
        left.remove(j)
        near = np.minimum(near, d[j])
    k = tour.index(start)
    return tour[k:] + tour[:k]
