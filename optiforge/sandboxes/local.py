"""``LocalSandbox``: a subprocess in a fresh work dir that meets the containment promise.

``base.CONTAINMENT_PROMISE`` is what a run is measured against; every result carries
``protections`` (what was really in force) and ``protections.unmet()`` (the clauses a
run did not meet, and why). Modes, strongest first (``isolation="auto"`` picks the
first that really runs on this machine):

* ``bwrap`` (bubblewrap, ``apt-get install bubblewrap``): new PID/IPC/UTS/mount (and
  network) namespaces; the view is a fresh root holding only system dirs (``/usr``,
  ``/etc``, ``/lib*``), the interpreter's prefixes and the work dir (read-write), with
  size-bounded tmpfs ``/tmp`` and ``/dev/shm``, fresh ``/proc``, a minimal ``/dev``.
* ``unshare`` (root, no bubblewrap: what a fresh machine gets): the same view and
  namespaces, built by the sandbox init itself (``_init.py``: ``unshare(2)``, a
  tmpfs root, read-only bind mounts, ``pivot_root``).
* ``none``: a plain subprocess with limits; most clauses are unmet, and the CLI
  refuses LLM-written code there unless ``--unsafe-sandbox`` is given.

In every mode the command runs, when the caller is root, as a fresh random uid/gid
(so it can signal, ptrace or read nothing of anyone else, and RLIMIT_NPROC counts
exactly its own tasks), with ``PR_SET_NO_NEW_PRIVS``, a seccomp filter, rlimits (AS,
CPU, FSIZE, NOFILE, NPROC, CORE=0; hard = soft), a scrubbed environment, capped
output, its own session. Where a writable cgroup exists each run gets a pids cgroup
(``max_procs``) and a memory cgroup (limit ``memory_mb`` + the tmpfs bound; peak
memory is read from it, and ``killed_by="memory"`` from its OOM-kill counter), joined
by the init through fds the parent opened, out of the command's reach. The work dir is
bounded too: on a tmpfs root (``/dev/shm``) its pages are charged to the memory cgroup;
on a disk root a root caller mounts a tmpfs of ``memory_mb`` on it per run; elsewhere
``protections.disk_bounded`` is false (``workdirs.py``). The namespace's init carries
a parent-death SIGKILL, so killing the caller (even with SIGKILL) takes the whole run
down; on timeout the parent kills the process tree and the cgroup.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import marshal
import math
import os
import resource
import selectors
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, Literal

from optiforge.errors import ConfigError, SandboxError, SandboxUnavailable
from optiforge.sandboxes.base import (
    ExecResult,
    Protections,
    check_limits,
    collect_files,
    normalize_cmd,
    scrubbed_env,
    write_files,
)
from optiforge.sandboxes.boot import BOOT, fresh_id, init_code
from optiforge.sandboxes.cgroups import (
    count_tasks,
    descendants,
    kill_cgroup,
    kill_uid,
    make_memory_cgroup,
    make_pids_cgroup,
    oom_kill_count,
    read_int,
    remove_cgroup,
)
from optiforge.sandboxes.host import HostIsolation, View
from optiforge.sandboxes.results import mark_warm, run_result
from optiforge.sandboxes.warm import WarmPool, WarmUnavailable, warm_unavailable_reason
from optiforge.sandboxes.workdirs import (
    fs_type,
    mount_tmpfs,
    owner_prefix,
    remove_quietly,
    sweep_work_dirs,
)

log = logging.getLogger(__name__)

Isolation = Literal["auto", "bwrap", "unshare", "none"]

MARKER_VAR = "OPTIFORGE_SANDBOX_RUN"
"""Env var carrying a per-run token (mode ``none`` as non-root): finds escaped descendants."""

_KILL_GRACE_S = 0.3
_DRAIN_AFTER_EXIT_S = 0.5


def _try(argv: list[str]) -> str | None:
    """Run a probe command; None on success, else a one-line reason."""
    try:
        r = subprocess.run(argv, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"{type(e).__name__}: {e}"
    if r.returncode != 0:
        msg = (r.stderr or r.stdout).decode(errors="replace").strip().splitlines()
        return f"exit {r.returncode}: {msg[-1] if msg else ''}"
    return None


BWRAP_HINT = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"


@functools.cache
def host_isolation() -> HostIsolation:
    """Probe bwrap / namespaces / cgroups once (cached: re-probing per run costs time)."""
    is_root = os.geteuid() == 0
    true_bin = shutil.which("true") or "/bin/true"
    bwrap = shutil.which("bwrap")
    bwrap_err: str | None = f"bwrap not installed ({BWRAP_HINT})"
    if bwrap:
        bwrap_err = _try(
            [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
            + ["--unshare-net", "--unshare-pid", "--die-with-parent", "--", true_bin]
        )
        if bwrap_err:
            bwrap = None
    unshare_err: str | None = None
    if not is_root:
        unshare_err = "the unshare mode needs root (as a normal user, " + BWRAP_HINT + ")"
    else:
        tool = shutil.which("unshare")
        if tool is None:
            unshare_err = "unshare (util-linux) not found to probe namespace support"
        else:
            unshare_err = _try(
                [tool, "--mount", "--pid", "--net", "--ipc", "--uts", "--fork"]
                + ["--mount-proc", "--", true_bin]
            )
    cg, cg_err = _probe_pids_cgroup()
    v1 = {
        c: os.path.isdir(f"/sys/fs/cgroup/{c}") and _own_cgroup(c) is not None
        for c in ("pids", "memory")
    }
    return HostIsolation(
        is_root=is_root,
        bwrap=bwrap,
        bwrap_error=bwrap_err,
        unshare=unshare_err is None,
        unshare_error=unshare_err,
        pids_cgroup=cg,
        memory_cgroup=_probe_memory_cgroup(),
        pids_cgroup_error=cg_err,
        cgroup_v1=v1,
    )


def _own_cgroup(controller: str | None) -> str | None:
    """This process's cgroup path for a v1 ``controller`` (or v2 when None)."""
    try:
        with open("/proc/self/cgroup") as f:
            for line in f:
                _, ctrls, path = line.rstrip("\n").split(":", 2)
                if (controller is None and ctrls == "") or (
                    controller is not None and controller in ctrls.split(",")
                ):
                    return path
    except OSError:
        return None
    return None


