"""Constructive TSP heuristics as programs, and the runner that evaluates a bank of them
(inside the sandbox: program code is untrusted).

A program is Python source defining ``scores(state) -> list[float]``: one score per city
(higher: a better next city; visited cities are masked by the caller). ``state``:
``{"n", "coords" (n x 2), "dist" (n x n), "first", "current", "previous" (the city
before the current one; the first city at the start), "visited" (n booleans), "step"
(cities placed so far, 1..n-1)}``; ``math`` is available.

A portfolio mixes the programs' distributions: program k's distribution is
``softmax(beta_k * z(scores_k))`` over the unvisited cities (``z``: standardized over
them), the router's weights ``w(state) = softmax(W @ features(state))`` mix them, and
the next city is the mixture's argmax (``FEATURES`` are the router's concepts).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np

SEED_BANK: dict[str, str] = {
    "nearest": '''
def scores(state):
    """Nearest neighbour: the closest unvisited city."""
    row = state["dist"][state["current"]]
    return [-row[j] for j in range(state["n"])]
''',
    "insertion": '''
def scores(state):
    """Cheapest insertion between the current city and the start: the smallest detour."""
    d, c, f = state["dist"], state["current"], state["first"]
    return [-(d[c][j] + d[j][f] - d[c][f]) for j in range(state["n"])]
''',
    "farthest": '''
def scores(state):
    """Farthest from the tour so far: claim the outliers before they become detours."""
    d, vis = state["dist"], state["visited"]
    placed = [i for i in range(state["n"]) if vis[i]]
    return [min(d[i][j] for i in placed) for j in range(state["n"])]
''',
    "regret": '''
def scores(state):
    """Regret: cities whose two nearest unvisited neighbours differ most are costly to
    leave for later."""
    d, vis, n = state["dist"], state["visited"], state["n"]
    out = []
    for j in range(n):
        near = sorted(d[j][k] for k in range(n) if not vis[k] and k != j)
        out.append(near[1] - near[0] if len(near) > 1 else 0.0)
    return out
''',
    "direction": '''
def scores(state):
    """Keep going: prefer the city that continues the direction of the last move (a tour
    without zig-zags)."""
    c, xy = state["current"], state["coords"]
    prev = state["previous"]
    dx, dy = xy[c][0] - xy[prev][0], xy[c][1] - xy[prev][1]
    norm = (dx * dx + dy * dy) ** 0.5 + 1e-9
    out = []
    for j in range(state["n"]):
        ex, ey = xy[j][0] - xy[c][0], xy[j][1] - xy[c][1]
        out.append((dx * ex + dy * ey) / (norm * ((ex * ex + ey * ey) ** 0.5 + 1e-9)))
    return out
''',
    "stranding": '''
def scores(state):
    """Do not strand a city: prefer cities whose nearest other unvisited city is far (left
    for later they cost a long detour), less the hop to reach them."""
    d, vis, n, c = state["dist"], state["visited"], state["n"], state["current"]
    left = [k for k in range(n) if not vis[k]]
    out = []
    for j in range(n):
        near = min((d[j][k] for k in left if k != j), default=0.0)
        out.append(near - d[c][j])
    return out
''',
    "homeward": '''
def scores(state):
    """Head home: prefer cities close to the start (matters near the end of the tour)."""
    row = state["dist"][state["first"]]
    return [-row[j] for j in range(state["n"])]
''',
}
"""The seed bank: classic constructive heuristics in the one signature."""

FEATURES = ("bias", "progress", "nearest_gap", "spread", "home_distance", "remaining_centroid")
"""The router's concepts of a state (``features``)."""


def features(state: dict[str, Any]) -> list[float]:
    """Concept features: a bias, the fraction of the tour built, how much closer the nearest
    unvisited city is than the mean one, the spread of the unvisited cities, the current
    city's distance to the start, and its distance to the unvisited cities' centroid."""
    n, d, c, vis = state["n"], state["dist"], state["current"], state["visited"]
    left = [j for j in range(n) if not vis[j]]
    row = [d[c][j] for j in left]
    pts = np.asarray([state["coords"][j] for j in left])
    centroid = pts.mean(0)
    spread = float(np.sqrt(((pts - centroid) ** 2).sum(-1)).mean())
    cc = np.asarray(state["coords"][c])
    return [1.0, state["step"] / n, (float(np.mean(row)) - min(row)) if row else 0.0, spread,
            d[c][state["first"]], float(np.sqrt(((cc - centroid) ** 2).sum()))]  # fmt: skip


