"""The hard wall-clock cap of one command (``--max-wall-s``): a watchdog thread.

The cap counts from the start of the command's process (what ``time`` measures). At the
cap (``stop_at``) the run is cancelled cooperatively: ``optiforge.deadline`` is armed, so
the LLM call in flight times out there (its timeout is clamped to the time left, the
embedded model's server included), sandboxed candidates still running are killed by
their own clamped timers, and the run's ``Budget`` refuses every further call and
evaluation; the search stops with ``budget exhausted (wall_s)``, the harness
re-measures the best candidate and writes the summary, and the command exits 3.

The margin: ``max(2 s, 5% of the cap)``. Whatever cannot be cancelled (a model load, an
uninterruptible library call, a test double that sleeps) is ended at
``hard_at = stop_at + margin`` by this watchdog thread: it kills the command's child
processes (sandboxed candidates, the provider process, the model's server), marks the
run directory ``stopped`` (manifest, and a ``summary.json`` saying it was not
re-measured; the search checkpoint holds every finished step, so ``--resume``
continues), prints the status line and exits the process with code 3. A thread rather
than SIGALRM because a signal handler runs only when the main thread gets back to
Python code, which is exactly what a blocked call does not do.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from optiforge import deadline
from optiforge.harness.status import ExitCode

MARGIN_MIN_S = 2.0
MARGIN_FRACTION = 0.05


def margin_s(cap_s: float) -> float:
    """The stated margin past the cap within which the command ends."""
    return max(MARGIN_MIN_S, MARGIN_FRACTION * cap_s)


def process_started_at() -> float:
    """Epoch seconds at which this process started (now, where /proc cannot say)."""
    try:
        stat = Path(f"/proc/{os.getpid()}/stat").read_text()
        ticks = int(stat.rsplit(")", 1)[1].split()[19])  # field 22: starttime
        with open("/proc/stat") as f:
            btime = next(int(ln.split()[1]) for ln in f if ln.startswith("btime "))
        started = btime + ticks / os.sysconf("SC_CLK_TCK")
        # btime has one-second resolution: never a start in the future or far past
        return min(time.time(), started)
    except (OSError, ValueError, IndexError, StopIteration):
        return time.time()


def _children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (by the parent-pid tree), parents before children."""
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(entry))
    out: list[int] = []
    todo = list(kids.get(pid, []))
    while todo:
        p = todo.pop(0)
        out.append(p)
        todo.extend(kids.get(p, []))
    return out


def kill_children() -> None:
    """SIGKILL every descendant of this process (and the groups they lead), innermost
    first; never raises."""
    with contextlib.suppress(OSError):
        for pid in reversed(_children(os.getpid())):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                if os.getpgid(pid) == pid:
                    os.killpg(pid, signal.SIGKILL)


def observed_best(run_dir: Path, task_ref: str | None) -> dict[str, Any] | None:
    """The best passing candidate in ``evaluations.jsonl`` as the search observed it (not
    re-measured), with the task's direction from the suite index; None if none passed."""
    from optiforge.evals.index import suite_info
    from optiforge.runs import read_jsonl

    suite, _, rest = (task_ref or "").partition("/")
    name, _, split = rest.partition("@")
    try:
        tasks = suite_info(suite)["tasks"].get(split, [])
        higher = next(bool(t["higher_is_better"]) for t in tasks if t["name"] == name)
    except Exception:  # an unknown task or a damaged index: no observed best
        return None
    rows = [r for r in read_jsonl(run_dir / "evaluations.jsonl")
            if r.get("passed") and isinstance(r.get("value"), int | float)]  # fmt: skip
    if not rows:
        return None
    best = (max if higher else min)(rows, key=lambda r: float(r["value"]))
    return {"value": float(best["value"]), "id": best.get("id"), "higher_is_better": higher}