def _probe_memory_cgroup() -> tuple[str, str, str] | None:
    """A memory-controller cgroup dir where we may create children, and its peak file.

    Peak memory must come from a cgroup: ``wait4``'s ``ru_maxrss`` of our direct child
    carries the *parent's* resident set across fork+exec (Linux keeps ``maxrss`` over
    exec), so a parent holding torch would report ~1 GB for ``python -c pass``.
    """
    candidates: list[tuple[str, str, str]] = []
    v1 = _own_cgroup("memory")
    if v1 is not None and os.path.isdir("/sys/fs/cgroup/memory"):
        candidates.append(
            (
                os.path.normpath(f"/sys/fs/cgroup/memory/{v1}"),
                "memory.max_usage_in_bytes",
                "memory.limit_in_bytes",
            )
        )
    v2 = _own_cgroup(None)
    for mnt in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        ctl = f"{mnt}{v2}/cgroup.subtree_control" if v2 is not None else ""
        if v2 is not None and os.path.isfile(ctl):
            with contextlib.suppress(OSError), open(ctl) as f:
                if "memory" in f.read().split():
                    candidates.append((os.path.normpath(f"{mnt}{v2}"), "memory.peak", "memory.max"))
    for base, peak, limit in candidates:
        probe = os.path.join(base, f"optiforge-probe-mem-{os.getpid()}")
        try:
            os.mkdir(probe)
            try:
                ok = os.path.isfile(os.path.join(probe, peak))
            finally:
                os.rmdir(probe)
            if ok:
                return base, peak, limit
        except OSError:
            continue
    return None


def _probe_pids_cgroup() -> tuple[str | None, str | None]:
    """Find a cgroup dir with the pids controller where we may create children.

    cgroup v1 (``/sys/fs/cgroup/pids``) first, then v2 (our own cgroup must have
    ``pids`` in ``cgroup.subtree_control``). Probed by really creating one.
    """
    candidates = []
    v1 = _own_cgroup("pids")
    if v1 is not None and os.path.isdir("/sys/fs/cgroup/pids"):
        candidates.append(os.path.normpath(f"/sys/fs/cgroup/pids/{v1}"))
    v2 = _own_cgroup(None)
    for mnt in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        ctl = f"{mnt}{v2}/cgroup.subtree_control" if v2 is not None else ""
        if v2 is not None and os.path.isfile(ctl):
            with contextlib.suppress(OSError), open(ctl) as f:
                if "pids" in f.read().split():
                    candidates.append(os.path.normpath(f"{mnt}{v2}"))
    reason = "no pids cgroup controller found"
    for base in candidates:
        probe = os.path.join(base, f"optiforge-probe-{os.getpid()}")
        try:
            os.mkdir(probe)
            try:
                with open(os.path.join(probe, "pids.max"), "w") as f:
                    f.write("8")
            finally:
                os.rmdir(probe)
            return base, None
        except OSError as e:
            reason = f"cannot create a pids cgroup under {base}: {e.strerror}"
    return None, reason


def available_isolations() -> list[str]:
    """Isolation modes this machine can really run, strongest first (``none`` always)."""
    host = host_isolation()
    return [m for m, ok in (("bwrap", host.bwrap), ("unshare", host.unshare)) if ok] + ["none"]


def default_root() -> Path:
    """Where work dirs go by default: ``/dev/shm`` when it is a roomy tmpfs, else the temp dir.

    Creating and deleting a work dir on a journaling disk cost ~7 ms per run on the
    reference machine (vs 0.01 ms on tmpfs), which was most of the sandbox overhead.
    Files the command writes there use RAM; RLIMIT_FSIZE bounds each file.
    """
    shm = Path("/dev/shm")
    try:
        st = os.statvfs(shm)
        roomy = st.f_bavail * st.f_frsize >= 2 << 30
        if roomy and os.access(shm, os.W_OK | os.X_OK) and _is_tmpfs(shm):
            return shm
    except OSError:
        pass
    return Path(tempfile.gettempdir())


def _is_tmpfs(path: Path) -> bool:
    try:
        with open("/proc/self/mounts") as f:
            return any(line.split()[1] == str(path) and line.split()[2] == "tmpfs" for line in f)
    except OSError:
        return False


