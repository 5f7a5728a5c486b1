"""Environments with constraint costs, the way Safety-Gymnasium defines them.

Convention: every environment here is a Gymnasium ``Env`` whose ``step`` puts the
per-step constraint costs in ``info["costs"]``, a float array of shape ``(m,)`` (one
entry per constraint, ``m = len(env.cost_names)``, all >= 0), and their sum in
``info["cost"]`` (Safety-Gymnasium returns that scalar from ``step``; we keep Gymnasium's
five-tuple so every Gymnasium wrapper still applies).

- ``VelocityCost``: Safety-Gymnasium's velocity tasks (``Safety<Robot>Velocity-v1``): cost
  ``1`` on a step whose forward speed exceeds the robot's threshold (``VELOCITY_LIMITS``:
  Safety-Gymnasium's values, half the speed a PPO agent reaches), on the MuJoCo
  locomotion tasks (``HalfCheetah-v5``, ``Hopper-v5``, ...), which report ``x_velocity``.
- ``PositionLimitCost``: cost ``1`` while ``|x_position|`` (or a chosen state
  coordinate) is beyond a bound (Safety-Gymnasium's "run within a corridor" tasks).
- ``PointHazards``: a small 2-D point robot (a numpy simulation, 0.1 ms a step) driven
  toward a goal among circular hazard regions; cost ``1`` on a step inside a hazard
  (Safety-Gymnasium's ``Goal`` tasks' hazard contact), one constraint per hazard group,
  so several coupled constraints; optionally heavy-tailed noise on the cost
  (``cost_noise``; for ASCPO's claims) and a narrow corridor.

``make_env(spec)`` builds any of them from a string, e.g. ``"HalfCheetah-v5+velocity"``,
``"Hopper-v5+velocity+position:2.0"``, ``"point-hazards"``,
``"point-hazards:groups=3,corridor=0.3"``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from optiforge.errors import ConfigError

# Safety-Gymnasium 1.0's velocity thresholds (its safe_velocity tasks, v1)
VELOCITY_LIMITS: dict[str, float] = {
    "HalfCheetah": 3.2096,
    "Hopper": 0.7402,
    "Walker2d": 2.3415,
    "Ant": 2.6222,
    "Humanoid": 1.4149,
    "Swimmer": 0.2282,
}


class CostWrapper(gym.Wrapper):  # type: ignore[type-arg]
    """Adds one named constraint cost to ``info["costs"]`` (appending to the costs an
    inner wrapper already set) and keeps ``info["cost"]`` their sum."""

    name: str = "cost"

    def __init__(self, env: gym.Env) -> None:  # type: ignore[type-arg]
        super().__init__(env)
        inner = getattr(env, "cost_names", ())
        self.cost_names: tuple[str, ...] = (*inner, self.name)

    def cost(self, obs: np.ndarray, info: dict[str, Any]) -> float:
        raise NotImplementedError

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        obs, rew, term, trunc, info = self.env.step(action)
        prev = np.asarray(info.get("costs", np.zeros(0)), dtype=np.float64)
        costs = np.append(prev, self.cost(obs, info))
        info["costs"] = costs
        info["cost"] = float(costs.sum())
        return obs, float(rew), bool(term), bool(trunc), info


class VelocityCost(CostWrapper):
    """Cost 1 when the forward speed ``|info["x_velocity"]|`` exceeds ``limit``."""

    name = "velocity"

    def __init__(self, env: gym.Env, limit: float | None = None) -> None:  # type: ignore[type-arg]
        super().__init__(env)
        if limit is None:
            robot = env.spec.id.split("-")[0] if env.spec is not None else ""
            if robot not in VELOCITY_LIMITS:
                raise ConfigError(f"no velocity limit known for {robot!r}; pass limit=")
            limit = VELOCITY_LIMITS[robot]
        self.limit = float(limit)

    def cost(self, obs: np.ndarray, info: dict[str, Any]) -> float:
        if "x_velocity" not in info:
            raise ConfigError("VelocityCost needs an environment that reports info['x_velocity']")
        return float(abs(info["x_velocity"]) > self.limit)


class PositionLimitCost(CostWrapper):
    """Cost 1 while ``|info[key]|`` is beyond ``bound`` (default key ``x_position``)."""

    name = "position"

    def __init__(self, env: gym.Env, bound: float, key: str = "x_position") -> None:  # type: ignore[type-arg]
        super().__init__(env)
        self.bound, self.key = float(bound), key

    def cost(self, obs: np.ndarray, info: dict[str, Any]) -> float:
        if self.key not in info:
            raise ConfigError(f"PositionLimitCost needs info[{self.key!r}] from the environment")
        return float(abs(info[self.key]) > self.bound)


class PointHazards(gym.Env):  # type: ignore[type-arg]
    """A point robot in the plane: state ``(x, y, vx, vy)``, action a bounded force
    ``(ax, ay)``; reward the decrease of the distance to the goal (+1 on reaching it, which
    re-draws nothing: the episode ends); ``groups`` groups of circular hazards placed
    between start and goal, constraint ``i`` costs 1 on a step inside a group-``i`` hazard.
    ``corridor`` > 0 adds walls at ``|y| = corridor`` costing on contact as one more
    constraint (a narrow feasible region). ``cost_noise`` > 0 adds Student-t noise with 2.5
    degrees of freedom (finite variance, heavy tails) times that scale to every cost, the
    true contact indicator staying in ``info["costs_true"]``.

    Observation (``8 + 3 * groups`` floats): position, velocity, goal offset, distance
    to goal, corridor margin, and per group the offset to and distance from its nearest
    hazard's edge. Deterministic layout for a given ``layout_seed``; ``reset(seed)`` draws
    the start."""

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, groups: int = 2, hazards_per_group: int = 2, corridor: float = 0.0,
                 cost_noise: float = 0.0, horizon: int = 200, layout_seed: int = 0) -> None:  # fmt: skip
        if groups < 1 or hazards_per_group < 1:
            raise ConfigError("PointHazards needs groups >= 1 and hazards_per_group >= 1")
        self.groups, self.corridor, self.cost_noise = groups, float(corridor), float(cost_noise)
        self.horizon, self.dt, self.radius = horizon, 0.1, 0.25
        rng = np.random.default_rng(layout_seed)
        self.goal = np.array([2.0, 0.0])
        # hazards between start (-2, 0) and goal, jittered off the straight line
        centres = []
        for _ in range(groups):
            xs = rng.uniform(-1.2, 1.2, size=hazards_per_group)
            ys = rng.uniform(-0.35, 0.35, size=hazards_per_group)
            centres.append(np.stack([xs, ys], axis=1))
        self.hazards = centres
        n_obs = 8 + 3 * groups
        self.observation_space = spaces.Box(-np.inf, np.inf, shape=(n_obs,), dtype=np.float32)
        self.action_space = spaces.Box(-1.0, 1.0, shape=(2,), dtype=np.float32)
        names = [f"hazard{i}" for i in range(groups)] + (["corridor"] if corridor > 0 else [])
        self.cost_names = tuple(names)
        self._np_random_costs = np.random.default_rng(layout_seed + 1)

    def _obs(self) -> np.ndarray:
        pos, vel = self.state[:2], self.state[2:]
        off = self.goal - pos
        margin = (self.corridor - abs(pos[1])) if self.corridor > 0 else 1.0
        parts = [pos, vel, off, [np.linalg.norm(off), margin]]
        for c in self.hazards:
            d = np.linalg.norm(c - pos, axis=1)
            j = int(np.argmin(d))
            parts.append([*(c[j] - pos), d[j] - self.radius])
        return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts]).astype(np.float32)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None
              ) -> tuple[np.ndarray, dict[str, Any]]:  # fmt: skip
        super().reset(seed=seed)
        if seed is not None:
            self._np_random_costs = np.random.default_rng(seed + 7919)
        start = np.array([-2.0, 0.0]) + self.np_random.uniform(-0.1, 0.1, size=2)
        if self.corridor > 0:
            start[1] = np.clip(start[1], -0.5 * self.corridor, 0.5 * self.corridor)
        self.state = np.concatenate([start, np.zeros(2)])
        self.t = 0
        return self._obs(), {}

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        a = np.clip(np.asarray(action, dtype=np.float64), -1.0, 1.0)
        pos, vel = self.state[:2], self.state[2:]
        before = np.linalg.norm(self.goal - pos)
        vel = 0.8 * vel + a * self.dt * 5.0
        pos = pos + vel * self.dt
        self.state = np.concatenate([pos, vel])
        self.t += 1
        after = np.linalg.norm(self.goal - pos)
        reached = after < 0.2
        reward = float(before - after) + (1.0 if reached else 0.0)
        true = [float(np.min(np.linalg.norm(c - pos, axis=1)) < self.radius) for c in self.hazards]
        if self.corridor > 0:
            true.append(float(abs(pos[1]) > self.corridor))
        costs = np.asarray(true)
        if self.cost_noise > 0:
            noise = self._np_random_costs.standard_t(2.5, size=costs.shape) * self.cost_noise
            costs = np.maximum(costs + noise, 0.0)
        info = {"costs": costs, "cost": float(costs.sum()), "costs_true": np.asarray(true),
                "x_position": float(pos[0])}  # fmt: skip
        return self._obs(), reward, bool(reached), self.t >= self.horizon, info


def _kwargs(text: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for part in filter(None, text.split(",")):
        key, sep, value = part.partition("=")
        if not sep:
            raise ConfigError(f"environment option {part!r} is not key=value")
        try:
            out[key.strip()] = float(value)
        except ValueError:
            raise ConfigError(f"environment option {key!r} needs a number, got {value!r}") from None
    return out


def make_env(spec: str, **kwargs: Any) -> gym.Env:  # type: ignore[type-arg]
    """Build an environment with costs from a spec string (see the module docstring):
    ``"point-hazards[:k=v,...]"`` or ``"<Gymnasium id>+velocity[:limit]+position:<bound>"``.
    A spec without a cost raises ``ConfigError``."""
    head, *wrappers = spec.split("+")
    name, _, opts = head.partition(":")
    if name == "point-hazards":
        o = _kwargs(opts)
        ints = {"groups", "hazards_per_group", "horizon", "layout_seed"}
        args: dict[str, Any] = {k: (int(v) if k in ints else v) for k, v in o.items()}
        try:
            env: gym.Env = PointHazards(**args, **kwargs)  # type: ignore[type-arg]
        except TypeError as e:
            raise ConfigError(f"point-hazards: {e}") from None
        return env
    if not wrappers:
        raise ConfigError(f"{spec!r} names no constraint cost (add +velocity or +position:<bound>)")
    try:
        env = gym.make(name, **kwargs)
    except gym.error.Error as e:
        raise ConfigError(f"unknown environment {name!r}: {e}") from None
    builders: dict[str, Callable[[gym.Env, str], gym.Env]] = {  # type: ignore[type-arg]
        "velocity": lambda e, a: VelocityCost(e, float(a) if a else None),
        "position": lambda e, a: PositionLimitCost(e, float(a) if a else 1.0),
    }
    for w in wrappers:
        key, _, arg = w.partition(":")
        if key not in builders:
            raise ConfigError(f"unknown cost {key!r} in {spec!r} (known: {', '.join(builders)})")
        env = builders[key](env, arg)
    return env
