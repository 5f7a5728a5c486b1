"""EPB's graph nodes called directly (``nodes.collect``, ``nodes.step``) on a stand-in
``NCOTask`` whose program scores are computed in the parent from a hash of each program's
source: fast, and it counts the sandbox batches the nodes ask for."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
from langgraph.graph import END
from langgraph.runtime import Runtime

from optiforge.agents.epb import nodes
from optiforge.agents.epb.config import EPBConfig
from optiforge.agents.kit.context import AgentContext
from optiforge.evals.protocol import Score
from optiforge.evals.suites.nco.protocol import NCOTask

N = 6


def _weight(src: str) -> float:
    """A program's stand-in behaviour: a weight in [-1, 1] drawn from its source."""
    return int(hashlib.sha256(src.encode()).hexdigest()[:6], 16) / 0xFFFFFF * 2 - 1


class FakeNCO:
    """An ``NCOTask`` on 6-city instances; the teacher goes to the nearest city, mostly."""

    suite, name, split, metric = "nco", "fake", "dev", "gap_pct"
    higher_is_better, description, budget = False, "a stand-in", 2

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def evaluate(self, candidate: Any, sandbox: Any = None) -> Score:
        raise AssertionError("nodes never score a candidate")

    def teacher_trajectories(self, count: int, seed: int) -> list[dict[str, Any]]:
        rng = np.random.default_rng(seed)
        out = []
        for _ in range(count):
            xy = rng.random((N, 2))
            tour, probs = [0], []
            while len(tour) < N:
                d = np.linalg.norm(xy - xy[tour[-1]], axis=1)
                logit = np.where(np.isin(np.arange(N), tour), -np.inf, -8 * d)
                p = np.exp(logit - logit.max())
                probs.append((p / p.sum()).tolist())
                tour.append(int(np.argmax(p)))
            out.append({"coords": xy, "tour": tour, "probs": probs})
        return out

    def practice_instances(self, count: int, seed: int) -> np.ndarray:
        return np.random.default_rng(20_000 + seed).random((count, N, 2))

    def program_scores(self, programs: dict[str, str], trajectories: list[dict[str, Any]],
                       sandbox: Any = None) -> list[dict[str, Any]]:  # fmt: skip
        self.batches.append(sorted(programs))
        out = []
        for tr in trajectories:
            xy, tour = np.asarray(tr["coords"]), tr["tour"]
            feats: list[list[float]] = []
            z: dict[str, list[list[float | None]]] = {k: [] for k in programs}
            for t in range(N - 1):
                seen = set(tour[: t + 1])
                d = np.linalg.norm(xy - xy[tour[t]], axis=1)
                feats.append([1.0, t / (N - 1), float(d.mean())])
                left = [j for j in range(N) if j not in seen]
                for k, src in programs.items():
                    w = _weight(src)
                    s = -w * d + (1 - abs(w)) * np.linalg.norm(xy - 0.5, axis=1)
                    m, sd = s[left].mean(), s[left].std() + 1e-9
                    z[k].append([None if j in seen else float((s[j] - m) / sd) for j in range(N)])
            out.append({"features": feats, "z": z})
        return out

    def construct(self, portfolio: dict[str, Any], instances: list[np.ndarray],
                  sandbox: Any = None) -> list[list[int] | None]:  # fmt: skip
        return [list(range(N)) for _ in instances]


def test_collect_then_a_block_one_step_called_directly() -> None:
    task = FakeNCO()
    assert isinstance(task, NCOTask)
    config = EPBConfig(train_tours=4, val_tours=2, router_steps=30, guard_tours=4,
                       seeds=["nearest", "farthest"])  # fmt: skip
    ctx: nodes.Ctx = AgentContext(task=task, config=config, eval_budget=1, seed=0)
    runtime = Runtime(context=ctx)

    first = nodes.collect({}, runtime)
    assert first["bank"] == {k: first["atoms"][k] for k in ("nearest", "farthest")}
    assert first["fit"]["names"] == ["nearest", "farthest"] and np.isfinite(first["val"])
    assert first["rounds"] == 0 and not first["done"] and nodes.after(first) == "step"
    assert task.batches == [["farthest", "nearest"]]  # the seed bank in one sandbox batch

    second = nodes.step(first, runtime)  # type: ignore[arg-type]
    assert second["rounds"] == 1 and second["done"] and nodes.after(second) == END
    (event,) = second["history"]
    assert event["block"] == "I" and event["blamed"] in first["bank"]
    assert event["candidates"] == len(config.blends)  # the blamed program blended with the other
    # the seed bank's scores came from the run's memo: only the blends went to the sandbox
    assert len(task.batches) == 2 and len(task.batches[1]) == len(config.blends)
    assert second["val"] <= first["val"]
    if "accepted" in event:  # an accepted edit lowered the held-out divergence
        assert event["val_after"] < event["val_before"] and second["bank"] != first["bank"]