def mark_stopped(run_dir: Path, reason: str, extra: dict[str, Any] | None = None) -> bool:
    """Record a hard stop in ``run_dir``: the manifest's status ``stopped`` with the reason,
    and a ``summary.json`` (when the run wrote none) that says nothing was re-measured.
    False when there is no run to record it in (the cap came before the run started)."""
    from optiforge.runs import MANIFEST, read_manifest

    now = _dt.datetime.now(_dt.UTC).isoformat()
    man: dict[str, Any] = {}
    with contextlib.suppress(Exception):
        man = read_manifest(run_dir)
    if man:
        man.update(status="stopped", status_reason=reason, finished_at=now, hard_stop=True)
        tmp = run_dir / f".{MANIFEST}.hardstop"
        tmp.write_text(json.dumps(man, indent=2, default=str) + "\n")
        os.replace(tmp, run_dir / MANIFEST)
    summary = run_dir / "summary.json"
    if man and not summary.exists():
        cfg = man.get("config") or {}
        settings = cfg.get("settings") or {}
        data = {
            "agent": cfg.get("agent"),
            "method": cfg.get("method") or cfg.get("agent"),
            "task": cfg.get("task"),
            "seed": man.get("seed"),
            "model": settings.get("model") or man.get("provider"),
            "best_score": None,
            "verified": False,
            "status": "stopped",
            "status_reason": reason,
            "stop_reason": reason,
            "hard_stop": True,
            "observed_best": observed_best(run_dir, cfg.get("task")),
            "note": "ended by the wall-time cap's watchdog: the best candidate was not "
            "re-measured (observed_best is the search's own value); the checkpoint holds "
            "every finished step (continue with --resume)",
            **(extra or {}),
        }
        tmp = run_dir / ".summary.json.hardstop"
        tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
        os.replace(tmp, summary)
    return bool(man)


class WallCap:
    """The watchdog of one command's wall-time cap (see the module docstring).

    Args:
        cap_s: the cap, seconds from ``started_at``.
        started_at: epoch seconds (default: this process's start).
        on_hard_stop: writes the records at the hard stop (default: nothing); it runs on
            the watchdog thread while the main thread is still blocked.
        exit: what ends the process at the hard stop (``os._exit``; tests pass a recorder).
    """

    def __init__(
        self,
        cap_s: float,
        *,
        started_at: float | None = None,
        on_hard_stop: Callable[[str], Any] | None = None,
        exit: Callable[[int], Any] = os._exit,
    ) -> None:
        self.cap_s = float(cap_s)
        self.margin_s = margin_s(self.cap_s)
        self.started_at = process_started_at() if started_at is None else float(started_at)
        self.stop_at = self.started_at + self.cap_s
        self.hard_at = self.stop_at + self.margin_s
        self.on_hard_stop = on_hard_stop
        self._exit = exit
        self._done = threading.Event()
        self._thread: threading.Thread | None = None
        self.reached = False
        """The cap's instant passed while the command ran."""
        self.hard_stopped = False

    @property
    def reason(self) -> str:
        """What the status line and the records say when the cap ends the run."""
        return (
            f"budget exhausted (wall_s): the wall-time cap --max-wall-s {self.cap_s:g} ran out; "
            f"stopped within its margin of {self.margin_s:g} s"
        )

    def start(self) -> WallCap:
        """Arm the deadline and start the watchdog."""
        deadline.arm(self.stop_at, self.hard_at)
        self._thread = threading.Thread(target=self._watch, name="wall-cap", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """The command is over: disarm (idempotent)."""
        self._done.set()
        deadline.disarm()

    def _watch(self) -> None:
        if self._done.wait(max(0.0, self.stop_at - time.time())):
            return
        self.reached = True
        if self._done.wait(max(0.0, self.hard_at - time.time())):
            return
        self.hard_stopped = True
        elapsed = time.time() - self.started_at
        reason = f"{self.reason} (hard stop at {elapsed:.1f} s: a step could not be cancelled)"
        with contextlib.suppress(BaseException):
            kill_children()
        with contextlib.suppress(BaseException):
            if self.on_hard_stop is not None and self.on_hard_stop(reason) is False:
                reason += "; the run had not started: nothing to record"
        with contextlib.suppress(BaseException):
            sys.stderr.write(f"\nstatus: stopped ({reason}) · exit {int(ExitCode.STOPPED)}\n")
            sys.stderr.flush()
            sys.stdout.flush()
        self._exit(int(ExitCode.STOPPED))


def arm_for_command(
    cap_s: float | None, run_dir: Path | None, extra: Callable[[], dict[str, Any]] | None = None
) -> WallCap | None:
    """Start the watchdog of a CLI command (None without a cap); it is disarmed when the
    command's click context closes. ``run_dir`` gets the hard stop's records; ``extra``:
    fields for its summary (the spend so far)."""
    if cap_s is None:
        return None

    def records(reason: str) -> bool:
        if run_dir is None:
            return False
        return mark_stopped(run_dir, reason, extra() if extra is not None else None)

    cap = WallCap(cap_s, on_hard_stop=records).start()
    try:
        from typer._click.globals import get_current_context
    except ImportError:  # pragma: no cover - an older typer on plain click
        from click.globals import get_current_context  # type: ignore[no-redef]
    ctx = get_current_context(silent=True)
    if ctx is not None:
        ctx.call_on_close(cap.close)
    return cap