def load(source: str, name: str) -> Callable[[dict[str, Any]], list[float]]:
    ns: dict[str, Any] = {"math": math, "__name__": f"program_{name}"}
    exec(compile(source, f"<program {name}>", "exec"), ns)  # noqa: S102  # trusted: runs inside the sandbox (shipped by package_files); the parent never calls it on candidate code
    fn = ns.get("scores")
    if not callable(fn):
        raise ValueError(f"program {name!r} defines no scores(state)")
    return fn  # type: ignore[no-any-return]


def zscores(scores: list[float], visited: list[bool]) -> list[float | None]:
    """A program's scores standardized over the unvisited cities (visited: None)."""
    idx = [j for j, v in enumerate(visited) if not v]
    s = np.asarray([float(scores[j]) for j in idx])
    if not np.all(np.isfinite(s)):
        raise ValueError("a score is not finite")
    z = (s - s.mean()) / (s.std() + 1e-9)
    out: list[float | None] = [None] * len(visited)
    for j, v in zip(idx, z, strict=True):
        out[j] = round(float(v), 4)
    return out


def _dists(scores: list[float], visited: list[bool], beta: float) -> np.ndarray:
    z = np.asarray([-np.inf if v is None else beta * v for v in zscores(scores, visited)])
    e = np.exp(z - z.max())
    return e / e.sum()


def tour_state(
    coords: np.ndarray, dist: list[list[float]], tour: list[int], n: int
) -> dict[str, Any]:
    visited = [False] * n
    for j in tour:
        visited[j] = True
    return {"n": n, "coords": coords.tolist(), "dist": dist, "first": tour[0],
            "current": tour[-1], "previous": tour[-2] if len(tour) > 1 else tour[0],
            "visited": visited, "step": len(tour)}  # fmt: skip


def program_scores(programs: dict[str, str], coords: np.ndarray, tour: list[int]) -> dict[str, Any]:
    """Along a given ``tour``: per step the features and every program's z-scores."""
    n = len(coords)
    d = np.sqrt(((coords[:, None] - coords[None]) ** 2).sum(-1)).tolist()
    fns = {k: load(src, k) for k, src in programs.items()}
    out: dict[str, Any] = {"features": [], "z": {k: [] for k in programs}}
    for t in range(1, n):
        st = tour_state(coords, d, tour[:t], n)
        out["features"].append([round(f, 6) for f in features(st)])
        for k, fn in fns.items():
            out["z"][k].append(zscores(fn(st), st["visited"]))
    return out


def construct(portfolio: dict[str, Any], coords: np.ndarray, start: int = 0) -> dict[str, Any]:
    """Build a tour with a portfolio greedily: ``{"tour", "weights", "z"}`` (router weights
    and every program's z-scores per step, along the tour it builds)."""
    programs, W = portfolio["programs"], np.asarray(portfolio["router"])
    beta = portfolio.get("beta") or {}
    names = list(programs)
    n = len(coords)
    d = np.sqrt(((coords[:, None] - coords[None]) ** 2).sum(-1)).tolist()
    fns = {k: load(programs[k], k) for k in names}
    tour, weights = [start], []
    z: dict[str, list[list[float | None]]] = {k: [] for k in names}
    for _ in range(n - 1):
        st = tour_state(coords, d, tour, n)
        logits = W @ np.asarray(features(st))
        w = np.exp(logits - logits.max())
        w = w / w.sum()
        raw = {k: fns[k](st) for k in names}
        mix = sum(w[i] * _dists(raw[k], st["visited"], beta.get(k, 1.0))
                  for i, k in enumerate(names))  # fmt: skip
        mix = np.where(st["visited"], -1.0, mix)
        tour.append(int(np.argmax(mix)))
        weights.append(w.round(4).tolist())
        for k in names:
            z[k].append(zscores(raw[k], st["visited"]))
    return {"tour": tour, "weights": weights, "z": z}


def run_request(path: str = "request.json", out_path: str = "out.json") -> None:
    """Sandbox entry: ``{"kind": "scores" | "construct", ...}`` -> JSON in ``out_path``
    (collected by the caller: larger than a run's captured stdout)."""
    with open(path) as f:
        req = json.load(f)
    out: list[Any] = []
    for i, coords in enumerate(req["instances"]):
        c = np.asarray(coords)
        try:
            if req["kind"] == "scores":
                out.append(program_scores(req["programs"], c, req["tours"][i]))
            else:
                out.append(construct(req["portfolio"], c))
        except Exception as e:  # noqa: BLE001 - a failing program fails this instance
            out.append({"error": f"{type(e).__name__}: {e}"[:300]})
    with open(out_path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
