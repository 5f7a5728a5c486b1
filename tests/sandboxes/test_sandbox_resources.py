"""Resource promises that hold or are not claimed (issue 39): deletion at any depth,
sweeps that survive a poisoned root, bounded work dirs, collect capped by real size,
``killed_by="memory"``, a killed caller's work dir swept, a killed run is a failed run.

The attacks themselves live in the red-team battery (``sandboxes/redteam.py``) and run
in every mode through ``test_sandbox_redteam.py`` / ``test_sandbox_warm.py``; these
tests pin the pieces and the two end-to-end stories the issue asks to show.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from optiforge.sandboxes import LocalSandbox
from optiforge.sandboxes import workdirs as W
from optiforge.sandboxes.base import collect_files
from optiforge.sandboxes.local import available_isolations, host_isolation
from optiforge.sandboxes.redteam import _dead_pid, _plant_deep_tree, red_team
from optiforge.sandboxes.warm import warm_unavailable_reason

MODES = available_isolations()
PY = sys.executable
DEEP = 3000
_DEEP_CODE = f"import os\nfor _ in range({DEEP}):\n    os.mkdir('d'); os.chdir('d')\n"
WARM_OFF = warm_unavailable_reason(LocalSandbox())


def _env() -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[2])
    return {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", "")}


@pytest.fixture
def disk_root(tmp_path: Path) -> Path:
    """A work-dir root on whatever file system the test's tmp dir is (a disk here)."""
    return tmp_path


@pytest.fixture
def fast_dir(tmp_path: Path) -> Iterator[Path]:
    """A dir on /dev/shm where it is a writable tmpfs (a 3000-level tree on a slow disk
    takes seconds to make), else the test's tmp dir; removed with ``remove_tree``."""
    shm = "/dev/shm"
    if os.access(shm, os.W_OK) and W.fs_type(shm) == "tmpfs":
        d = Path(tempfile.mkdtemp(prefix="optiforge-test-", dir=shm))
        yield d
        W.remove_tree(d)
    else:
        yield tmp_path


# -- deletion and sweeps -------------------------------------------------------------


def test_remove_tree_any_depth_modes_and_links(fast_dir: Path) -> None:
    tmp_path = fast_dir
    top = tmp_path / "t"
    _plant_deep_tree(str(top), DEEP)
    outside = tmp_path / "keep"
    outside.mkdir()
    (outside / "f").write_text("x")
    (top / "link").symlink_to(outside)  # must be unlinked, never followed
    (top / "locked").mkdir()
    (top / "locked" / "f").write_text("x")
    (top / "locked").chmod(0)
    W.remove_tree(top)
    assert not top.exists()
    assert (outside / "f").read_text() == "x"


