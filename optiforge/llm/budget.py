"""A thread-safe spending budget shared by LLM calls and evaluation (sandbox) code."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from optiforge import deadline
from optiforge.errors import BudgetExceeded
from optiforge.llm.types import CallRecord


class BudgetConfig(BaseModel):
    """Budget caps as they appear in YAML/CLI configs (None = unlimited)."""

    model_config = ConfigDict(extra="forbid")

    max_calls: int | None = Field(default=None, ge=0)
    """Provider calls (cache hits are free)."""
    max_tokens: int | None = Field(default=None, ge=0)
    """Prompt + completion tokens."""
    max_usd: float | None = Field(default=None, ge=0)
    """Dollars, from litellm's local price map."""
    max_wall_s: float | None = Field(default=None, ge=0)
    """Seconds since the budget was created."""
    max_sandbox_s: float | None = Field(default=None, ge=0)
    """Seconds of sandboxed evaluation compute."""


class Budget:
    """Caps on calls, tokens, USD, wall time and sandbox seconds; raises before overspending.

    Calls: ``check_before_call`` refuses call N+1 when ``max_calls`` is N (calls in flight
    count, so concurrent threads cannot overshoot when they use ``call_slot``). Tokens and
    USD are only known after a call, so the check refuses once usage is at/over the cap.
    """

    def __init__(
        self,
        max_calls: int | None = None,
        max_tokens: int | None = None,
        max_usd: float | None = None,
        max_wall_s: float | None = None,
        max_sandbox_s: float | None = None,
    ) -> None:
        cfg = BudgetConfig(
            max_calls=max_calls,
            max_tokens=max_tokens,
            max_usd=max_usd,
            max_wall_s=max_wall_s,
            max_sandbox_s=max_sandbox_s,
        )  # validates (e.g. negative caps) with a clear pydantic error
        self.config = cfg
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self.calls = 0
        self.tokens = 0
        self.usd = 0.0
        self.unpriced_calls = 0
        """Calls whose cost litellm's price map does not know (local or unlisted models):
        ``usd`` leaves them out, so a report says "unknown", never $0."""
        self.sandbox_s = 0.0
        self._in_flight = 0

    @classmethod
    def from_config(cls, cfg: BudgetConfig) -> Budget:
        """Build from a validated config model."""
        return cls(**cfg.model_dump())

    @property
    def elapsed_s(self) -> float:
        """Wall seconds since the budget was created."""
        return time.monotonic() - self._start

    def _check_locked(self) -> None:
        c = self.config
        if c.max_calls is not None and self.calls + self._in_flight >= c.max_calls:
            raise BudgetExceeded(
                f"LLM call budget exhausted: {self.calls} of {c.max_calls} calls used",
                limit="calls",
                used=self.calls,
                cap=c.max_calls,
            )
        if c.max_tokens is not None and self.tokens >= c.max_tokens:
            raise BudgetExceeded(
                f"token budget exhausted: {self.tokens} of {c.max_tokens} tokens used",
                limit="tokens",
                used=self.tokens,
                cap=c.max_tokens,
            )
        if c.max_usd is not None and self.usd >= c.max_usd:
            raise BudgetExceeded(
                f"USD budget exhausted: ${self.usd:.4f} of ${c.max_usd:.4f} spent",
                limit="usd",
                used=self.usd,
                cap=c.max_usd,
            )
        self._check_wall_locked()

    def _check_wall_locked(self) -> None:
        c = self.config
        elapsed = self.elapsed_s
        if c.max_wall_s is not None and elapsed >= c.max_wall_s:
            raise BudgetExceeded(
                f"wall-time budget exhausted: {elapsed:.1f} s of {c.max_wall_s:.1f} s",
                limit="wall_s",
                used=elapsed,
                cap=c.max_wall_s,
            )
        if deadline.expired():  # the command's cap (counted from its start: ``deadline``)
            raise BudgetExceeded(
                f"wall-time budget exhausted: the command's --max-wall-s "
                f"{c.max_wall_s if c.max_wall_s is not None else '?'} s is up",
                limit="wall_s",
                used=elapsed,
                cap=c.max_wall_s or 0.0,
            )

    def check_wall(self) -> None:
        """Raise ``BudgetExceeded`` once the wall-time cap (or the command's deadline) is up."""
        with self._lock:
            self._check_wall_locked()

    def wall_remaining_s(self) -> float | None:
        """Seconds left under the wall-time cap and the command's deadline (None: neither),
        to clamp a call's or an evaluation's timeout."""
        cap = self.config.max_wall_s
        left = [x for x in (deadline.remaining_s(),) if x is not None]
        if cap is not None:
            left.append(cap - self.elapsed_s)
        return min(left) if left else None

    def check_before_call(self) -> None:
        """Raise ``BudgetExceeded`` if one more LLM call would exceed a cap."""
        with self._lock:
            self._check_locked()

    @contextlib.contextmanager
    def call_slot(self) -> Iterator[None]:
        """Check and reserve one call atomically for the duration of the block."""
        with self._lock:
            self._check_locked()
            self._in_flight += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1

    def calls_left(self) -> int | None:
        """LLM calls still allowed under ``max_calls`` (None: no call cap), counting calls in
        flight, so a caller can size a batch of concurrent calls deterministically."""
        with self._lock:
            cap = self.config.max_calls
            return None if cap is None else max(0, cap - self.calls - self._in_flight)

    def charge(self, record: CallRecord) -> None:
        """Add one call's usage; cache hits (``record.cached``) cost nothing."""
        if record.cached:
            return
        with self._lock:
            self.calls += 1
            self.tokens += record.tokens_in + record.tokens_out
            self.usd += record.cost_usd
            if not record.cost_known:
                self.unpriced_calls += 1

    def check_sandbox(self, seconds: float = 0.0) -> None:
        """Raise ``BudgetExceeded`` if sandbox usage is at the cap or ``seconds`` more would pass it."""
        with self._lock:
            cap = self.config.max_sandbox_s
            if cap is not None and (self.sandbox_s >= cap or self.sandbox_s + seconds > cap):
                raise BudgetExceeded(
                    f"sandbox budget exhausted: {self.sandbox_s:.1f} s used of {cap:.1f} s"
                    + (f" (asked for {seconds:.1f} s more)" if seconds else ""),
                    limit="sandbox_s",
                    used=self.sandbox_s,
                    cap=cap,
                )
            self._check_wall_locked()

    def sandbox_remaining_s(self) -> float | None:
        """Sandbox seconds left (None = unlimited), to clamp an evaluation's timeout."""
        with self._lock:
            cap = self.config.max_sandbox_s
            return None if cap is None else max(0.0, cap - self.sandbox_s)

    def charge_sandbox(self, seconds: float) -> None:
        """Add ``seconds`` of sandboxed evaluation compute."""
        if seconds < 0:
            raise ValueError(f"charge_sandbox needs seconds >= 0, got {seconds}")
        with self._lock:
            self.sandbox_s += float(seconds)

    def restore(
        self,
        *,
        calls: int = 0,
        tokens: int = 0,
        usd: float = 0.0,
        sandbox_s: float = 0.0,
        unpriced_calls: int = 0,
    ) -> None:
        """Count usage spent before this object existed (a resumed pipeline's finished
        nodes): later checks see it against the same caps."""
        with self._lock:
            self.calls += int(calls)
            self.tokens += int(tokens)
            self.usd += float(usd)
            self.sandbox_s += float(sandbox_s)
            self.unpriced_calls += int(unpriced_calls)

    def snapshot(self) -> dict[str, Any]:
        """``{resource: {"used": x, "cap": y | None}}`` for calls, tokens, usd, wall_s, sandbox_s."""
        with self._lock:
            c = self.config
            return {
                "calls": {"used": self.calls, "cap": c.max_calls},
                "tokens": {"used": self.tokens, "cap": c.max_tokens},
                "usd": {"used": self.usd, "cap": c.max_usd},
                "wall_s": {"used": self.elapsed_s, "cap": c.max_wall_s},
                "sandbox_s": {"used": self.sandbox_s, "cap": c.max_sandbox_s},
                "unpriced_calls": {"used": self.unpriced_calls, "cap": None},
            }
