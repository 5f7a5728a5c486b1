"""Fixtures for the sandbox tests: available isolation modes and a /proc leftover scan."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable

import pytest


def procs_with(token: str) -> list[tuple[int, str]]:
    """Live (non-zombie) processes whose cmdline or environment contains ``token``."""
    me = os.getpid()
    needle = token.encode()
    hits = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
            if state == b"Z":
                continue
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmdline = f.read()
            try:
                with open(f"/proc/{entry}/environ", "rb") as f:
                    environ = f.read()
            except OSError:
                environ = b""
        except (OSError, IndexError):
            continue
        if needle in cmdline or needle in environ:
            hits.append((int(entry), cmdline.replace(b"\0", b" ").decode(errors="replace")))
    return hits


@pytest.fixture
def token() -> str:
    """A unique marker to put into the command line of everything a test starts."""
    return f"oftok{uuid.uuid4().hex[:12]}"


@pytest.fixture
def assert_no_leftovers() -> Callable[[str], None]:
    """Assert that no process carrying ``token`` survives (namespace teardown is async)."""

    def check(tok: str) -> None:
        deadline = time.monotonic() + 2.0
        left = procs_with(tok)
        while left and time.monotonic() < deadline:
            time.sleep(0.05)
            left = procs_with(tok)
        assert not left, f"orphans left behind: {left}"

    return check
