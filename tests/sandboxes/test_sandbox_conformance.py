"""The conformance battery: every local mode passes or fails only where it says it will."""

from __future__ import annotations

from typing import Any

import pytest

from optiforge.sandboxes import ExecResult, LocalSandbox
from optiforge.sandboxes.conformance import (
    backend_key,
    format_results,
    known_failures,
    probe_isolation,
    self_check,
)
from optiforge.sandboxes.local import available_isolations

MODES = available_isolations()


@pytest.mark.parametrize("mode", MODES)
def test_self_check_local(mode: str) -> None:
    sb = LocalSandbox(isolation=mode)
    results = self_check(sb)
    names = {r.name for r in results}
    assert {"echo", "timeout", "memory_cap", "network_off", "write_outside_refused"} <= names
    table = format_results(results)
    assert all(r.acceptable for r in results), table
    failed = {r.name for r in results if not r.passed}
    # A check may fail only where the mode reports its promise clause unmet;
    # isolating modes fail nothing.
    assert failed <= set(known_failures(sb)), table
    if mode != "none":
        assert not failed, table
    else:  # no network namespace, no read-only root: both really fail, as reported
        assert {"network_off", "write_outside_refused"} <= failed, table


class LeakySandbox:
    """Claims to be a sandbox but runs unisolated and drops files: the battery must notice."""

    backend = "leaky"

    def __init__(self) -> None:
        self.inner = LocalSandbox(isolation="none")
        self.python = self.inner.python
        self.max_output_bytes = self.inner.max_output_bytes

    def run(self, cmd: Any, **kw: Any) -> ExecResult:
        kw.pop("collect", None)
        return self.inner.run(cmd, **kw)


def test_self_check_catches_a_bad_backend() -> None:
    results = {r.name: r for r in self_check(LeakySandbox())}
    assert backend_key(LeakySandbox()) == "leaky"
    assert not results["files_in_out"].passed and not results["files_in_out"].acceptable
    assert not results["network_off"].passed and not results["network_off"].expected_failure
    assert results["echo"].passed


def test_self_check_only_subset() -> None:
    results = self_check(LocalSandbox(), only=["echo", "returncode"])
    assert [r.name for r in results] == ["echo", "returncode"]


def test_probe_isolation_describes_machine() -> None:
    info = probe_isolation()
    assert set(info) >= {"bwrap", "unshare", "docker", "ray_installed", "local_isolation"}
    assert info["local_isolation"] == MODES[0]
    assert isinstance(info["docker"]["available"], bool)
    if not info["docker"]["available"]:
        assert info["docker"]["reason"].startswith("no Docker engine reachable at")
