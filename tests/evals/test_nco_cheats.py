"""Red team: a program cannot read the teacher's (or the reference's) answer in the nco
suite. The sandbox gets the instances only; the teacher is queried in the parent along the
portfolio's own tours. Fails if any teacher tour reaches a file the programs can read."""

from __future__ import annotations

import numpy as np

from optiforge.evals.registry import resolve_task
from optiforge.solvers.nco.programs import FEATURES, SEED_BANK

PEEK = '''
import json, os

def _answers():
    """Every list of integer lists in any JSON file of the work dir: a teacher's tours."""
    found = []
    for root, _, names in os.walk("."):
        for name in names:
            try:
                with open(os.path.join(root, name)) as f:
                    data = json.load(f)
            except Exception:
                continue
            if isinstance(data, dict):
                for k, v in data.items():
                    if k != "instances" and isinstance(v, list) and v and isinstance(v[0], list) \\
                            and v[0] and isinstance(v[0][0], int):
                        found.append((data.get("instances"), v))
    return found

_FOUND = _answers()

def scores(state):
    row = state["dist"][state["current"]]
    out = [-row[j] for j in range(state["n"])]
    for instances, tours in _FOUND:
        for coords, tour in zip(instances or [], tours):
            if coords == state["coords"] and len(tour) > state["step"]:
                out[tour[state["step"]]] = 1e9  # the teacher's next city
    return out
'''


def _portfolio(source: str) -> dict[str, object]:
    return {"programs": {"p": source}, "router": np.zeros((1, len(FEATURES))).tolist()}


def test_a_program_cannot_read_the_teachers_tours() -> None:
    task = resolve_task("nco/tsp20@dev")
    honest = task.evaluate(_portfolio(SEED_BANK["nearest"]))
    cheat = task.evaluate(_portfolio(PEEK))
    assert honest.passed and cheat.passed
    assert cheat.metrics["agreement"] < 0.95, cheat.metrics
    assert cheat.metrics["router_accuracy"] < 0.95, cheat.metrics
    # the peeking program is nearest neighbour where it finds nothing: the same numbers
    assert cheat.metrics["agreement"] == honest.metrics["agreement"]
