"""A conformance battery every sandbox back end runs (``optiforge doctor`` calls it).

``self_check(sandbox)`` runs the same small checks against any ``Sandbox`` and marks
each failure as expected or not, from an explicit per-back-end list
(``known_failures``, from the back end's own ``protections().unmet()``): a back end
without a network namespace is *known* to fail ``network_off`` instead of silently
passing a weaker test. The attacks of ``redteam`` are judged the same way.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from optiforge.errors import OptiforgeError, SandboxUnavailable
from optiforge.sandboxes.base import ExecResult, Sandbox

CHECK_CLAUSES: dict[str, str] = {
    "network_off": "no_network",
    "write_outside_refused": "writes_confined",
    "env_scrubbed": "no_secrets",
    "memory_cap": "bounded_resources",
}
"""Check name -> the ``CONTAINMENT_PROMISE`` clause it exercises."""


def known_failures(sandbox: Any) -> dict[str, str]:
    """Checks this sandbox is *expected* to fail: their clause is reported unmet.

    Derived from ``sandbox.protections().unmet()``, never from a hand-kept list: a
    check may fail only where the back end says so itself.
    """
    unmet = sandbox.protections().unmet() if hasattr(sandbox, "protections") else {}
    return {name: unmet[c] for name, c in CHECK_CLAUSES.items() if c in unmet}


class CheckResult(BaseModel):
    """One conformance check against one sandbox."""

    model_config = ConfigDict(extra="forbid")

    name: str
    passed: bool
    expected_failure: bool = False
    """True when the check failed and the back end reports the clause it tests unmet."""
    detail: str = ""
    duration_s: float = 0.0

    @property
    def acceptable(self) -> bool:
        """Passed, or failed in a way the back end documents."""
        return self.passed or self.expected_failure


def backend_key(sandbox: Any) -> str:
    """``local-bwrap`` / ``local-unshare`` / ``local-none`` / ``docker`` / the class name."""
    backend = getattr(sandbox, "backend", type(sandbox).__name__)
    if backend == "local":
        return f"local-{getattr(sandbox, 'isolation', 'none')}"
    return str(backend)


@contextlib.contextmanager
def _listener() -> Iterator[int]:
    """A TCP listener on 127.0.0.1 in this process; yields its port."""
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
                conn.sendall(b"hello-from-host")
                conn.close()
            except OSError:
                continue

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    try:
        yield srv.getsockname()[1]
    finally:
        stop.set()
        th.join(1.0)
        srv.close()


def _py(sandbox: Any) -> str:
    return str(getattr(sandbox, "python", "python3"))


def _checks(sandbox: Sandbox) -> list[tuple[str, Callable[[], tuple[bool, str]]]]:
    py = _py(sandbox)

    def echo() -> tuple[bool, str]:
        r = sandbox.run(["echo", "hello"], timeout_s=20)
        return r.ok and r.stdout == "hello\n", f"rc={r.returncode} stdout={r.stdout!r}"

    def returncode() -> tuple[bool, str]:
        r = sandbox.run("exit 3", timeout_s=20)
        return r.returncode == 3 and not r.ok, f"rc={r.returncode}"

    def files_in_out() -> tuple[bool, str]:
        r = sandbox.run(
            "cat in.txt in.txt > out.txt",
            files={"in.txt": "abc"},
            collect=["out.txt"],
            timeout_s=20,
        )
        got = r.files.get("out.txt")
        return r.ok and got == "abcabc", f"rc={r.returncode} files={r.files!r}"

    def timeout() -> tuple[bool, str]:
        r = sandbox.run("sleep 30", timeout_s=1.0)
        good = r.timed_out and r.killed_by == "timeout" and r.duration_s < 10
        return good, f"timed_out={r.timed_out} killed_by={r.killed_by} in {r.duration_s:.2f}s"

    def memory_cap() -> tuple[bool, str]:
        r = sandbox.run([py, "-c", "b = bytearray(2 * 1024**3); print(len(b))"], memory_mb=256)
        return not r.ok and "2147483648" not in r.stdout, f"rc={r.returncode} by={r.killed_by}"

    def env_scrubbed() -> tuple[bool, str]:
        name = f"OPTIFORGE_SECRET_{uuid.uuid4().hex[:8].upper()}"
        os.environ[name] = "s3cret"
        try:
            r = sandbox.run(["env"], env={"PASSED_IN": "yes"}, timeout_s=20)
        finally:
            del os.environ[name]
        good = r.ok and name not in r.stdout and "PASSED_IN=yes" in r.stdout
        return good, "secret visible" if name in r.stdout else f"rc={r.returncode}"

    def output_capped() -> tuple[bool, str]:
        cap = int(getattr(sandbox, "max_output_bytes", 1 << 20))
        n = cap + 100_000
        r = sandbox.run([py, "-c", f"import sys; sys.stdout.write('x' * {n})"], timeout_s=30)
        good = r.stdout_truncated and len(r.stdout) <= cap
        return good, f"len={len(r.stdout)} cap={cap} truncated={r.stdout_truncated}"

    def network_off() -> tuple[bool, str]:
        with _listener() as port:
            code = (
                "import socket\n"
                "try:\n"
                f"    s = socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                "    print('CONNECTED', s.recv(64))\n"
                "except OSError as e:\n"
                "    print('REFUSED', e)\n"
            )
            r = sandbox.run([py, "-c", code], network=False, timeout_s=20)
        return "REFUSED" in r.stdout, r.stdout.strip()[:200] or r.stderr.strip()[-200:]

    def write_outside_refused() -> tuple[bool, str]:
        tag = uuid.uuid4().hex
        targets = [Path("/tmp") / f"optiforge-outside-{tag}", Path(f"/optiforge-outside-{tag}")]
        try:
            r = sandbox.run("; ".join(f"echo pwned > {t}" for t in targets), timeout_s=20)
            leaked = [str(t) for t in targets if t.exists()]
        finally:
            for t in targets:  # clean up what a failing back end let through
                t.unlink(missing_ok=True)
        return not leaked, f"leaked={leaked} rc={r.returncode}"

    return [
        ("echo", echo),
        ("returncode", returncode),
        ("files_in_out", files_in_out),
        ("timeout", timeout),
        ("memory_cap", memory_cap),
        ("env_scrubbed", env_scrubbed),
        ("output_capped", output_capped),
        ("network_off", network_off),
        ("write_outside_refused", write_outside_refused),
    ]


def self_check(sandbox: Sandbox, only: list[str] | None = None) -> list[CheckResult]:
    """Run the battery against ``sandbox``; ``only`` restricts it to the named checks."""
    known = known_failures(sandbox)
    results: list[CheckResult] = []
    for name, fn in _checks(sandbox):
        if only is not None and name not in only:
            continue
        t0 = time.perf_counter()
        try:
            passed, detail = fn()
        except OptiforgeError as e:
            passed, detail = False, f"{type(e).__name__}: {e}"
        if not passed and name in known:
            detail = f"{detail} (known: {known[name]})"
        results.append(
            CheckResult(
                name=name,
                passed=passed,
                expected_failure=not passed and name in known,
                detail=detail,
                duration_s=time.perf_counter() - t0,
            )
        )
    return results


def probe_isolation() -> dict[str, Any]:
    """What this machine offers for sandboxing (for ``optiforge doctor``)."""
    from optiforge.sandboxes.docker import docker_client
    from optiforge.sandboxes.local import available_isolations, host_isolation

    host = host_isolation()
    try:
        docker_client(timeout_s=2.0).close()
        docker: dict[str, Any] = {"available": True, "reason": None}
    except SandboxUnavailable as e:
        docker = {"available": False, "reason": str(e)}
    return {
        "is_root": host.is_root,
        "bwrap": {
            "available": host.bwrap is not None,
            "path": host.bwrap,
            "reason": host.bwrap_error,
        },
        "unshare": {"available": host.unshare, "reason": host.unshare_error},
        "pids_cgroup": {
            "available": host.pids_cgroup is not None,
            "reason": host.pids_cgroup_error,
        },
        "memory_cgroup": {"available": host.memory_cgroup is not None},
        "pidfd": hasattr(os, "pidfd_open"),
        "local_isolation": available_isolations()[0],
        "modes": available_isolations(),
        "docker": docker,
        "ray_installed": importlib.util.find_spec("ray") is not None,
    }


def format_results(results: list[CheckResult]) -> str:
    """A plain-text table of ``self_check`` results."""
    lines = []
    for r in results:
        mark = "PASS" if r.passed else "KNOWN-FAIL" if r.expected_failure else "FAIL"
        lines.append(f"{mark:10s} {r.name:22s} {r.duration_s:6.2f}s  {r.detail}")
    return "\n".join(lines)


__all__ = [
    "CHECK_CLAUSES",
    "CheckResult",
    "ExecResult",
    "backend_key",
    "format_results",
    "known_failures",
    "probe_isolation",
    "self_check",
]
