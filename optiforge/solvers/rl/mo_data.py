"""Offline datasets for multi-objective RL: episodes of seeded behaviour policies on the
``mo_envs`` environments, stored as flat arrays (one row per transition).

Behaviour (``behaviour=``):

- ``"random"``: uniform actions.
- ``"scripted"``: per episode a plan of way-points drawn at random (DST: one treasure;
  resource: a random order of gold / gem / home trips; point: a goal end and a random
  switch time), followed by shortest-path moves (greedy on the most likely successor),
  with epsilon-greedy noise, epsilon drawn per episode from ``(0.05, 0.2, 0.4)``.
- ``"mixture"`` (default): per episode ``random`` with probability 0.2, else ``scripted``.

Arrays (``T`` transitions): ``obs`` ``(T,)`` int (tabular) or ``(T, 1)`` float (point),
``act`` ``(T,)`` int / ``(T, 1)`` float, ``rew`` ``(T, K)``, ``next_obs``, ``last``
``(T,)`` bool (the episode's final transition: terminated or truncated), ``t`` ``(T,)``
step index, ``episode`` ``(T,)``. ``save`` / ``load`` write and read ``.npz``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from optiforge.errors import ConfigError
from optiforge.solvers.rl.mo_envs import TabularModel, TabularMOEnv, make_mo_env

__all__ = ["BEHAVIOURS", "collect_dataset", "load", "save"]

BEHAVIOURS = ("random", "scripted", "mixture")
EPSILONS = (0.05, 0.2, 0.4)


def _distances(model: TabularModel, target_cells: set[int]) -> tuple[np.ndarray, np.ndarray]:
    """Shortest-path step counts to a target cell on the most-likely-successor graph and
    the greedy action of each state (ties by lowest action index)."""
    assert model.cell is not None
    mode = model.P.argmax(axis=2)  # (S, A)
    S = model.n_states
    dist = np.full(S, np.inf)
    dist[[s for s in range(S) if int(model.cell[s]) in target_cells]] = 0.0
    for _ in range(S):
        new = np.minimum(dist, 1.0 + dist[mode].min(axis=1))
        if np.array_equal(new, dist):
            break
        dist = new
    greedy = dist[mode].argmin(axis=1)
    return dist, greedy


def _plans(env_name: str, model: TabularModel, gen: np.random.Generator) -> list[set[int]]:
    if env_name == "dst":
        assert model.cell is not None
        treasures = sorted({int(model.cell[s]) for s in range(model.n_states)
                            if model.done[s, :, s].all()})  # fmt: skip
        return [{int(gen.choice(treasures))}]
    home, gold, gem = 4 * 5 + 2, 0, 4
    trips = [[gold, home], [gem, home], [gold, gem, home], [gem, gold, home]]
    plan: list[set[int]] = []
    for _ in range(3):
        plan += [{c} for c in trips[int(gen.integers(len(trips)))]]
    return plan


def collect_dataset(env_spec: str, episodes: int, seed: int = 0, behaviour: str = "mixture"
                    ) -> dict[str, np.ndarray]:  # fmt: skip
    """Roll out ``episodes`` episodes of ``behaviour`` (see the module docstring) on
    ``env_spec`` (a ``make_mo_env`` spec); every draw comes from ``seed``."""
    if behaviour not in BEHAVIOURS:
        raise ConfigError(f"unknown behaviour {behaviour!r} (known: {', '.join(BEHAVIOURS)})")
    if episodes < 1:
        raise ConfigError("collect_dataset needs episodes >= 1")
    env = make_mo_env(env_spec)
    name = env_spec.partition(":")[0]
    gen = np.random.default_rng(seed)
    model: TabularModel | None = env.model() if isinstance(env, TabularMOEnv) else None
    cache: dict[frozenset[int], np.ndarray] = {}
    rows: dict[str, list[Any]] = {k: [] for k in ("obs", "act", "rew", "next_obs", "last", "t",
                                                  "episode")}  # fmt: skip
    for ep in range(episodes):
        o, _ = env.reset(seed=int(gen.integers(2**31)))
        env.action_space.seed(int(gen.integers(2**31)))
        rand = behaviour == "random" or (behaviour == "mixture" and gen.random() < 0.2)
        eps = 1.0 if rand else float(gen.choice(EPSILONS))
        plan = _plans(name, model, gen) if model is not None else []
        goal, switch = float(gen.choice([-1.0, 1.0])), int(gen.integers(1, env.horizon))
        t, done = 0, False
        while not done:
            if gen.random() < eps:
                a: Any = env.action_space.sample()
            elif model is not None:
                assert model.cell is not None
                while len(plan) > 1 and int(model.cell[o]) in plan[0]:
                    plan.pop(0)
                key = frozenset(plan[0])
                if key not in cache:
                    cache[key] = _distances(model, set(plan[0]))[1]
                a = int(cache[key][o])
            else:
                g = goal if t < switch else -goal
                x = float(np.asarray(o).reshape(-1)[0])
                a = np.array([np.clip(3.0 * (g - x), -1, 1)], dtype=np.float32)
            o2, r, term, trunc, _ = env.step(a)
            done = bool(term or trunc)
            for k, v in (("obs", o), ("act", a), ("rew", r), ("next_obs", o2), ("last", done),
                         ("t", t), ("episode", ep)):  # fmt: skip
                rows[k].append(v)
            o, t = o2, t + 1
    env.close()
    out = {k: np.asarray(v) for k, v in rows.items()}
    out["rew"] = out["rew"].astype(np.float64)
    return out


def save(data: dict[str, np.ndarray], path: str | Path) -> None:
    np.savez_compressed(path, **data)  # type: ignore[arg-type]


def load(path: str | Path) -> dict[str, np.ndarray]:
    with np.load(path) as z:
        return {k: z[k] for k in z.files}