def _find_marked(token: bytes) -> list[int]:
    """PIDs whose environment carries ``token`` (the per-run marker)."""
    hits: list[int] = []
    me = os.getpid()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if token in f.read():
                    hits.append(int(entry))
        except OSError:
            continue
    return hits


def sweep_marked(token: bytes, rounds: int = 10) -> int:
    """SIGKILL every process carrying ``token``; repeat while new ones appear. Returns count."""
    killed = 0
    for _ in range(rounds):
        pids = _find_marked(token)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                killed += 1
            except OSError:
                pass
        time.sleep(0.02)
    return killed


_SECCOMP_ARCHES = ("x86_64", "aarch64")


def _other_can_traverse(path: str) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return bool(st.st_mode & stat.S_IXOTH)


def _ancestors(path: str) -> list[str]:
    """``/a/b/c`` -> ``['/a', '/a/b', '/a/b/c']``."""
    parts = Path(path).parts[1:]
    return ["/" + "/".join(parts[: i + 1]) for i in range(len(parts))]


_SYSTEM_DIRS = ("/usr", "/etc", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def _python_paths(python: str) -> list[str]:
    """Dirs an interpreter needs: its real binary's dir and, for ours, the prefixes."""
    real = os.path.realpath(python)
    paths = [os.path.dirname(real), os.path.dirname(os.path.abspath(python))]
    if os.path.realpath(sys.executable) == real or python == sys.executable:
        paths += [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    return [os.path.realpath(p) for p in dict.fromkeys(paths)]


def build_view(pythons: list[str], extra: list[str] | tuple[str, ...] = ()) -> View:
    """System dirs, the interpreters' prefixes and ``extra`` paths; nested ones folded."""
    links: list[tuple[str, str]] = []
    dirs: list[str] = []
    for d in _SYSTEM_DIRS:
        if os.path.islink(d):
            links.append((d, os.readlink(d)))
        elif os.path.isdir(d):
            dirs.append(d)
    for py in pythons:
        dirs += _python_paths(py)
    dirs += [os.path.realpath(p) for p in extra]
    kept: list[str] = []
    for d in sorted(set(dirs), key=lambda p: (p.count("/"), p)):
        if not os.path.exists(d):
            continue
        if any(d == k or d.startswith(k.rstrip("/") + "/") for k in kept):
            continue
        kept.append(d)
    # The optiforge package itself (a non-editable install under site-packages) holds
    # the suites' answer keys: hide it. An editable install points outside the view.
    pkg = str(Path(__file__).resolve().parents[1])
    masks = tuple(pkg for k in kept if pkg.startswith(k.rstrip("/") + "/"))[:1]
    return View(ro_binds=tuple(kept), symlinks=tuple(links), masks=masks)


class LocalSandbox:
    """Runs commands as local subprocesses under the strongest isolation the machine allows.

    root: where per-run work dirs are created (default: ``default_root()``, /dev/shm
        when it is a roomy tmpfs, else the system temp dir).
    tracer: object with ``event(kind, **fields)``; gets one ``sandbox_run`` per run.
    max_output_bytes: cap per stream; the rest is drained and dropped.
    cpu_time_s: RLIMIT_CPU seconds; None means ``ceil(timeout_s) + 1`` per run.
    max_procs / max_open_files / max_file_mb: task cap (cgroup and RLIMIT_NPROC),
        RLIMIT_NOFILE, RLIMIT_FSIZE.
    tmpfs_mb: size of each of the private ``/tmp`` and ``/dev/shm``.
    max_collect_mb: what ``collect`` reads back per run, all files together (a file is
        judged by its apparent and its allocated size; the rest is skipped with a note).
    isolation: ``auto`` picks bwrap > unshare > none (the first that really runs);
        naming one that is missing raises ``SandboxUnavailable``.
    python: the interpreter candidates run with; its prefixes are made visible.
    extra_ro: more host paths to show read-only (data sets, a CUDA toolkit).
    warm: modules to pre-import in a zygote (``["numpy"]``): each ``python`` run of the
        sandbox's interpreter then runs in a fresh, equally isolated fork of it instead
        of a fresh interpreter (see ``optiforge.sandboxes.warm``). Where the host cannot
        isolate forked runs (not root, no namespaces) runs stay cold and
        ``protections().notes`` says so. ``None``: always cold.
    warm_env: environment the zygote imports the warm modules under (``OMP_NUM_THREADS``).
    """

    backend = "local"

    def __init__(
        self,
        *,
        root: str | os.PathLike[str] | None = None,
        tracer: Any | None = None,
        max_output_bytes: int = 1 << 20,
        cpu_time_s: float | None = None,
        max_procs: int = 256,
        max_open_files: int = 256,
        max_file_mb: int = 512,
        tmpfs_mb: int = 256,
        max_collect_mb: int = 64,
        isolation: Isolation = "auto",
        python: str = sys.executable,
        extra_ro: list[str] | tuple[str, ...] = (),
        warm: list[str] | tuple[str, ...] | None = None,
        warm_env: dict[str, str] | None = None,
    ) -> None:
        if max_output_bytes < 0 or max_procs < 1 or max_open_files < 8 or max_file_mb < 1:
            raise ConfigError(
                "LocalSandbox limits must be positive (max_open_files >= 8): "
                f"output={max_output_bytes} procs={max_procs} "
                f"nofile={max_open_files} file_mb={max_file_mb}"
            )
        if cpu_time_s is not None and cpu_time_s <= 0:
            raise ConfigError(f"cpu_time_s must be > 0, got {cpu_time_s}")
        if tmpfs_mb < 1:
            raise ConfigError(f"tmpfs_mb must be >= 1, got {tmpfs_mb}")
        if max_collect_mb < 1:
            raise ConfigError(f"max_collect_mb must be >= 1, got {max_collect_mb}")
        if isolation not in ("auto", "bwrap", "unshare", "none"):
            raise ConfigError(f"isolation must be auto|bwrap|unshare|none, got {isolation!r}")
        self.root = Path(root) if root is not None else default_root()
        if not self.root.is_dir():
            raise ConfigError(f"sandbox root {self.root} is not a directory")
        for p in extra_ro:
            if not os.path.isabs(p) or not os.path.exists(p):
                raise ConfigError(f"extra_ro path must be an existing absolute path: {p!r}")
        self.tracer = tracer
        self.max_output_bytes = max_output_bytes
        self.cpu_time_s = cpu_time_s
        self.max_procs = max_procs
        self.max_open_files = max_open_files
        self.max_file_mb = max_file_mb
        self.tmpfs_mb = tmpfs_mb
        self.max_collect_bytes = max_collect_mb << 20
        self.python = python
        self.view = build_view([python, sys.executable], extra_ro)
        self._notes: list[str] = []
        _sweep_once(str(self.root))
        self.host = host = host_isolation()
        # where the work dir is a disk (not a tmpfs charged to the run's memory cgroup),
        # a root caller bounds it with a tmpfs of its own per run (``memory_mb`` big)
        self._root_tmpfs = fs_type(self.root) == "tmpfs"
        self._mount_workdir = (
            not self._root_tmpfs and host.is_root and _can_mount_tmpfs(str(self.root)) is None
        )
        if not self._root_tmpfs and not self._mount_workdir:
            why = "not root" if not host.is_root else _can_mount_tmpfs(str(self.root))
            self._notes.append(
                f"the work-dir root {self.root} is a {fs_type(self.root)} disk and no tmpfs "
                f"can be mounted on each work dir ({why}): the work dir is bounded per file "
                "only (RLIMIT_FSIZE)"
            )
        if isolation == "auto":
            self.isolation: Isolation = "none"
            for mode, ok, why in (
                ("bwrap", host.bwrap, host.bwrap_error),
                ("unshare", host.unshare, host.unshare_error),
            ):
                err = self._verify(mode) if ok else why  # type: ignore[arg-type]
                if err is None:
                    self.isolation = mode  # type: ignore[assignment]
                    break
                self._notes.append(f"{mode} unavailable: {err}")
        elif isolation == "bwrap" and not host.bwrap:
            raise SandboxUnavailable(f"isolation='bwrap' requested but {host.bwrap_error}")
        elif isolation == "unshare" and not host.unshare:
            raise SandboxUnavailable(f"isolation='unshare' requested but {host.unshare_error}")
        else:
            self.isolation = isolation
            if isolation != "none" and (err := self._verify(isolation)) is not None:
                raise SandboxUnavailable(f"isolation={isolation!r} does not run here: {err}")
        # Without a fresh root view, a fresh uid must reach the interpreter on the host
        # (a pyenv under /root is 0700): if it cannot, mode none runs as root.
        self._reachable = all(
            _other_can_traverse(a) for p in _python_paths(python) for a in _ancestors(p)
        )
        if not host.is_root:
            self._notes.append("not root: the command runs as the caller's uid")
        elif self.isolation == "none" and not self._reachable:
            self._notes.append(
                "mode none runs the command as root: the interpreter is not reachable "
                "by an unprivileged uid"
            )
        self.warm = list(warm) if warm is not None else None
        self.warm_env = dict(warm_env or {})
        self._warm_pool: Any = None
        self._warm_off: str | None = None
        if self.warm is not None:
            for m in self.warm:
                if not isinstance(m, str) or not all(p.isidentifier() for p in m.split(".")):
                    raise ConfigError(f"warm modules must be dotted module names, got {m!r}")
            self._warm_off = warm_unavailable_reason(self)
            if self._warm_off is None:
                self._warm_pool = WarmPool(self, self.warm, self.warm_env)

    def close(self) -> None:
        """Stop the warm zygote, if any (idempotent; also done at exit)."""
        if self._warm_pool is not None:
            self._warm_pool.close()

    def __enter__(self) -> LocalSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __getstate__(self) -> dict[str, Any]:
        # a pickled copy (a worker process) starts its own zygote on first use
        state = self.__dict__.copy()
        if state.get("_warm_pool") is not None:
            state["_warm_pool"] = "restart"
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if self._warm_pool == "restart":
            self._warm_pool = WarmPool(self, self.warm or [], self.warm_env)

    def warm_active(self) -> bool:
        """Are eligible runs served warm (the pool is configured and has not failed)?"""
        return self._warm_pool is not None and self._warm_off is None

    def _warm_eligible(self, argv: list[str], env: dict[str, str] | None) -> bool:
        """Is ``argv`` this sandbox's own interpreter running ``-c``, ``-m`` or a script?"""
        if len(argv) < 2:
            return False
        path = (env or {}).get("PATH") or (
            os.path.dirname(os.path.abspath(self.python)) + ":" + os.environ.get("PATH", "")
        )
        exe = argv[0] if "/" in argv[0] else shutil.which(argv[0], path=path)
        if exe is None:
            return False
        mine = os.path.abspath(self.python)
        if not (
            os.path.dirname(os.path.abspath(exe)) == os.path.dirname(mine)
            and os.path.realpath(exe) == os.path.realpath(mine)
        ):
            return False
        if argv[1] in ("-c", "-m"):
            return len(argv) >= 3
        return not argv[1].startswith("-")

    def _verify(self, mode: str) -> str | None:
        """Run ``true`` once in ``mode`` (cached per process); None when it works."""
        return _verify_mode(mode, self.view)

    # -- the run --------------------------------------------------------------------

    def run(
        self,
        cmd: list[str] | str,
        *,
        files: dict[str, str | bytes] | None = None,
        timeout_s: float = 60.0,
        memory_mb: int = 2048,
        network: bool = False,
        env: dict[str, str] | None = None,
        collect: list[str] | None = None,
    ) -> ExecResult:
        """Run ``cmd`` in a fresh work dir; see ``Sandbox.run``. The work dir is deleted after."""
        argv = normalize_cmd(cmd)
        check_limits(timeout_s, memory_mb)
        from optiforge import deadline

        # a wall cap (``--max-wall-s``): a candidate still running at the deadline is killed
        timeout_s = deadline.clamp(timeout_s)
        if self.warm_active() and not network and self._warm_eligible(argv, env):
            try:
                return self._warm_pool.run(argv, True, files, timeout_s, memory_mb, env, collect)
            except WarmUnavailable as e:
                self._warm_off = str(e)  # fall back to cold starts from now on
        return _run(self, self.isolation, argv, files, timeout_s, memory_mb, network, env, collect)

    def protections(self, network: bool = False) -> Protections:
        """What a run in this sandbox is protected by (before a run; per run it is measured)."""
        prot = self._protections(
            network, seccomp=os.uname().machine in _SECCOMP_ARCHES, cgroups=None
        )
        if self.warm_active() and not network:
            mark_warm(prot, self)
        return prot

    def _protections(
        self, network: bool, *, seccomp: bool, cgroups: tuple[bool, bool] | None
    ) -> Protections:
        ns = self.isolation in ("bwrap", "unshare")
        root = self.host.is_root
        drop = root and (ns or self._reachable)
        pids_cg, mem_cg = (
            cgroups
            if cgroups is not None
            else (self.host.pids_cgroup is not None, self.host.memory_cgroup is not None)
        )
        if ns:
            fs_how = (
                f"{self.isolation}: minimal read-only root, work dir rw, "
                f"/tmp and /dev/shm tmpfs of {self.tmpfs_mb} MB"
            )
        elif drop:
            fs_how = "none: a fresh uid can still write world-writable dirs (/tmp, /dev/shm)"
        else:
            fs_how = "none: the command can write wherever the caller can"
        notes = list(self._notes)
        if getattr(self, "warm", None) is not None and self._warm_off is not None:
            notes.append(f"warm unavailable, cold starts: {self._warm_off}")
        if network:
            notes.append("network=True: host network shared on request")
        if ns and not mem_cg:
            notes.append("no memory cgroup: the work dir is bounded per file only (RLIMIT_FSIZE)")
        # the work dir is bounded by the memory cgroup when it lies on a tmpfs (its pages
        # are charged to the run), or by the tmpfs mounted on it for the run
        workdir_bounded = (mem_cg and getattr(self, "_root_tmpfs", True)) or getattr(
            self, "_mount_workdir", False
        )
        return Protections(
            backend="local",
            process_group=True,
            pid_namespace=ns,
            rlimit_as=True,
            rlimit_cpu=True,
            rlimit_fsize=True,
            rlimit_nproc=drop or not root,
            pids_cgroup=pids_cg,
            rlimit_nofile=True,
            memory_cap=True,
            env_scrubbed=True,
            output_capped=True,
            network_isolated=ns and not network,
            network_how=(
                ("netns-bwrap" if self.isolation == "bwrap" else "netns-unshare")  # type: ignore[arg-type]
                if ns and not network
                else "none"
            ),
            fs_write_confined=ns,
            fs_how=fs_how,
            run_as_uid=None if drop else os.geteuid(),
            privileges_dropped=drop,
            minimal_view=ns,
            proc_private=ns,
            seccomp=seccomp,
            no_new_privs=True,
            dies_with_parent=ns,
            disk_bounded=ns and workdir_bounded,
            memory_cgroup=mem_cg,
            network_requested=network,
            notes=notes,
        )

    def _communicate(
        self, proc: subprocess.Popen[bytes], deadline: float
    ) -> tuple[bytes, bytes, bool, bool, bool, int, Any]:
        """Drain both pipes (keeping the first N bytes), wait for exit, kill at ``deadline``.

        Uses a pidfd so exit is noticed even while an escaped descendant holds the pipes.
        Returns (stdout, stderr, out_truncated, err_truncated, timed_out, status, rusage).
        """
        assert proc.stdout is not None and proc.stderr is not None
        cap = self.max_output_bytes
        bufs = {1: bytearray(), 2: bytearray()}
        trunc = {1: False, 2: False}
        fds = {proc.stdout.fileno(): 1, proc.stderr.fileno(): 2}
        pidfd = os.pidfd_open(proc.pid)
        sel = selectors.DefaultSelector()
        for fd in fds:
            sel.register(fd, selectors.EVENT_READ, "pipe")
        sel.register(pidfd, selectors.EVENT_READ, "exit")
        timed_out = False
        status: int | None = None
        ru: Any = None
        drain_until: float | None = None
        try:
            while sel.get_map():
                now = time.perf_counter()
                limit = drain_until if drain_until is not None else deadline
                if now >= limit:
                    if status is None:
                        timed_out = True
                        self._kill_group(proc, pidfd)
                        status, ru = self._reap(proc)
                        sel.unregister(pidfd)
                        drain_until = time.perf_counter() + _DRAIN_AFTER_EXIT_S
                        continue
                    break  # an escaped descendant still holds a pipe; stop reading
                for key, _ in sel.select(limit - now):
                    if key.data == "exit":
                        sel.unregister(pidfd)
                        status, ru = self._reap(proc)
                        drain_until = time.perf_counter() + _DRAIN_AFTER_EXIT_S
                        continue
                    fd = int(key.fd)  # type: ignore[call-overload]
                    chunk = os.read(fd, 1 << 16)
                    if not chunk:
                        sel.unregister(fd)
                        continue
                    stream = fds[fd]
                    room = cap - len(bufs[stream])
                    if room > 0:
                        bufs[stream] += chunk[:room]
                    if len(chunk) > room:
                        trunc[stream] = True
                if status is not None and len(sel.get_map()) == 0:
                    break
        finally:
            sel.close()
            os.close(pidfd)
            proc.stdout.close()
            proc.stderr.close()
        if status is None:
            status, ru = self._reap(proc)
        return bytes(bufs[1]), bytes(bufs[2]), trunc[1], trunc[2], timed_out, status, ru

    @staticmethod
    def _reap(proc: subprocess.Popen[bytes]) -> tuple[int, Any]:
        """wait4 the child: its exit status and rusage (ru_maxrss covers reaped descendants)."""
        _, status, ru = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)  # keep Popen from waiting again
        return status, ru

    @staticmethod
    def _kill_group(proc: subprocess.Popen[bytes], pidfd: int) -> None:
        """SIGTERM the command and all its descendants, short grace, then SIGKILL them.

        Descendants are found by the parent-pid tree, so children that called setsid
        (left our process group) are included. SIGKILL from our (ancestor) namespace
        is the one signal a PID-namespace init cannot ignore, and its death takes the
        whole namespace down; the parent-death signal is no substitute because a uid
        change clears it and namespace inits ignore it.
        """
        pgid = proc.pid  # start_new_session: the child leads its own group
        tree = [proc.pid, *descendants(proc.pid)]
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if sig == signal.SIGKILL:
                tree = list(dict.fromkeys(tree + descendants(proc.pid)))
            for pid in reversed(tree):  # innermost first, so parents do not respawn
                with contextlib.suppress(OSError):
                    os.kill(pid, sig)
            with contextlib.suppress(OSError):
                os.killpg(pgid, sig)
            if sig == signal.SIGTERM:
                sel = selectors.DefaultSelector()
                sel.register(pidfd, selectors.EVENT_READ)
                try:
                    sel.select(_KILL_GRACE_S)
                finally:
                    sel.close()


@functools.cache
def _verify_mode(mode: str, view: View) -> str | None:
    """Run ``true`` through ``mode`` with ``view``; None when it works, else why not."""
    probe = LocalSandbox(isolation="none")
    probe.isolation = mode  # type: ignore[assignment]
    probe.view = view
    try:
        r = _run(
            probe, mode, [shutil.which("true") or "/bin/true"], None, 10.0, 256, False, None, None
        )
    except SandboxError as e:
        return str(e)
    if r.returncode != 0:
        return f"exit {r.returncode}: {r.stderr.strip()[-300:]}"
    return None


def _bwrap_argv(sb: LocalSandbox, workdir: str, network: bool) -> list[str]:
    host = sb.host
    assert host.bwrap is not None
    argv = [host.bwrap, "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    argv += [] if network else ["--unshare-net"]
    argv += ["--die-with-parent", "--as-pid-1", "--hostname", "sandbox"]
    if host.is_root:
        # the init needs these two to switch to the run's uid; they vanish with the switch
        argv += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    for link, target in sb.view.symlinks:
        argv += ["--symlink", target, link]
    size = str(sb.tmpfs_mb << 20)
    argv += ["--dev", "/dev", "--proc", "/proc"]
    # the private /tmp and /dev/shm first: a view path under them (a venv under /tmp)
    # is bound onto the fresh tmpfs instead of being hidden by it
    for d in ("/tmp", "/dev/shm"):
        argv += ["--size", size, "--perms", "1777", "--tmpfs", d]
    made: set[str] = {"/dev", "/tmp", "/dev/shm"}
    for path in sb.view.ro_binds:
        # bwrap would copy the host's modes (a 0700 /root): make the parents traversable
        for anc in _ancestors(path)[:-1]:
            if anc not in made:
                made.add(anc)
                argv += ["--perms", "0755", "--dir", anc]
        argv += ["--ro-bind", path, path]
    for path in sb.view.masks:
        argv += ["--tmpfs", path, "--remount-ro", path]
    # a root below /tmp (a test's tmp dir) lies in the fresh tmpfs: bwrap would make its
    # parents 0700 root-owned, which the run's uid cannot traverse
    for anc in _ancestors(workdir)[:-1]:
        inside = any(anc == b or anc.startswith(b.rstrip("/") + "/") for b in sb.view.ro_binds)
        if anc not in made and not inside:
            made.add(anc)
            argv += ["--perms", "0755", "--dir", anc]
    argv += ["--bind", workdir, workdir, "--remount-ro", "/", "--chdir", workdir, "--"]
    return argv


def _run(
    sb: LocalSandbox,
    mode: str,
    argv: list[str],
    files: dict[str, str | bytes] | None,
    timeout_s: float,
    memory_mb: int,
    network: bool,
    env: dict[str, str] | None,
    collect: list[str] | None,
) -> ExecResult:
    workdir = tempfile.mkdtemp(prefix=owner_prefix(), dir=sb.root)
    newroot = workdir + ".root"
    token = uuid.uuid4().hex
    cgroup = memcg = None
    fds: list[int] = []
    try:
        if sb._mount_workdir and (why := mount_tmpfs(workdir, memory_mb)) is not None:
            raise SandboxError(f"could not bound the work dir on {sb.root} with a tmpfs: {why}")
        wd = Path(workdir)
        (wd / "tmp").mkdir()
        write_files(wd, files)
        uid = gid = None
        if sb.host.is_root and (mode != "none" or sb._reachable):
            uid, gid = fresh_id(), fresh_id()
            # 0711 under bwrap: bwrap (root without capabilities) must chdir into it
            os.chmod(wd, 0o711 if mode == "bwrap" else 0o700)
            for dirpath, dirnames, filenames in os.walk(wd):
                os.chown(dirpath, uid, gid)
                for name in dirnames + filenames:
                    os.lchown(os.path.join(dirpath, name), uid, gid)
        if mode == "unshare":
            os.mkdir(newroot, 0o700)
        child_env = scrubbed_env(workdir, env)
        if "PATH" not in (env or {}):
            # `python` means the sandbox's interpreter (a venv's), not a pyenv shim
            child_env["PATH"] = (
                os.path.dirname(os.path.abspath(sb.python)) + ":" + child_env["PATH"]
            )
        if mode == "none" and uid is None:
            child_env[MARKER_VAR] = token
        cpu = sb.cpu_time_s if sb.cpu_time_s is not None else math.ceil(timeout_s) + 1
        nproc = sb.max_procs if uid is not None else sb.max_procs + count_tasks(os.getuid())
        # (resource, soft, hard): hard = soft except CPU time, whose soft limit raises
        # SIGXCPU (a death the result can name); a command that ignores it is SIGKILLed
        # one CPU-second later at the hard limit
        rlimits = [
            (int(resource.RLIMIT_AS), memory_mb << 20, memory_mb << 20),
            (int(resource.RLIMIT_CPU), math.ceil(cpu), math.ceil(cpu) + 1),
            (int(resource.RLIMIT_FSIZE), sb.max_file_mb << 20, sb.max_file_mb << 20),
            (int(resource.RLIMIT_NOFILE), sb.max_open_files, sb.max_open_files),
            (int(resource.RLIMIT_NPROC), nproc, nproc),
            (int(resource.RLIMIT_CORE), 0, 0),
        ]
        cgroup = make_pids_cgroup(sb, token)
        memcg = make_memory_cgroup(sb, token, (memory_mb + 2 * sb.tmpfs_mb) << 20)
        for path, ctrl in ((cgroup, "pids"), (memcg, "memory")):
            if path is not None:
                name = "tasks" if sb.host.cgroup_v1.get(ctrl) else "cgroup.procs"
                fds.append(os.open(os.path.join(path, name), os.O_WRONLY | os.O_CLOEXEC))
        status_r, status_w = os.pipe()
        fds += [status_r, status_w]
        cfg = {
            "mode": mode,
            "ppid": os.getpid(),
            "status_fd": status_w,
            "cgroup_fds": fds[:-2],
            "network": network,
            "workdir": workdir,
            "newroot": newroot,
            "ro_binds": list(sb.view.ro_binds),
            "symlinks": [list(x) for x in sb.view.symlinks],
            "masks": list(sb.view.masks),
            "tmpfs_kb": sb.tmpfs_mb << 10,
            "tmpfs_inodes": 65536,
            "rlimits": rlimits,
            "uid": uid,
            "gid": gid,
            "seccomp": True,
            "argv": argv,
            "env": child_env,
        }
        boot = [sys.executable, "-I", "-S", "-c", BOOT]
        full = (_bwrap_argv(sb, workdir, network) if mode == "bwrap" else []) + boot
        code = init_code()
        blob = marshal.dumps(cfg)
        t0 = time.perf_counter()
        try:
            proc = subprocess.Popen(
                full,
                cwd=workdir,
                env=child_env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                pass_fds=fds[:-2] + [status_w],
            )
        except OSError as e:
            raise SandboxError(f"could not start the sandbox init: {e}") from e
        for fd in fds[:-2] + [status_w]:
            os.close(fd)
        fds = [status_r]
        assert proc.stdin is not None
        try:
            proc.stdin.write(len(code).to_bytes(8, "little") + code)
            proc.stdin.write(len(blob).to_bytes(8, "little") + blob)
            proc.stdin.close()
        except OSError:
            pass  # the init died early: its status says why
        try:
            out, err, out_trunc, err_trunc, timed_out, status, ru = sb._communicate(
                proc, t0 + timeout_s
            )
        except BaseException:
            # Interrupted (Ctrl-C, an internal error): never leave the command running.
            for pid in [proc.pid, *descendants(proc.pid)]:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            if cgroup:
                kill_cgroup(cgroup)
            if uid is not None:
                kill_uid(uid)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(proc.pid, 0)
            raise
        duration = time.perf_counter() - t0
        swept = kill_cgroup(cgroup) if cgroup else 0
        if mode == "none":
            swept += (
                kill_uid(uid) if uid is not None else sweep_marked(f"{MARKER_VAR}={token}".encode())
            )
        os.set_blocking(status_r, False)
        try:
            setup = os.read(status_r, 8192).decode(errors="replace")
        except BlockingIOError:
            setup = ""
        peak_bytes = (
            read_int(os.path.join(memcg, sb.host.memory_cgroup[1]))
            if memcg and sb.host.memory_cgroup
            else None
        )
        oom_kills = oom_kill_count(sb, memcg)
        killed_early = not setup and os.WIFSIGNALED(status) and os.WTERMSIG(status) == 9
        if killed_early:
            # SIGKILLed from outside before the init reported: a failed run, not a crash
            setup = "ok seccomp=0"
            cnotes_early = ["the sandbox was killed (SIGKILL) before its setup reported"]
        else:
            cnotes_early = []
        if not setup.startswith("ok"):
            why = setup[4:].strip() if setup.startswith("err") else ""
            if not why:
                tail = err.decode(errors="replace").strip().splitlines()
                why = tail[-1] if tail else f"exit status {os.waitstatus_to_exitcode(status)}"
            raise SandboxError(f"sandbox setup failed ({mode}): {why}")
        collected, cnotes = collect_files(wd, collect, sb.max_file_mb << 20, sb.max_collect_bytes)
        cnotes = cnotes_early + cnotes
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)
        remove_cgroup(cgroup)
        if memcg is not None:
            remove_cgroup(memcg)
        if os.path.isdir(newroot):
            with contextlib.suppress(OSError):
                os.rmdir(newroot)
        # iterative, at any depth; a failure is logged (a sweep retries), never raised
        remove_quietly(workdir)
    return run_result(
        sb,
        network,
        out,
        err,
        (out_trunc, err_trunc),
        timed_out,
        status,
        ru,
        duration,
        cpu,
        setup,
        peak_bytes,
        swept,
        (cgroup is not None, memcg is not None),
        collected,
        cnotes,
        oom_kills=oom_kills,
    )


def _owner_alive(name: str, prefix: str) -> bool:
    """Is the process that made ``prefix<pid>-...`` still alive (True when unparsable)?"""
    try:
        pid = int(name[len(prefix) :].split("-", 1)[0])
    except ValueError:
        return True
    return os.path.exists(f"/proc/{pid}")


def sweep_stale(root: str | os.PathLike[str]) -> int:
    """Remove work dirs and cgroups left by sandbox parents that died (SIGKILL); returns count.

    A killed parent's run dies with it (parent-death signal), but the parent cannot
    delete its work dir or cgroups any more: the next sandbox in any process does
    (and every optiforge command at start, ``workdirs.sweep_default_roots``). Never
    raises: a leftover that cannot be removed is logged and left for the next sweep.
    """
    removed = sweep_work_dirs(root)
    try:
        host = host_isolation()
    except Exception as e:  # noqa: BLE001 - a sweep must never stop its caller
        log.warning("sandbox sweep: cannot probe cgroups: %s", e)
        return removed
    bases = [host.pids_cgroup, host.memory_cgroup[0] if host.memory_cgroup else None]
    for base, prefix in zip(bases, ("optiforge-", "optiforge-mem-"), strict=True):
        if base is None:
            continue
        try:
            names = os.listdir(base)
        except OSError:
            continue
        for name in names:
            if not name.startswith(prefix) or (
                prefix == "optiforge-" and name.startswith("optiforge-mem-")
            ):
                continue
            if not _owner_alive(name, prefix):
                path = os.path.join(base, name)
                try:
                    kill_cgroup(path)
                    remove_cgroup(path)
                    removed += 1
                except Exception as e:  # noqa: BLE001 - logged; the next sweep retries
                    log.warning("sandbox sweep: could not remove cgroup %s: %s", path, e)
    return removed


@functools.cache
def _sweep_once(root: str) -> int:
    return sweep_stale(root)


@functools.cache
def _can_mount_tmpfs(root: str) -> str | None:
    """Can a tmpfs be mounted on a work dir under ``root``? None when it can, else why not."""
    probe = tempfile.mkdtemp(prefix=owner_prefix() + "probe", dir=root)
    try:
        why = mount_tmpfs(probe, 1)
        return why
    finally:
        remove_quietly(probe)
