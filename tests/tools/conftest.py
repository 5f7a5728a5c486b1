"""Fixtures for the tool tests (the optiforge pytest plugin is loaded by tests/conftest.py)."""

from __future__ import annotations

import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest


@dataclass
class FakeExecResult:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    protections: dict[str, Any] = field(default_factory=dict)


class FakeSandbox:
    """Runs ``cmd`` in a fresh temp dir with ``files`` written first; records each run."""

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []

    def run(
        self,
        cmd: list[str],
        *,
        files: dict[str, str | bytes] | None = None,
        timeout_s: float = 60.0,
        memory_mb: int = 2048,
        network: bool = False,
    ) -> FakeExecResult:
        self.runs.append({"cmd": cmd, "files": dict(files or {}), "network": network})
        with tempfile.TemporaryDirectory() as d:
            for name, content in (files or {}).items():
                p = Path(d) / name
                if isinstance(content, bytes):
                    p.write_bytes(content)
                else:
                    p.write_text(content)
            t0 = time.monotonic()
            try:
                out = subprocess.run(cmd, cwd=d, capture_output=True, text=True, timeout=timeout_s)
            except subprocess.TimeoutExpired as e:
                return FakeExecResult(-9, str(e.stdout or ""), str(e.stderr or ""), True, timeout_s)
            return FakeExecResult(
                out.returncode, out.stdout, out.stderr, False, time.monotonic() - t0
            )


@pytest.fixture
def fake_sandbox() -> FakeSandbox:
    """A Sandbox-shaped runner without isolation (subprocess in a fresh temp dir)."""
    return FakeSandbox()
