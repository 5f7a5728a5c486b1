"""LocalSandbox in normal operation: results, files, env, limits, measurement, bad input."""

from __future__ import annotations

import dataclasses
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from optiforge.errors import ConfigError, SandboxError, SandboxUnavailable
from optiforge.sandboxes import ExecResult, LocalSandbox, Sandbox, get_sandbox
from optiforge.sandboxes import local as local_mod
from optiforge.sandboxes.local import available_isolations

PY = sys.executable
MODES = available_isolations()


class ListTracer:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def event(self, kind: str, **fields: Any) -> None:
        self.events.append((kind, fields))


@pytest.fixture(scope="module", params=MODES)
def sb(request: pytest.FixtureRequest) -> LocalSandbox:
    return LocalSandbox(isolation=request.param)


def test_is_a_sandbox_and_factory() -> None:
    sb = get_sandbox("local")
    assert isinstance(sb, Sandbox) and isinstance(sb, LocalSandbox)
    with pytest.raises(ConfigError, match="unknown sandbox backend"):
        get_sandbox("vm")


def test_returncode_stdout_stderr(sb: LocalSandbox) -> None:
    r = sb.run("echo out; echo err >&2; exit 7")
    assert isinstance(r, ExecResult)
    assert (r.returncode, r.stdout, r.stderr) == (7, "out\n", "err\n")
    assert not r.ok and not r.timed_out and r.killed_by is None
    ok = sb.run(["true"])
    assert ok.ok and ok.returncode == 0


