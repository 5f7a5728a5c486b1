"""Multi-objective environments for offline multi-objective RL (AETDICE and its baselines).

Every environment is a Gymnasium ``Env`` whose ``step`` returns the *reward vector* as a
float64 numpy array of shape ``(K,)`` (the MO-Gymnasium convention) and the same vector in
``info["rewards"]``; ``reward_names`` names the ``K`` components. Episodes last at most
``horizon`` steps (then ``truncated``).

- ``dst`` (Deep-Sea-Treasure style): a submarine starts top-left of an 11 x 10 sea whose
  floor holds ten treasures (values 1 ... 124, the classic layout); reward vector
  ``(treasure, -1 per step)``; reaching a treasure ends the episode. Its Pareto front
  ``(1,-1), (2,-3), ..., (50,-14), (74,-17), (124,-19)`` is mostly *not convex*: most
  front points are no weighted-sum optimum. Option ``slip`` (default 0): the probability
  that a move is replaced by a uniformly random one (a current).
- ``resource`` (resource gathering): a 5 x 5 grid, home at the bottom middle, gold in the
  top-left corner, a gem in the top-right corner; reward vector ``(gold, gem)``, +1 in a
  component each time that resource is brought home (the episode goes on, so several
  trips are possible); the agent carries at most one of each. Enemy cells guard the gem:
  stepping on one, the agent is attacked with probability ``attack`` (default 0.5) and
  loses what it carries. ``horizon`` default 14.
- ``point`` (continuous): a point on ``[-1, 1]`` starting at 0, action a velocity in
  ``[-1, 1]`` (step ``0.25 a`` plus Gaussian noise ``noise``, default 0.05); reward vector
  ``(1 if x > 0.75 else 0, 1 if x < -0.75 else 0)``: two goals at opposite ends, so the
  components conflict. ``horizon`` default 16.

The gridworlds are tabular: ``env.model()`` returns their exact ``TabularModel``
(transition probabilities ``P (S, A, S)``, reward vectors ``R (S, A, S, K)``, which
transitions end the episode ``done (S, A, S)``, start distribution ``mu0 (S,)``,
``horizon``), which the exact dynamic programme and the exact policy evaluation of
``aetdice`` use; the methods themselves only see datasets (``mo_data``). ``make_mo_env(
"dst:slip=0.1")`` builds one from a spec string. Gymnasium gives the ``Env``/``spaces``
API; the worlds are ours.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from optiforge.errors import ConfigError

__all__ = ["MO_ENVS", "MOEnv", "PointMO", "TabularMOEnv", "TabularModel", "dst_model", "make_mo_env",
           "resource_model"]  # fmt: skip

MOVES = ((-1, 0), (1, 0), (0, -1), (0, 1))  # up, down, left, right


@dataclass(frozen=True)
class TabularModel:
    """A finite-horizon multi-objective MDP, exactly."""

    P: np.ndarray
    """(S, A, S) transition probabilities."""
    R: np.ndarray
    """(S, A, S, K) reward vector of each transition."""
    done: np.ndarray
    """(S, A, S) bool: the transition ends the episode."""
    mu0: np.ndarray
    """(S,) start distribution."""
    horizon: int
    reward_names: tuple[str, ...]
    cell: np.ndarray | None = None
    """(S,) the grid cell ``row * cols + col`` of each state (what scripted policies aim at)."""

    @property
    def n_states(self) -> int:
        return int(self.P.shape[0])

    @property
    def n_actions(self) -> int:
        return int(self.P.shape[1])

    @property
    def n_rewards(self) -> int:
        return int(self.R.shape[-1])


class TabularMOEnv(gym.Env):  # type: ignore[type-arg]
    """A Gymnasium environment sampling a ``TabularModel``: ``Discrete(S)`` observations
    (the state index), ``Discrete(A)`` actions, the reward vector as the reward."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, model: TabularModel, name: str = "tabular") -> None:
        self._model, self.name = model, name
        self.observation_space = spaces.Discrete(model.n_states)
        self.action_space = spaces.Discrete(model.n_actions)
        self.reward_names = model.reward_names
        self.horizon = model.horizon
        self.s, self.t = 0, 0

    def model(self) -> TabularModel:
        return self._model

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[int, dict[str, Any]]:  # fmt: skip
        super().reset(seed=seed)
        self.s = int(self.np_random.choice(self._model.n_states, p=self._model.mu0))
        self.t = 0
        return self.s, {}

    def step(self, action: Any) -> tuple[int, np.ndarray, bool, bool, dict[str, Any]]:
        m, a = self._model, int(action)
        s2 = int(self.np_random.choice(m.n_states, p=m.P[self.s, a]))
        r = m.R[self.s, a, s2].astype(np.float64)
        term = bool(m.done[self.s, a, s2])
        self.s, self.t = s2, self.t + 1
        return s2, r, term, (not term) and self.t >= m.horizon, {"rewards": r.copy()}


