"""Red-team tests: hostile commands must be contained, reported, and leave nothing behind."""

from __future__ import annotations

import dataclasses
import os
import socket
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from optiforge.sandboxes import LocalSandbox
from optiforge.sandboxes.local import available_isolations
from optiforge.sandboxes.redteam import ATTACKS, red_team

MODES = available_isolations()
PY = sys.executable


@pytest.fixture(scope="module", params=MODES)
def sb(request: pytest.FixtureRequest) -> LocalSandbox:
    return LocalSandbox(isolation=request.param, max_procs=32)


def test_infinite_loop_times_out(sb: LocalSandbox, token: str, assert_no_leftovers) -> None:
    r = sb.run([PY, "-c", f"while True: pass  # {token}"], timeout_s=0.8)
    assert r.timed_out and r.killed_by == "timeout" and not r.ok
    # the loop never ends by itself: any bound tells a kill from none; a generous one, as a
    # loaded machine takes seconds to start and reap a sandbox
    assert 0.8 <= r.duration_s < 15.0
    assert r.protections.process_group
    assert_no_leftovers(token)


def test_sleep_past_timeout(sb: LocalSandbox, token: str, assert_no_leftovers) -> None:
    r = sb.run(f"sleep 30; : {token}", timeout_s=0.5)
    assert r.timed_out and r.killed_by == "timeout"
    assert r.duration_s < 15.0  # half the sleep: killed, with room for a loaded machine
    assert_no_leftovers(token)


def test_child_ignoring_sigterm_is_killed(
    sb: LocalSandbox, token: str, assert_no_leftovers
) -> None:
    code = textwrap.dedent(
        f"""
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ready", flush=True)
        time.sleep(60)  # {token}
        """
    )
    r = sb.run([PY, "-c", code], timeout_s=1.0)
    assert r.timed_out and r.killed_by == "timeout"
    assert "ready" in r.stdout
    assert r.duration_s < 30.0  # half the sleep: killed, with room for a loaded machine
    assert_no_leftovers(token)


def test_setsid_grandchild_dies_when_child_exits(
    sb: LocalSandbox, token: str, assert_no_leftovers
) -> None:
    # The child daemonises a grandchild into its own session and exits at once.
    code = textwrap.dedent(
        f"""
        import subprocess
        subprocess.Popen(["/bin/sh", "-c", "sleep 60; : {token}"], start_new_session=True,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        print("spawned", flush=True)
        """
    )
    r = sb.run([PY, "-c", code], timeout_s=10)
    assert r.returncode == 0 and "spawned" in r.stdout and not r.timed_out
    assert_no_leftovers(token)


def test_setsid_grandchild_dies_on_timeout(
    sb: LocalSandbox, token: str, assert_no_leftovers
) -> None:
    code = textwrap.dedent(
        f"""
        import subprocess, time
        subprocess.Popen(["/bin/sh", "-c", "sleep 60; : {token}"], start_new_session=True)
        time.sleep(60)
        """
    )
    r = sb.run([PY, "-c", code], timeout_s=0.8)
    assert r.timed_out
    assert_no_leftovers(token)


def test_fork_count_without_cgroup_is_reported_honestly(token: str, assert_no_leftovers) -> None:
    for mode in MODES:
        sb = LocalSandbox(isolation=mode, max_procs=32)  # type: ignore[arg-type]
        sb.host = dataclasses.replace(sb.host, pids_cgroup=None)  # as on a machine without one
        r = sb.run([PY, "-c", _fork_code(token)], timeout_s=20)
        assert r.returncode == 0 and not r.protections.pids_cgroup, r.stderr
        forked = int(r.stdout.split()[0])
        assert (forked <= 32) == r.protections.rlimit_nproc, (mode, forked, r.protections)
    assert_no_leftovers(token)


def _fork_code(token: str) -> str:
    return textwrap.dedent(
        f"""
        import os, time
        ok = 0
        kids = []
        for _ in range(100):
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                time.sleep(3)  # {token}
                os._exit(0)
            kids.append(pid)
            ok += 1
        print(ok, flush=True)
        for pid in kids:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        """
    )