def test_signal_death_is_reported(sb: LocalSandbox) -> None:
    r = sb.run([PY, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"])
    assert r.returncode == -11 and r.killed_by == "signal 11"


def test_files_in_and_out(sb: LocalSandbox) -> None:
    code = textwrap.dedent(
        """
        import pathlib
        data = pathlib.Path("in/data.bin").read_bytes()
        pathlib.Path("out").mkdir()
        pathlib.Path("out/rev.bin").write_bytes(data[::-1])
        pathlib.Path("out/msg.txt").write_text(pathlib.Path("cfg.txt").read_text().upper())
        pathlib.Path("ignored.log").write_text("no")
        """
    )
    payload = bytes(range(256)) * 4
    r = sb.run(
        [PY, "-c", code],
        files={"in/data.bin": payload, "cfg.txt": "hello"},
        collect=["out/*"],
    )
    assert r.ok, r.stderr
    assert r.files == {"out/msg.txt": "HELLO", "out/rev.bin": payload[::-1]}


@pytest.mark.parametrize("bad", ["../escape.txt", "/etc/x", "a/../../b", ""])
def test_file_paths_must_stay_inside(bad: str) -> None:
    with pytest.raises(SandboxError, match="relative"):
        LocalSandbox().run(["true"], files={bad: "x"})


def test_workdir_is_fresh_and_removed() -> None:
    sb = LocalSandbox()
    first = sb.run("pwd; ls -A; touch leftover")
    second = sb.run("pwd; ls -A")
    wd1, wd2 = first.stdout.split()[0], second.stdout.split()[0]
    assert wd1 != wd2
    assert "leftover" not in second.stdout
    assert not Path(wd1).exists() and not Path(wd2).exists()


def test_env_is_scrubbed(sb: LocalSandbox, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPTIFORGE_TEST_SECRET", "hunter2")
    r = sb.run(
        [PY, "-c", "import os, json; print(json.dumps(dict(os.environ)))"],
        env={"MY_FLAG": "1"},
    )
    import json

    env = json.loads(r.stdout)
    assert "OPTIFORGE_TEST_SECRET" not in env and "hunter2" not in r.stdout
    assert env["MY_FLAG"] == "1"
    assert env["HOME"] == os.path.dirname(env["TMPDIR"]) and env["TMPDIR"].endswith("/tmp")
    assert env["PYTHONDONTWRITEBYTECODE"] == "1"
    allowed = {"PATH", "HOME", "LANG", "TMPDIR", "PYTHONDONTWRITEBYTECODE", "MY_FLAG"}
    allowed |= {local_mod.MARKER_VAR, "PWD", "SHLVL", "_", "LC_CTYPE"}
    assert set(env) <= allowed
    assert r.protections.env_scrubbed


def test_python_imports_work(sb: LocalSandbox) -> None:
    r = sb.run([PY, "-c", "import json, numpy; print(numpy.arange(4).sum())"])
    assert r.ok and r.stdout.strip() == "6", r.stderr


@pytest.mark.slow
def test_torch_imports_under_default_memory() -> None:
    r = LocalSandbox().run([PY, "-c", "import torch; print(torch.ones(3).sum().item())"])
    assert r.ok and r.stdout.strip() == "3.0", r.stderr[-500:]


def test_peak_rss_agrees_with_child_self_report(sb: LocalSandbox) -> None:
    """Second method: the child's own high-water mark (VmHWM) must agree with our figure.

    Not the child's ``ru_maxrss``: Linux keeps ``maxrss`` across exec, so a command exec'd
    straight from a big parent reports the parent's resident set too.
    """
    code = textwrap.dedent(
        """
        b = bytearray(150 * 2**20)
        for i in range(0, len(b), 4096):
            b[i] = 1
        hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0]
        print(int(hwm.split()[1]) / 1024)
        """
    )
    r = sb.run([PY, "-c", code])
    assert r.ok, r.stderr
    own = float(r.stdout)
    assert own > 150
    assert abs(r.peak_rss_mb - own) / own < 0.1, (r.peak_rss_mb, own)


def test_duration_is_wall_time(sb: LocalSandbox) -> None:
    r = sb.run("sleep 0.3")
    # at least the sleep (wall, not CPU); the upper bound only catches a runaway clock: a
    # loaded machine takes seconds to start a sandbox
    assert 0.3 <= r.duration_s < 30.0


def test_cpu_time_limit() -> None:
    sb = LocalSandbox(cpu_time_s=1)
    r = sb.run([PY, "-c", "while True: pass"], timeout_s=20)
    assert not r.timed_out and r.killed_by == "cpu"
    assert r.returncode == -24  # SIGXCPU at the soft limit names the cause
    # no wall bound: on a loaded machine 1 s of CPU takes many seconds of wall; not
    # timed_out already says the CPU limit, not the 20 s timeout, ended it
    assert r.protections.rlimit_cpu


@pytest.mark.slow
def test_cpu_time_limit_holds_when_sigxcpu_is_ignored() -> None:
    sb = LocalSandbox(cpu_time_s=1)
    code = "import signal; signal.signal(signal.SIGXCPU, signal.SIG_IGN)\nwhile True: pass"
    r = sb.run([PY, "-c", code], timeout_s=20)
    assert not r.timed_out and r.returncode == -9 and r.killed_by == "cpu"  # before 20 s


def test_file_size_limit() -> None:
    sb = LocalSandbox(max_file_mb=1)
    code = textwrap.dedent(
        """
        import signal
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG instead of dying
        try:
            with open("big.bin", "wb") as f:
                f.write(b"x" * (5 * 2**20))
            print("WROTE")
        except OSError as e:
            print("EFBIG", e.errno)
        """
    )
    r = sb.run([PY, "-c", code], collect=["big.bin"])
    assert r.stdout.startswith("EFBIG"), r.stdout + r.stderr
    assert len(r.files.get("big.bin", b"")) <= 2**20


def test_open_files_limit() -> None:
    sb = LocalSandbox(max_open_files=40)
    code = textwrap.dedent(
        """
        fs = []
        try:
            for i in range(500):
                fs.append(open(f"f{i}", "w"))
        except OSError as e:
            print(len(fs), e.errno)
        """
    )
    r = sb.run([PY, "-c", code])
    opened, errno_ = r.stdout.split()
    assert int(opened) < 40 and int(errno_) == 24  # EMFILE


def test_tracer_gets_sandbox_run_event() -> None:
    tracer = ListTracer()
    sb = LocalSandbox(tracer=tracer)
    sb.run("exit 2")
    assert len(tracer.events) == 1
    kind, fields = tracer.events[0]
    assert kind == "sandbox_run"
    assert fields["returncode"] == 2 and fields["timed_out"] is False
    assert {"duration_s", "peak_rss_mb", "protections"} <= set(fields)
    assert fields["protections"]["backend"] == "local"
    import json

    json.dumps(fields)  # must be JSON-serialisable for events.jsonl


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"timeout_s": 0}, "timeout_s"), ({"memory_mb": 1}, "memory_mb")],
)
def test_bad_limits_raise(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(SandboxError, match=match):
        LocalSandbox().run(["true"], **kwargs)


def test_bad_commands_raise() -> None:
    sb = LocalSandbox()
    with pytest.raises(SandboxError, match="empty command"):
        sb.run("   ")
    with pytest.raises(SandboxError, match="non-empty list"):
        sb.run([])
    # A missing program is the command's failure (like a shell's 127), not a setup error.
    r = LocalSandbox(isolation="none").run(["/nonexistent/binary-xyz"])
    assert r.returncode == 127 and "binary-xyz" in r.stderr and not r.ok


def test_bad_config_raises() -> None:
    with pytest.raises(ConfigError):
        LocalSandbox(isolation="vm")  # type: ignore[arg-type]
    with pytest.raises(ConfigError):
        LocalSandbox(max_procs=0)
    with pytest.raises(ConfigError, match="not a directory"):
        LocalSandbox(root="/nonexistent/dir")


def test_missing_isolation_is_reported_not_faked(monkeypatch: pytest.MonkeyPatch) -> None:
    real = local_mod.host_isolation()
    bare = dataclasses.replace(
        real,
        bwrap=None,
        bwrap_error="bwrap not installed (apt-get install bubblewrap)",
        unshare=False,
        unshare_error="the unshare mode needs root",
    )
    monkeypatch.setattr(local_mod, "host_isolation", lambda: bare)
    with pytest.raises(SandboxUnavailable, match="bwrap"):
        LocalSandbox(isolation="bwrap")
    with pytest.raises(SandboxUnavailable, match="unshare"):
        LocalSandbox(isolation="unshare")
    sb = LocalSandbox()
    assert sb.isolation == "none"
    p = sb.run(["true"]).protections
    assert not p.network_isolated and p.network_how == "none" and not p.fs_write_confined
    assert any("bwrap unavailable" in n for n in p.notes)
    assert {"no_network", "writes_confined", "minimal_read_view"} <= set(p.unmet())
    # LLM-written code is refused there unless the user says --unsafe-sandbox.
    from optiforge.errors import UnsafeSandbox
    from optiforge.sandboxes import UNSAFE_ENV, get_sandbox

    monkeypatch.delenv(UNSAFE_ENV, raising=False)
    with pytest.raises(UnsafeSandbox, match="--unsafe-sandbox"):
        get_sandbox("local")
    assert get_sandbox("local", trusted_code=True).isolation == "none"  # type: ignore[attr-defined]
    monkeypatch.setenv(UNSAFE_ENV, "1")
    assert get_sandbox("local").isolation == "none"  # type: ignore[attr-defined]


def test_view_hides_the_project_and_an_installed_package() -> None:
    view = local_mod.build_view([sys.executable])
    checkout = str(Path(local_mod.__file__).resolve().parents[2])
    pkg = str(Path(local_mod.__file__).resolve().parents[1])
    for path in view.ro_binds:
        # never the checkout itself; the venv inside it is fine
        assert not (checkout == path or checkout.startswith(path + "/")) or pkg in view.masks
        assert not pkg.startswith(path + "/") or pkg in view.masks
    assert "/usr" in view.ro_binds or ("/usr", "usr") in view.symlinks


@pytest.mark.parametrize("mode", MODES)
def test_fresh_uid_per_run(mode: str) -> None:
    sb = LocalSandbox(isolation=mode)  # type: ignore[arg-type]
    uids = {int(sb.run(["id", "-u"]).stdout) for _ in range(3)}
    p = sb.run(["true"]).protections
    if not local_mod.host_isolation().is_root:
        assert uids == {os.getuid()} and not p.privileges_dropped
    elif p.privileges_dropped:
        assert len(uids) == 3 and min(uids) >= 2_000_000_000, uids
        assert p.rlimit_nproc and p.run_as_uid is None
    else:  # mode none with an interpreter under a 0700 dir: root, and it says so
        assert mode == "none" and uids == {0} and "no_signals_or_ptrace" in p.unmet()


def test_interrupted_run_leaves_nothing(
    monkeypatch: pytest.MonkeyPatch, token: str, assert_no_leftovers
) -> None:
    def boom(self: LocalSandbox, proc: Any, deadline: float) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(LocalSandbox, "_communicate", boom)
    for mode in MODES:
        with pytest.raises(KeyboardInterrupt):
            LocalSandbox(isolation=mode).run(f"sleep 30; : {token}")  # type: ignore[arg-type]
    assert_no_leftovers(token)


_READ_UNDER_TMP = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {d!r})
    import tmpmod
    print(tmpmod.VALUE)
    try:
        open({d!r} + "/written.txt", "w").write("x")
    except OSError as e:
        print("ro", e.errno)
    """
)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("warm", [None, ["json"]], ids=["cold", "warm"])
def test_a_view_path_under_tmp_stays_visible(mode: str, warm: list[str] | None) -> None:
    """An interpreter or data set under /tmp is not hidden by the run's private /tmp."""
    import tempfile

    with tempfile.TemporaryDirectory(dir="/tmp") as d:
        os.chmod(d, 0o755)
        Path(d, "tmpmod.py").write_text("VALUE = 'seen under /tmp'\n")
        sb = LocalSandbox(isolation=mode, extra_ro=[d], warm=warm)  # type: ignore[arg-type]
        try:
            for _ in range(2):  # a warm sandbox's second run re-binds it again
                r = sb.run([PY, "-c", _READ_UNDER_TMP.format(d=d)])
                assert r.returncode == 0, r.stderr
                lines = r.stdout.split()
                assert lines[:3] == ["seen", "under", "/tmp"]
                if mode != "none":
                    assert lines[3] == "ro", r.stdout
                    assert not Path(d, "written.txt").exists()
        finally:
            sb.close()