def test_sweep_survives_a_poisoned_root(fast_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tmp_path = fast_dir
    dead = _dead_pid()
    deep = tmp_path / f"optiforge-sbx-{dead}-deep"
    _plant_deep_tree(str(deep), DEEP)
    stuck = tmp_path / f"optiforge-sbx-{dead}-stuck"
    stuck.mkdir()
    alive = tmp_path / f"{W.owner_prefix()}mine"
    alive.mkdir()
    real = W.remove_tree

    def refuse(path: str | os.PathLike[str]) -> None:
        if str(path).endswith("-stuck"):
            raise PermissionError(13, "planted: cannot delete")
        real(path)

    monkeypatch.setattr(W, "remove_tree", refuse)
    assert W.sweep_work_dirs(tmp_path) == 1  # logged, not raised
    assert not deep.exists() and stuck.exists() and alive.exists()


def test_recycled_pid_is_not_the_owner(tmp_path: Path) -> None:
    me = W.owner_prefix()
    pid, start = me[len(W.PREFIX) :].split("-")[:2]
    assert W.owner_alive(f"{me}x")
    assert not W.owner_alive(f"{W.PREFIX}{pid}-s{int(start[1:]) + 1}-x")  # same pid, not us
    assert not W.owner_alive(f"{W.PREFIX}{_dead_pid()}-s1-x")


@pytest.mark.parametrize("mode", MODES)
def test_deep_directory_parent_exits_and_root_works(mode: str, fast_dir: Path) -> None:
    """The issue's story: a 3000-level dir; the caller exits 0, the next run works."""
    disk_root = fast_dir  # the default root's kind (a tmpfs), where the issue was found
    driver = (
        "import sys\nfrom optiforge.sandboxes.local import LocalSandbox\n"
        f"sb = LocalSandbox(root={str(disk_root)!r}, isolation={mode!r})\n"
        f"r = sb.run([sys.executable, '-c', {_DEEP_CODE!r}], timeout_s=60)\n"
        "print('RC', r.returncode)\n"
    )
    p = subprocess.run([PY, "-c", driver], env=_env(), capture_output=True, text=True)
    assert p.returncode == 0 and "RC 0" in p.stdout, p.stderr[-500:]
    assert not [n for n in os.listdir(disk_root) if n.startswith(W.PREFIX)]
    # a dead caller's deep leftover on the same root: the next sandbox sweeps it
    planted = disk_root / f"optiforge-sbx-{_dead_pid()}-deep"
    _plant_deep_tree(str(planted), DEEP)
    again = (
        "from optiforge.sandboxes.local import LocalSandbox\n"
        f"r = LocalSandbox(root={str(disk_root)!r}, isolation={mode!r}).run('echo again')\n"
        "print(r.stdout.strip())\n"
    )
    p = subprocess.run([PY, "-c", again], env=_env(), capture_output=True, text=True)
    assert p.returncode == 0 and p.stdout.strip() == "again", p.stderr[-500:]
    assert not planted.exists()


@pytest.mark.skipif(WARM_OFF is not None, reason=f"no warm mode here: {WARM_OFF}")
def test_deep_directory_warm_then_close() -> None:
    sb = LocalSandbox(warm=["json"], max_procs=32, tmpfs_mb=16)
    try:
        r = sb.run([PY, "-c", _DEEP_CODE], timeout_s=60)
        assert r.ok and r.protections.warm, r.stderr
        assert sb.run([PY, "-c", "print('again')"]).stdout == "again\n"
        spool = sb._warm_pool._spool
        _plant_deep_tree(os.path.join(spool, "left"), DEEP)  # what a crashed run left
    finally:
        sb.close()  # removes its spool with the iterative delete: no RecursionError
    assert not os.path.exists(spool)


def test_cli_start_sweeps_a_killed_callers_work_dir() -> None:
    root = W.default_roots()[0]
    if not os.path.isdir(root) or not os.access(root, os.W_OK):
        pytest.skip(f"{root} not writable")
    left = Path(root) / f"optiforge-sbx-{_dead_pid()}-s1-killed"
    left.mkdir()
    (left / "held").write_bytes(b"x" * 1024)
    subprocess.run([PY, "-m", "optiforge.cli", "--version"], env=_env(), capture_output=True)
    assert not left.exists()


# -- bounds ----------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_work_dir_on_disk_bounded_or_not_claimed(mode: str, disk_root: Path) -> None:
    sb = LocalSandbox(root=disk_root, isolation=mode, tmpfs_mb=16)  # type: ignore[arg-type]
    code = (
        "n = 0\ntry:\n    for i in range(20):\n"
        "        open(f'f{i}', 'wb').write(b'x' * (8 << 20)); n += 8\n"
        "except OSError as e: print(e.strerror)\nprint('MB', n)\n"
    )
    r = sb.run([PY, "-c", code], memory_mb=64, timeout_s=60)
    wrote = int(r.stdout.split("MB")[1])
    if sb._mount_workdir:
        assert wrote <= 64 and "No space left" in r.stdout, r.stdout
    else:  # not root: the disk is not bounded, and the report says so
        assert wrote == 160 and not r.protections.disk_bounded
    if mode == "none" or not sb._mount_workdir:
        assert not r.protections.disk_bounded and "bounded_resources" in r.protections.unmet()
    else:
        assert r.protections.disk_bounded and not r.protections.unmet()


@pytest.mark.parametrize("mode", MODES)
def test_fill_workdir_attack_on_a_disk_root(mode: str, disk_root: Path) -> None:
    """The battery's attack where the issue found it: 17.4 GB written on a disk root."""
    sb = LocalSandbox(root=disk_root, isolation=mode, tmpfs_mb=16)  # type: ignore[arg-type]
    (result,) = red_team(sb, only=["fill_workdir"])
    assert result.acceptable, result.detail
    if mode != "none" and sb.protections().disk_bounded:
        assert result.passed, result.detail


def test_disk_bounded_false_where_nothing_bounds_the_disk(
    disk_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import optiforge.sandboxes.local as L

    monkeypatch.setattr(L, "_can_mount_tmpfs", lambda root: "mount refused (test)")
    sb = LocalSandbox(root=disk_root, isolation=MODES[0])  # type: ignore[arg-type]
    prot = sb.protections()
    assert not prot.disk_bounded and "writes_confined" in prot.unmet()
    assert any("bounded per file only" in n for n in prot.notes)


def test_collect_capped_by_real_size(tmp_path: Path) -> None:
    with open(tmp_path / "sparse.bin", "wb") as f:
        f.truncate(500 << 20)
    (tmp_path / "small.txt").write_text("ok")
    files, notes = collect_files(tmp_path, ["*"], 512 << 20, 1 << 20)
    assert files == {"small.txt": "ok"}
    assert any("sparse.bin" in n and "collect cap" in n for n in notes)
    # the total is a budget across files
    (tmp_path / "a.bin").write_bytes(b"a" * 700_000)
    (tmp_path / "b.bin").write_bytes(b"b" * 700_000)
    files, notes = collect_files(tmp_path, ["*.bin"], 512 << 20, 1 << 20)
    assert list(files) == ["a.bin"] and any("b.bin" in n for n in notes)


def test_collect_walks_a_deep_tree_without_recursing(fast_dir: Path) -> None:
    tmp_path = fast_dir
    _plant_deep_tree(str(tmp_path / "t"), DEEP)
    (tmp_path / "out.json").write_text("{}")
    try:
        files, notes = collect_files(tmp_path, ["**/*.json"], 1 << 20)
    finally:
        W.remove_tree(tmp_path / "t")  # pytest's own cleanup of tmp dirs would recurse
    assert files == {"out.json": "{}"} and any("dir levels" in n for n in notes)


@pytest.mark.skipif(host_isolation().memory_cgroup is None, reason="no memory cgroup here")
def test_oom_kill_is_killed_by_memory_in_cli_json() -> None:
    code = (
        "import os, time\nks = []\nfor _ in range(16):\n    p = os.fork()\n"
        "    if p == 0:\n        b = b'x' * (50 << 20); time.sleep(1); os._exit(0)\n"
        "    ks.append(p)\n[os.waitpid(k, 0) for k in ks]\n"
    )
    p = subprocess.run(
        [PY, "-m", "optiforge.cli", "sandbox", "exec", "--json", "--memory-mb", "64"]
        + ["--", PY, "-c", code],
        env=_env(),
        capture_output=True,
        text=True,
    )
    out = json.loads(p.stdout)
    assert out["killed_by"] == "memory", out
    assert any("memory cgroup killed" in n for n in out["protections"]["notes"])


def test_plain_failures_are_not_memory() -> None:
    r = LocalSandbox().run([PY, "-c", "import sys; sys.exit(3)"])
    assert r.returncode == 3 and r.killed_by is None


# -- a killed run is a failed run ------------------------------------------------------


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _kill_supervisor_when(sb: LocalSandbox, started: threading.Event) -> threading.Thread:
    """Kill the warm zygote's child (the run's supervisor) once the run has started."""

    def go() -> None:
        started.wait(20)
        pool = sb._warm_pool
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            zpid = pool.zygote_pid if pool is not None else None
            for kid in _children(zpid) if zpid else []:
                if _children(kid):  # C0 of the live run (it has forked the run's init)
                    os.kill(kid, signal.SIGKILL)
                    return
            time.sleep(0.01)

    t = threading.Thread(target=go, daemon=True)
    t.start()
    return t


@pytest.fixture
def warm_sb() -> Iterator[LocalSandbox]:
    if WARM_OFF is not None:
        pytest.skip(f"no warm mode here: {WARM_OFF}")
    sb = LocalSandbox(warm=["json"], max_procs=32, tmpfs_mb=16)
    yield sb
    sb.close()


def test_killed_warm_run_is_a_failed_result(warm_sb: LocalSandbox) -> None:
    warm_sb.run([PY, "-c", "pass"])  # the zygote is up
    started = threading.Event()
    t = _kill_supervisor_when(warm_sb, started)
    started.set()
    r = warm_sb.run([PY, "-c", "import time; time.sleep(5)"], timeout_s=20)
    t.join()
    assert not r.ok and r.killed_by == "signal 9", r
    assert any("killed from outside" in n for n in r.protections.notes)
    assert warm_sb.run([PY, "-c", "print('next')"]).stdout == "next\n"


def test_killed_candidate_is_a_failed_candidate(warm_sb: LocalSandbox) -> None:
    """Through the agent kit's evaluator: a failed Score with a reason, no exception."""
    from optiforge.agents.kit.evaluator import SandboxedTaskEvaluator
    from optiforge.evals.suites.funcfit import FuncFitBenchmark

    task = FuncFitBenchmark().tasks("dev")[0]
    ev = SandboxedTaskEvaluator(task, sandbox=warm_sb)
    ok = ev({"code": "def f(x):\n    return 3*x**2 - 2*x + 1.5\n"})
    assert ok.passed
    started = threading.Event()
    t = _kill_supervisor_when(warm_sb, started)
    started.set()
    score = ev({"code": "import time\ntime.sleep(5)\ndef f(x):\n    return x\n"})
    t.join()
    assert not score.passed and score.details, score
