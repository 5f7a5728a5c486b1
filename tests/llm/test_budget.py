"""Budget: refuses before overspending, thread-safe, sandbox seconds."""

from __future__ import annotations

import threading
import time

import pytest
from pydantic import ValidationError

from optiforge.errors import BudgetExceeded
from optiforge.llm import Budget, BudgetConfig, CallRecord


def rec(
    tokens_in: int = 0, tokens_out: int = 0, usd: float = 0.0, cached: bool = False
) -> CallRecord:
    return CallRecord(
        model="m", tokens_in=tokens_in, tokens_out=tokens_out, cost_usd=usd, cached=cached
    )


def test_calls_cap_refuses_call_n_plus_one() -> None:
    b = Budget(max_calls=2)
    for _ in range(2):
        b.check_before_call()
        b.charge(rec())
    with pytest.raises(BudgetExceeded) as info:
        b.check_before_call()
    assert (info.value.limit, info.value.used, info.value.cap) == ("calls", 2, 2)


def test_tokens_and_usd_refuse_once_at_cap() -> None:
    b = Budget(max_tokens=100)
    b.charge(rec(60, 39))
    b.check_before_call()  # 99 < 100: one more call allowed
    b.charge(rec(1, 0))
    with pytest.raises(BudgetExceeded, match="token") as info:
        b.check_before_call()
    assert info.value.limit == "tokens"
    u = Budget(max_usd=0.01)
    u.charge(rec(usd=0.02))
    with pytest.raises(BudgetExceeded) as info:
        u.check_before_call()
    assert info.value.limit == "usd"


def test_cached_records_are_free() -> None:
    b = Budget(max_calls=1)
    b.charge(rec(10, 10, 1.0, cached=True))
    b.check_before_call()
    assert b.snapshot()["calls"]["used"] == 0 and b.tokens == 0


def test_wall_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    # the budget's own clock, stepped by hand: a loaded machine that stalls this thread
    # between two lines cannot exhaust (or fail to exhaust) the cap
    import types

    from optiforge.llm import budget as budget_mod

    now = [1000.0]
    monkeypatch.setattr(budget_mod, "time", types.SimpleNamespace(monotonic=lambda: now[0]))
    b = Budget(max_wall_s=0.05)
    now[0] += 0.049
    b.check_before_call()
    now[0] += 0.002
    with pytest.raises(BudgetExceeded) as info:
        b.check_before_call()
    assert info.value.limit == "wall_s"


def test_sandbox_seconds() -> None:
    b = Budget(max_sandbox_s=10)
    b.check_sandbox(4)
    b.charge_sandbox(4)
    assert b.sandbox_remaining_s() == pytest.approx(6)
    with pytest.raises(BudgetExceeded) as info:
        b.check_sandbox(7)  # would pass the cap
    assert info.value.limit == "sandbox_s"
    b.charge_sandbox(6)
    with pytest.raises(BudgetExceeded):
        b.check_sandbox()
    with pytest.raises(ValueError):
        b.charge_sandbox(-1)
    assert Budget().sandbox_remaining_s() is None


def test_call_slot_is_atomic_across_threads() -> None:
    b = Budget(max_calls=5)
    ok: list[int] = []
    refused: list[int] = []
    gate = threading.Barrier(20)

    def worker(i: int) -> None:
        gate.wait()
        try:
            with b.call_slot():
                time.sleep(0.01)  # a call in flight
                b.charge(rec(1, 1))
            ok.append(i)
        except BudgetExceeded:
            refused.append(i)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ok) == 5 and len(refused) == 15 and b.calls == 5 and b.tokens == 10


def test_snapshot_and_config() -> None:
    b = Budget.from_config(BudgetConfig(max_calls=3, max_usd=1.5))
    b.charge(rec(2, 3, 0.25))
    snap = b.snapshot()
    assert snap["calls"] == {"used": 1, "cap": 3}
    assert snap["tokens"] == {"used": 5, "cap": None}
    assert snap["usd"] == {"used": 0.25, "cap": 1.5}
    assert set(snap) == {"calls", "tokens", "usd", "wall_s", "sandbox_s", "unpriced_calls"}
    with pytest.raises(ValidationError):
        BudgetConfig(max_calls=-1)
    with pytest.raises(ValidationError):
        BudgetConfig.model_validate({"max_cals": 3})  # typo fails loudly


def test_unpriced_calls_are_counted_not_priced_at_zero() -> None:
    """A local model has no price: the budget says how many calls it could not price."""
    b = Budget()
    b.charge(CallRecord(model="m", cost_usd=0.01, cost_known=True))
    b.charge(CallRecord(model="local", cost_usd=0.0, cost_known=False))
    b.charge(CallRecord(model="local", cost_known=False, cached=True))  # cache hits cost nothing
    assert b.snapshot()["unpriced_calls"]["used"] == 1 and b.calls == 2