def test_fork_count_matches_reported_nproc(
    sb: LocalSandbox, token: str, assert_no_leftovers
) -> None:
    """Try 100 forks with max_procs=32: capped iff the result says a task limit was in force."""
    code = textwrap.dedent(
        f"""
        import os, time
        ok = 0
        kids = []
        for _ in range(100):
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                time.sleep(3)  # {token}
                os._exit(0)
            kids.append(pid)
            ok += 1
        print(ok, flush=True)
        for pid in kids:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
        """
    )
    r = sb.run([PY, "-c", code], timeout_s=20)
    assert r.returncode == 0, r.stderr
    forked = int(r.stdout.split()[0])
    p = r.protections
    if p.rlimit_nproc or p.pids_cgroup:
        assert forked <= 32, f"task limit reported but {forked} forks succeeded"
    else:
        # The report says no task limit (root bypasses RLIMIT_NPROC): nothing capped us.
        assert forked == 100
        assert p.run_as_uid == 0
    assert_no_leftovers(token)


def test_fork_bomb_is_contained(sb: LocalSandbox, token: str, assert_no_leftovers) -> None:
    p = sb.run("true").protections
    if not (p.rlimit_nproc or p.pids_cgroup):
        pytest.skip(f"{sb.isolation}: no task limit in force here (root, no pids cgroup)")
    code = textwrap.dedent(
        f"""
        import os
        # {token}
        while True:
            try:
                os.fork()
            except OSError:
                pass
        """
    )
    r = sb.run([PY, "-c", code], timeout_s=1.5)
    assert r.timed_out and r.killed_by == "timeout"
    assert r.duration_s < 30.0  # the bomb never ends by itself; room for a loaded machine
    assert_no_leftovers(token)


def test_grandchild_escaping_session_and_env_dies(
    sb: LocalSandbox, token: str, assert_no_leftovers
) -> None:
    """setsid + a wiped environment (no marker): only a namespace or cgroup can find it."""
    code = textwrap.dedent(
        f"""
        import subprocess
        subprocess.Popen(["/bin/sh", "-c", "sleep 60; : {token}"], start_new_session=True,
                         env={{}}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        """
    )
    r = sb.run([PY, "-c", code], timeout_s=10)
    assert r.returncode == 0
    p = r.protections
    if not (p.pid_namespace or p.pids_cgroup):
        pytest.xfail("no PID namespace and no cgroup: an env-wiping daemon can escape")
    assert_no_leftovers(token)


def test_huge_allocation_under_small_cap(sb: LocalSandbox) -> None:
    r = sb.run([PY, "-c", "b = bytearray(4 * 1024**3); print('allocated')"], memory_mb=256)
    assert not r.ok and "allocated" not in r.stdout
    assert r.killed_by == "memory" and "MemoryError" in r.stderr
    assert r.peak_rss_mb < 256
    assert r.protections.rlimit_as and r.protections.memory_cap


def test_huge_stdout_is_capped_and_drained(token: str) -> None:
    sb = LocalSandbox(max_output_bytes=1000)
    code = "import sys\nsys.stdout.write('x' * 20_000_000)\nsys.stderr.write('e' * 5000)\n"
    r = sb.run([PY, "-c", code], timeout_s=30)
    # The child wrote 20 MB and exited normally: we kept draining, so it never blocked.
    assert r.returncode == 0 and not r.timed_out
    assert r.stdout == "x" * 1000 and r.stdout_truncated
    assert r.stderr == "e" * 1000 and r.stderr_truncated
    assert r.protections.output_capped


@pytest.fixture
def listener() -> Iterator[int]:
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
                conn.sendall(b"from-host")
                conn.close()
            except OSError:
                pass

    th = threading.Thread(target=serve, daemon=True)
    th.start()
    yield srv.getsockname()[1]
    stop.set()
    th.join(1)
    srv.close()


def _connect_code(port: int) -> str:
    return textwrap.dedent(
        f"""
        import socket
        try:
            s = socket.create_connection(("127.0.0.1", {port}), timeout=2)
            print("CONNECTED", s.recv(32).decode())
        except OSError as e:
            print("REFUSED", e)
        """
    )


def test_network_off_blocks_host_listener(sb: LocalSandbox, listener: int) -> None:
    r = sb.run([PY, "-c", _connect_code(listener)], network=False, timeout_s=15)
    assert r.returncode == 0, r.stderr
    if r.protections.network_isolated:
        assert r.stdout.startswith("REFUSED"), r.stdout
        assert r.protections.network_how in ("netns-bwrap", "netns-unshare")
    else:
        # Honest report: without a namespace the connection goes through.
        assert sb.isolation == "none" and r.protections.network_how == "none"
        assert r.stdout.startswith("CONNECTED")