# ----------------------------------------------------------------------------- DST
DST_TREASURES = ((1, 0, 1.0), (2, 1, 2.0), (3, 2, 3.0), (4, 3, 5.0), (4, 4, 8.0),
                 (4, 5, 16.0), (7, 6, 24.0), (7, 7, 50.0), (9, 8, 74.0), (10, 9, 124.0))  # fmt: skip
"""(row, column, value): the classic Deep-Sea-Treasure floor (rows below are rock)."""


def dst_model(slip: float = 0.0, horizon: int = 20) -> TabularModel:
    """The DST-style sea as an exact model (see the module docstring). States are the
    water and treasure cells in row-major order; the start is (0, 0)."""
    if not 0.0 <= slip <= 1.0:
        raise ConfigError(f"dst: slip must lie in [0, 1], got {slip}")
    rows, cols = 11, 10
    depth = {c: r for r, c, _ in DST_TREASURES}
    value = {(r, c): v for r, c, v in DST_TREASURES}
    cells = [(r, c) for r in range(rows) for c in range(cols) if r <= depth[c]]
    index = {rc: i for i, rc in enumerate(cells)}
    S, A = len(cells), 4
    P = np.zeros((S, A, S))
    R = np.zeros((S, A, S, 2))
    done = np.zeros((S, A, S), dtype=bool)
    for i, (r, c) in enumerate(cells):
        if (r, c) in value:  # treasures are absorbing (never left: entering one ends it)
            P[i, :, i] = 1.0
            done[i, :, i] = True
            continue
        for a in range(A):
            probs = np.full(A, slip / A)
            probs[a] += 1.0 - slip
            for b, p in enumerate(probs):
                if p == 0:
                    continue
                nr, nc = r + MOVES[b][0], c + MOVES[b][1]
                j = index.get((nr, nc), i)
                P[i, a, j] += p
                R[i, a, j] = (value.get(cells[j], 0.0), -1.0)
                done[i, a, j] = cells[j] in value
    mu0 = np.zeros(S)
    mu0[index[(0, 0)]] = 1.0
    cell = np.array([r * cols + c for r, c in cells])
    return TabularModel(P, R, done, mu0, horizon, ("treasure", "time"), cell)


