"""The hard wall cap: the deadline clamps what can wait, the watchdog ends what cannot.

No timed assertions: what is checked is that a blocked call ends (the test finishes while
the fake blocks for ten minutes), with which error, exit code and records.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from optiforge import deadline
from optiforge.errors import BudgetExceeded
from optiforge.harness.status import ExitCode, run_status
from optiforge.harness.wallcap import WallCap, margin_s, mark_stopped
from optiforge.llm import Budget
from optiforge.testing import SilentServer


@pytest.fixture(autouse=True)
def _disarmed() -> Iterator[None]:
    deadline.disarm()
    yield
    deadline.disarm()


def test_margin_is_two_seconds_or_five_percent() -> None:
    assert margin_s(1.0) == 2.0 and margin_s(40.0) == 2.0 and margin_s(600.0) == 30.0


def test_deadline_clamps_timeouts_and_the_grace_extends_them() -> None:
    assert deadline.clamp(60.0) == 60.0 and deadline.remaining_s() is None  # none armed
    now = time.time()
    deadline.arm(now + 100.0, now + 200.0)
    assert deadline.clamp(5.0) == 5.0
    assert 0 < deadline.clamp(1000.0) <= 100.0
    with deadline.harness_grace():
        assert 100.0 < deadline.clamp(1000.0) <= 200.0
    assert not deadline.expired()
    deadline.arm(now - 1.0, now + 50.0)  # the cap has passed
    assert deadline.expired() and deadline.clamp(30.0) == deadline.MIN_TIMEOUT_S
    with pytest.raises(BudgetExceeded) as info:
        Budget().check_wall()
    assert info.value.limit == "wall_s"
    deadline.disarm()
    assert not deadline.expired()
    Budget().check_wall()


def test_a_worker_process_reads_the_deadline_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = time.time()
    monkeypatch.setenv(deadline.ENV, f"{now - 5.0!r} {now + 5.0!r}")
    assert deadline.expired()


def test_watchdog_ends_what_cannot_be_cancelled_with_exit_3(tmp_path: Path) -> None:
    """The cap passes while the 'command' is blocked: the watchdog writes the records and
    calls exit(3) (here a recorder instead of os._exit)."""
    exited: list[int] = []
    done = threading.Event()
    reasons: list[str] = []

    def fake_exit(code: int) -> None:
        exited.append(code)
        done.set()

    cap = WallCap(0.05, started_at=time.time(), on_hard_stop=reasons.append, exit=fake_exit)
    cap.start()
    try:
        assert done.wait(120), "the watchdog never fired"
    finally:
        cap.close()
    assert exited == [int(ExitCode.STOPPED)]
    assert cap.reached and cap.hard_stopped
    assert len(reasons) == 1 and "wall_s" in reasons[0] and "--max-wall-s 0.05" in reasons[0]


def test_watchdog_closed_before_the_cap_does_nothing() -> None:
    exited: list[int] = []
    cap = WallCap(3600.0, started_at=time.time(), exit=exited.append).start()
    assert deadline.remaining_s() is not None
    cap.close()
    assert deadline.remaining_s() is None and exited == [] and not cap.reached


def test_hard_stop_records_say_stopped_and_not_remeasured(tmp_path: Path) -> None:
    from optiforge.runs import RunRecorder

    rec = RunRecorder.create(tmp_path, kind="run", run_dir=tmp_path / "r",
                             config={"agent": "evolve", "task": "funcfit/quadratic@dev",
                                     "settings": {"model": "openai/x"}},
                             seed=0, provider="openai/x")  # fmt: skip
    rows = [{"id": "a", "passed": True, "value": 3.0}, {"id": "b", "passed": True, "value": 1.0},
            {"id": "c", "passed": False, "value": None}]  # fmt: skip
    (rec.run_dir / "evaluations.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    mark_stopped(rec.run_dir, "budget exhausted (wall_s): hard stop")
    man = json.loads((rec.run_dir / "manifest.json").read_text())
    assert man["status"] == "stopped" and man["hard_stop"] is True
    summary = json.loads((rec.run_dir / "summary.json").read_text())
    assert summary["status"] == "stopped" and summary["verified"] is False
    assert summary["agent"] == "evolve" and "wall_s" in summary["status_reason"]
    # what the search saw, labelled as such (funcfit's mse: lower is better)
    assert summary["observed_best"] == {"value": 1.0, "id": "b", "higher_is_better": False}
    rec.close()


def test_a_cap_that_came_before_any_result_is_stopped_not_failed() -> None:
    assert run_status(None, "budget exhausted (wall_s): up")[0] == "stopped"
    assert run_status(None, "evaluation budget spent")[0] == "failed"


@pytest.mark.slow
def test_wall_cap_cuts_an_llm_call_in_flight() -> None:
    """A provider that never answers, a 1.5 s cap: the call ends with BudgetExceeded
    (wall_s) instead of waiting out its 600 s timeout and retries."""
    from optiforge.llm import LiteLLM

    server = SilentServer()
    try:
        budget = Budget(max_wall_s=1.5)
        llm = LiteLLM("openai/x", api_base=server.url, timeout_s=600.0, in_process=True,
                      budget=budget)  # fmt: skip
        llm._prepare()  # litellm's import is not what this test waits on
        budget._start = time.monotonic()  # the cap counts from here
        with pytest.raises(BudgetExceeded) as info:
            llm.complete([{"role": "user", "content": "hi"}])
        assert info.value.limit == "wall_s"
        assert server.accepted.is_set()  # the request was in flight when it was cut
    finally:
        server.close()


def test_sandbox_candidate_running_at_the_deadline_is_killed() -> None:
    """A candidate that would sleep 600 s is cut at the deadline by its own timer."""
    from optiforge.sandboxes import get_sandbox

    sb = get_sandbox("local", trusted_code=True)
    now = time.time()
    deadline.arm(now + 1.0, now + 3.0)
    res = sb.run(["sleep", "600"], timeout_s=600.0)
    assert res.timed_out