def test_network_on_reaches_host_listener(sb: LocalSandbox, listener: int) -> None:
    r = sb.run([PY, "-c", _connect_code(listener)], network=True, timeout_s=15)
    assert r.stdout.strip() == "CONNECTED from-host", r.stdout + r.stderr
    assert not r.protections.network_isolated


def test_write_outside_workdir(sb: LocalSandbox, token: str) -> None:
    outside = Path(f"/tmp/outside-{token}")
    repo_file = Path(__file__).resolve().parent / f"outside-{token}"
    try:
        r = sb.run(
            f"echo pwned > {outside}; echo pwned > {repo_file}; echo ok > inside.txt",
            collect=["inside.txt"],
        )
        assert r.files.get("inside.txt") == "ok\n"  # the work dir itself stays writable
        if r.protections.fs_write_confined:
            assert not outside.exists() and not repo_file.exists()
            assert sb.isolation in r.protections.fs_how
        else:
            # The report says writes are not confined; /tmp is world-writable, so it leaked.
            assert outside.exists()
            assert sb.isolation == "none"
    finally:
        outside.unlink(missing_ok=True)
        repo_file.unlink(missing_ok=True)


def test_collect_does_not_follow_symlinks_out(sb: LocalSandbox) -> None:
    r = sb.run("ln -s /etc/passwd leak.txt; echo fine > real.txt", collect=["*.txt"])
    assert "leak.txt" not in r.files and r.files["real.txt"] == "fine\n"
    assert any("symlink" in n for n in r.protections.notes)


@pytest.mark.parametrize("mode", [m for m in MODES if m != "none"])
def test_cannot_read_callers_home(mode: str) -> None:
    sb = LocalSandbox(isolation=mode)  # type: ignore[arg-type]
    home = Path("/root")
    if not home.exists():
        pytest.skip("no /root")
    r = sb.run(["ls", "-A", str(home)])
    # /root holds only the way down to the interpreter (a pyenv), nothing else.
    visible = set(r.stdout.split())
    allowed = {Path(p).parts[2] for p in [sys.base_prefix, sys.prefix] if p.startswith("/root/")}
    assert visible <= allowed, visible


def _leftovers() -> list[str]:
    """Work dirs and cgroups of this process still on the host."""
    from optiforge.sandboxes.local import default_root, host_isolation

    host = host_isolation()
    mine = f"-{os.getpid()}-"
    found = [n for n in os.listdir(default_root()) if n.startswith("optiforge-sbx" + mine)]
    for base in (host.pids_cgroup, host.memory_cgroup[0] if host.memory_cgroup else None):
        if base:
            found += [n for n in os.listdir(base) if n.startswith("optiforge") and mine in n]
    return found


@pytest.mark.parametrize("attack", [a.name for a in ATTACKS])
@pytest.mark.parametrize("mode", MODES)
def test_attack(mode: str, attack: str) -> None:
    """Each attack of the battery, in each mode: contained wherever the promise is claimed.

    In ``bwrap`` and ``unshare`` every clause is claimed, so every attack must be
    contained; in ``none`` an attack may succeed only where the mode itself reports
    the clause unmet. Nothing of the run may be left on the host afterwards (what was
    there before is another test's live sandbox in this worker, e.g. a warm pool that
    lives as long as its process: which tests share a worker depends on the selection).
    """
    before = set(_leftovers())
    sb = LocalSandbox(isolation=mode, max_procs=32, tmpfs_mb=64)  # type: ignore[arg-type]
    (result,) = red_team(sb, only=[attack])
    assert result.acceptable, f"{mode}/{attack}: {result.detail}"
    if mode != "none":
        assert not sb.protections().unmet()
        assert result.passed, f"{mode}/{attack}: {result.detail}"
    assert not set(_leftovers()) - before


def test_battery_covers_every_clause() -> None:
    from optiforge.sandboxes.base import CONTAINMENT_PROMISE

    assert {a.clause for a in ATTACKS if a.clause} == set(CONTAINMENT_PROMISE)
