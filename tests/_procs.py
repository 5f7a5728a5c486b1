"""A helper for the tests that check a helper process dies with its parent."""

from __future__ import annotations

import os
import time


def wait_gone(pid: int, timeout_s: float, what: str) -> None:
    """Return once process ``pid`` has exited (a zombie awaiting its reaper counts as
    gone); fail the test after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return
        except FileNotFoundError:
            return
        assert time.monotonic() < deadline, f"{what} outlived its process"
        time.sleep(0.05)
