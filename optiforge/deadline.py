"""The process-wide wall-clock deadline of a spending cap (``--max-wall-s``).

A cap checked between search steps let one LLM call, a model load or a long sandbox
evaluation run far past it (``--max-wall-s 60`` ended at 219 s). So a capped command arms
a deadline here, and what can wait long clamps its own timeout to it:

- an LLM request (``LiteLLM``, the embedded model's server included): its timeout is at
  most the time left, so the call in flight ends at the deadline;
- a sandbox run (``LocalSandbox``, warm or cold): its timeout likewise, so candidates
  still running at the deadline are killed by their own timer (the sandbox's kill path).

Two instants: ``stop_at`` (the cap) and ``hard_at = stop_at + grace``; between them the
harness writes its records and re-measures the best candidate (``harness_grace``), and at
``hard_at`` the watchdog (``optiforge.harness.wallcap``) ends the process whatever it is
doing. Times are epoch seconds (``time.time``) so that worker processes started after the
deadline was armed read the same instants from the environment (``ENV``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator

ENV = "OPTIFORGE_WALL_DEADLINE"
"""``"<stop_at> <hard_at>"`` in epoch seconds, for worker processes."""

MIN_TIMEOUT_S = 0.01
"""A clamped timeout never reaches 0 (a sandbox refuses timeout 0): work started at the
deadline is cut at once instead."""

_state: dict[str, float | bool | None] = {"stop_at": None, "hard_at": None, "grace": False}


def arm(stop_at: float, hard_at: float) -> None:
    """Set the deadline of this process (and of the workers it starts from now on)."""
    if hard_at < stop_at:
        raise ValueError(f"hard_at {hard_at} is before stop_at {stop_at}")
    _state.update(stop_at=float(stop_at), hard_at=float(hard_at), grace=False)
    os.environ[ENV] = f"{stop_at!r} {hard_at!r}"


def disarm() -> None:
    """Forget the deadline (the command is over, or a test is done)."""
    _state.update(stop_at=None, hard_at=None, grace=False)
    os.environ.pop(ENV, None)


def _instants() -> tuple[float | None, float | None]:
    stop, hard = _state["stop_at"], _state["hard_at"]
    if stop is None and ENV in os.environ:  # a worker process: inherited from its parent
        try:
            a, b = (float(x) for x in os.environ[ENV].split())
        except ValueError:
            return None, None
        return a, b
    return (stop if isinstance(stop, float) else None, hard if isinstance(hard, float) else None)


def remaining_s() -> float | None:
    """Seconds left before the deadline that applies now (None: no deadline armed): the cap,
    or inside ``harness_grace`` the hard stop."""
    stop, hard = _instants()
    at = hard if _state["grace"] else stop
    return None if at is None else at - time.time()


def expired() -> bool:
    """Whether the cap's instant has passed."""
    stop, _ = _instants()
    return stop is not None and time.time() >= stop


def clamp(timeout_s: float) -> float:
    """``timeout_s``, or the time left when that is shorter (at least ``MIN_TIMEOUT_S``)."""
    left = remaining_s()
    if left is None:
        return timeout_s
    return max(MIN_TIMEOUT_S, min(float(timeout_s), left))


@contextlib.contextmanager
def harness_grace() -> Iterator[None]:
    """Inside: clamps use the hard stop instead of the cap, so the harness's closing work
    (re-measuring the returned candidate, writing the summary) may use the grace period."""
    before = _state["grace"]
    _state["grace"] = True
    try:
        yield
    finally:
        _state["grace"] = before
