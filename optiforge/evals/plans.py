"""What the catalogue suites share (``train``, ``rl``): a candidate is a *plan* naming a
catalogue method and its hyperparameters (data, never code), checked here against the
method's declared ranges with one-line errors, and the random-search draws of the ``tuned``
references.

A method's hyperparameters are a mapping ``name -> HParam`` (``low``, ``high``,
``default``, ``log``, ``kind``; ``optiforge.solvers.train.api.HParam``, which the RL
methods reuse); nothing here imports a method, torch or a suite.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from optiforge.solvers.train.api import HParam

__all__ = [
    "InvalidPlan",
    "check_hparams",
    "draw",
    "hparams_as_data",
    "num",
    "one_line",
    "one_thread",
    "sample_hparams",
]


class InvalidPlan(ValueError):
    """A plan the catalogue cannot run (its message is one line)."""


def num(v: float) -> str:
    return f"{v:.6g}"


def check_hparams(name: str, hparams: Mapping[str, HParam], given: Any) -> dict[str, float]:
    """Every hyperparameter of the method ``name``: ``given`` (an object of numbers, each
    inside its range) over the defaults; ``InvalidPlan`` with one line naming what is
    wrong (not an object, an unknown name, not a finite number, outside its range)."""
    given = given or {}
    if not isinstance(given, dict):
        raise InvalidPlan(f"hparams must be an object of numbers, got {type(given).__name__}")
    unknown = sorted(str(k) for k in given if k not in hparams)
    if unknown:
        raise InvalidPlan(f"{name} has no hyperparameter {', '.join(map(repr, unknown))} "
                          f"(it has {', '.join(sorted(hparams)) or 'none'})")  # fmt: skip
    for k, v in given.items():
        h = hparams[k]
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
            raise InvalidPlan(f"{name}.{k} must be a finite number, got {v!r}")
        tol = 1e-9 * max(abs(h.low), abs(h.high), 1.0)
        if not h.low - tol <= float(v) <= h.high + tol:
            raise InvalidPlan(f"{name}.{k}={num(float(v))} is outside its range "
                              f"[{num(h.low)}, {num(h.high)}]")  # fmt: skip
    return {k: h.clip(float(given.get(k, h.default))) for k, h in hparams.items()}


def hparams_as_data(hparams: Mapping[str, HParam]) -> dict[str, dict[str, Any]]:
    """Per hyperparameter ``low``, ``high``, ``default``, ``log``, ``kind`` (what an agent
    reads of a method's ranges)."""
    return {k: {"low": h.low, "high": h.high, "default": h.default, "log": h.log, "kind": h.kind}
            for k, h in hparams.items()}  # fmt: skip


def draw(h: HParam, rng: random.Random) -> float:
    """One value of ``h``'s range: uniform, on a log scale where ``log``."""
    if h.log and h.low > 0:
        return math.exp(rng.uniform(math.log(h.low), math.log(h.high)))
    return rng.uniform(h.low, h.high)


def sample_hparams(hparams: Mapping[str, HParam], rng: random.Random) -> dict[str, float]:
    """One random-search draw of every hyperparameter (clipped to its range, ints rounded)."""
    out = {k: draw(h, rng) for k, h in hparams.items()}
    return {k: h.clip(out[k]) for k, h in hparams.items()}


def one_line(e: BaseException) -> str:
    """``Type: first line of the message`` (at most 300 characters)."""
    return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:300]


class one_thread:
    """A method runs on one torch thread (timings comparable, no oversubscription)."""

    def __enter__(self) -> None:
        import torch

        self.n = torch.get_num_threads()
        torch.set_num_threads(1)

    def __exit__(self, *exc: object) -> None:
        import torch

        torch.set_num_threads(self.n)
