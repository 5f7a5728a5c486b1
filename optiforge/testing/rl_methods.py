"""Stand-in RL methods for the ``rl`` suite's and the formulator's tests (the real ones
live in other modules of ``optiforge.solvers.rl``): tiny, fast, and honest about what they
are: a proportional controller toward the goal, with a hyperparameter (``gain``), whose
``run`` also drives the environment for a few steps from the seed it is given (so a test
can check which reset seeds a method draws).

``install(monkeypatch, names)`` registers them under catalogue names (``ENTRIES`` lines,
as another helper's module would be), each with the problem kinds that name solves.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np
import torch

from optiforge.solvers.rl.api import ControlProblem, HParam, RLMethod, RLResult

KINDS_OF: dict[str, frozenset[str]] = {
    "ppo-lag": frozenset({"cmdp", "statewise"}),  # as the baselines module declares them
    "cpo": frozenset({"cmdp", "statewise"}),
    "pcpo": frozenset({"cmdp", "statewise"}),
    "locu": frozenset({"cmdp"}),
    "ascpo": frozenset({"statewise"}),
    "aetdice": frozenset({"mo-offline"}),
    "linear-scalarization": frozenset({"mo-offline"}),
    "markov-dice": frozenset({"mo-offline"}),
}
SEEN: list[dict[str, Any]] = []
"""Every ``run`` call: the method's name, the problem it was given, its seed and the
environment reset seeds it drew."""


class Toward:
    """``a = clip(gain * (goal offset), -1, 1)`` on the point robot (obs[4:6]); zeros on any
    other environment."""

    def __init__(self, gain: float, n_act: int = 2, point: bool = True) -> None:
        self.gain, self.n_act, self.point = gain, n_act, point

    def act(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        if self.point:
            return torch.clamp(self.gain * obs[..., 4:6], -1.0, 1.0)
        return torch.zeros(self.n_act)


def _run(name: str) -> Any:
    def run(problem: ControlProblem, seed: int, **hp: float) -> RLResult:
        resets: list[int] = []
        n_act = 2
        if problem.kind != "mo-offline":
            from optiforge.solvers.rl.envs import make_env

            env = make_env(problem.env)
            gen = np.random.default_rng(seed)
            for _ in range(2):
                s = int(gen.integers(2**31))
                resets.append(s)
                env.reset(seed=s)
                env.step(env.action_space.sample())
            n_act = int(np.prod(env.action_space.shape or (1,)))
            env.close()
        SEEN.append({"method": name, "problem": problem, "seed": seed, "resets": resets, "hp": hp})
        return RLResult(
            policy=Toward(hp["gain"], n_act, problem.env.startswith("point")),
            curve=[{"step": 0.0}],
            extra={"gain": hp["gain"]},
        )

    return run


def fake(name: str, kinds: frozenset[str] | None = None) -> RLMethod:
    return RLMethod(name=name, kinds=kinds or KINDS_OF.get(name, frozenset({"cmdp"})),  # type: ignore[arg-type]
                    description=f"stand-in for {name} (a proportional controller)",
                    hparams={"gain": HParam(0.1, 10.0, 1.0)}, run=_run(name))  # fmt: skip


def install(monkeypatch: Any, names: list[str] | tuple[str, ...]) -> None:
    """Point ``catalogue.ENTRIES[name]`` at a stand-in for each name (pytest monkeypatch)."""
    from optiforge.solvers.rl import catalogue

    module = types.ModuleType("fake_rl_methods")
    for name in names:
        setattr(module, name.replace("-", "_").upper(), fake(name))
        monkeypatch.setitem(catalogue.ENTRIES, name, f"fake_rl_methods:{name.replace('-', '_').upper()}")  # fmt: skip
    monkeypatch.setitem(sys.modules, "fake_rl_methods", module)