# ------------------------------------------------------------------------ resource
def resource_model(attack: float = 0.5, horizon: int = 14) -> TabularModel:
    """The resource-gathering grid as an exact model (see the module docstring).
    State index ``((row * 5 + col) * 2 + gold) * 2 + gem`` (carried bits)."""
    if not 0.0 <= attack <= 1.0:
        raise ConfigError(f"resource: attack must lie in [0, 1], got {attack}")
    n = 5
    home, gold, gem = (4, 2), (0, 0), (0, 4)
    enemies = {(1, 4), (0, 3)}
    S, A = n * n * 4, 4

    def sid(r: int, c: int, g: int, m: int) -> int:
        return ((r * n + c) * 2 + g) * 2 + m

    P = np.zeros((S, A, S))
    R = np.zeros((S, A, S, 2))
    done = np.zeros((S, A, S), dtype=bool)
    for r in range(n):
        for c in range(n):
            for g in (0, 1):
                for m in (0, 1):
                    i = sid(r, c, g, m)
                    for a in range(A):
                        nr = min(max(r + MOVES[a][0], 0), n - 1)
                        nc = min(max(c + MOVES[a][1], 0), n - 1)
                        g2 = 1 if (nr, nc) == gold else g
                        m2 = 1 if (nr, nc) == gem else m
                        outcomes = [(1.0, g2, m2)]
                        if (nr, nc) in enemies and attack > 0:
                            outcomes = [(1.0 - attack, g2, m2), (attack, 0, 0)]
                        for p, gg, mm in outcomes:
                            if p == 0:
                                continue
                            rew = np.zeros(2)
                            if (nr, nc) == home:
                                rew[:] = (gg, mm)
                                gg, mm = 0, 0
                            j = sid(nr, nc, gg, mm)
                            P[i, a, j] += p
                            R[i, a, j] = rew
    mu0 = np.zeros(S)
    mu0[sid(*home, 0, 0)] = 1.0
    cell = np.arange(S) // 4
    return TabularModel(P, R, done, mu0, horizon, ("gold", "gem"), cell)


# -------------------------------------------------------------------------- point
class PointMO(gym.Env):  # type: ignore[type-arg]
    """The continuous two-goal point (see the module docstring). Observation ``(x,)``
    float32; action ``(v,)`` in ``[-1, 1]``; reward vector ``(right goal, left goal)``."""

    metadata: dict[str, Any] = {"render_modes": []}
    reward_names: tuple[str, ...] = ("right", "left")

    def __init__(self, noise: float = 0.05, horizon: int = 16) -> None:
        self.noise, self.horizon = float(noise), int(horizon)
        self.observation_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        self.x, self.t = 0.0, 0

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:  # fmt: skip
        super().reset(seed=seed)
        self.x, self.t = 0.0, 0
        return np.array([self.x], dtype=np.float32), {}

    def step(self, action: Any) -> tuple[np.ndarray, np.ndarray, bool, bool, dict[str, Any]]:
        v = float(np.clip(np.asarray(action, dtype=np.float64).reshape(-1)[0], -1.0, 1.0))
        x = self.x + 0.25 * v + self.noise * float(self.np_random.standard_normal())
        self.x = float(np.clip(x, -1.0, 1.0))
        self.t += 1
        r = np.array([float(self.x > 0.75), float(self.x < -0.75)])
        return (np.array([self.x], dtype=np.float32), r, False, self.t >= self.horizon,
                {"rewards": r.copy()})  # fmt: skip


MO_ENVS = ("dst", "resource", "point")


MOEnv = TabularMOEnv | PointMO


def make_mo_env(spec: str) -> MOEnv:
    """``"dst[:slip=..,horizon=..]"``, ``"resource[:attack=..,horizon=..]"`` or
    ``"point[:noise=..,horizon=..]"``; ``ConfigError`` on anything else."""
    name, _, opts = spec.partition(":")
    kw: dict[str, Any] = {}
    for part in filter(None, opts.split(",")):
        key, sep, val = part.partition("=")
        try:
            kw[key.strip()] = int(val) if key.strip() == "horizon" else float(val)
        except ValueError:
            raise ConfigError(f"{spec!r}: option {part!r} needs a number") from None
        if not sep:
            raise ConfigError(f"{spec!r}: option {part!r} is not key=value")
    try:
        if name == "dst":
            return TabularMOEnv(dst_model(**kw), name)
        if name == "resource":
            return TabularMOEnv(resource_model(**kw), name)
        if name == "point":
            return PointMO(**kw)
    except TypeError as e:
        raise ConfigError(f"{spec!r}: {e}") from None
    raise ConfigError(f"unknown multi-objective environment {name!r} (known: {', '.join(MO_ENVS)})")
