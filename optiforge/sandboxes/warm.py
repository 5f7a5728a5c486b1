"""Warm sandboxed workers: ``LocalSandbox(warm=["numpy"])`` forks each run from a zygote.

A cold run starts a fresh sandbox and a fresh interpreter that imports its heavy
modules (numpy: ~60 ms of a ~100 ms funcfit evaluation). A ``WarmPool`` starts once a
**zygote**: the sandbox's own interpreter, inside the unshare mode's namespaces and
minimal read-only root, that imports the warm modules and then only forks. Each run
is a fresh fork, isolated like a cold run and from the zygote:

* C0 (the fork, trusted code) reads the run's request from a memfd the parent made,
  unshares new mount, PID, IPC, UTS and network namespaces and forks
* C1, pid 1 of the run's own PID namespace, which joins the run's pids and memory
  cgroups, detaches the zygote's ``/proc``, ``/tmp`` and ``/dev/shm`` and mounts fresh
  ones (size-bounded tmpfs), binds the run's work dir from an fd the parent opened
  (no other run's dir, nor the host's work-dir root, is in its view), brings up its
  own loopback, and forks
* C2, the command: new session, rlimits (hard = soft), a fresh random uid/gid,
  ``PR_SET_NO_NEW_PRIVS``, the seccomp filter, every other fd closed, then the Python
  program runs in-process (``python -c``, ``-m``, a script) with the modules already
  imported; anything else is ``exec``-ed, isolated the same way.

The isolation argument, clause by clause of ``CONTAINMENT_PROMISE``:

* no_secrets: the zygote is a fresh ``exec`` of the interpreter (not a fork of the
  caller) with the scrubbed environment; it receives per run one byte and a few fds,
  never a request (argv, env and files live in a memfd and the work dir, read only
  by that run's C0), so the memory a run inherits holds no caller secret and nothing
  of any other run. ``/proc`` is the run's own; every inherited fd is closed.
* no_network: each run gets its own network namespace (only its own loopback), so
  two runs cannot even meet on ``127.0.0.1`` or an abstract unix socket.
* writes_confined: the root is the zygote's read-only root; writable are the run's
  own work dir and its own fresh tmpfs ``/tmp`` and ``/dev/shm`` (bounded), all gone
  with the run. The zygote's memory is copy-on-write: a run that monkeypatches
  numpy changes only its own copy (the zygote refuses to start if a warm import left
  a writable shared mapping, the one way a fork could write back).
* no_signals_or_ptrace: the command runs as a fresh uid in a PID namespace nested in
  the pool's: the zygote, C0 and sibling runs have no pid it can name, and seccomp
  refuses ptrace, ``process_vm_*``, ``kcmp``, ``pidfd_getfd``.
* no_view_of_others: own PID namespace and ``/proc``, own ``/tmp`` and ``/dev/shm``,
  only its own work dir.
* minimal_read_view: the zygote's root is the unshare mode's minimal view.
* dies_with_timeout_and_parent: on timeout the parent SIGKILLs C1 through a pidfd C0
  passed back (pid 1 of the run's namespace: its death kills every process of the
  run) and then the run's cgroup and uid; the zygote is pid 1 of the pool's
  namespace with a parent-death SIGKILL chained to the caller, so killing the caller
  takes the zygote and every run down.
* bounded_resources: per run rlimits (AS, CPU, FSIZE, NOFILE, NPROC), pids and memory
  cgroups, bounded tmpfs, exactly as a cold run.

Needs root and working namespaces (``HostIsolation.unshare``); where they are missing,
or the zygote cannot start, runs fall back to cold starts and ``protections().notes``
says why. Not warm (cold, as before): ``network=True`` runs and any command that is not
the sandbox's own interpreter running ``-c``/``-m``/a script. Caveats of a fork: the
hash seed is the zygote's (``random`` and ``numpy.random`` are reseeded per run), and
environment variables read at import time by a warm module (``OMP_NUM_THREADS``) are
those the pool was started with (``warm_env``), not the run's.
"""

from __future__ import annotations

import contextlib
import marshal
import math
import os
import resource
import selectors
import signal
import socket
import subprocess
import tempfile
import threading
import time
import uuid
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from optiforge.errors import SandboxError
from optiforge.sandboxes.base import ExecResult, collect_files, scrubbed_env, write_files
from optiforge.sandboxes.boot import BOOT, fresh_id, init_code
from optiforge.sandboxes.cgroups import (
    kill_cgroup,
    kill_uid,
    make_memory_cgroup,
    make_pids_cgroup,
    oom_kill_count,
    read_int,
    remove_cgroup,
)
from optiforge.sandboxes.host import RunSandbox
from optiforge.sandboxes.results import run_result
from optiforge.sandboxes.workdirs import fs_type, owner_prefix, remove_quietly

_START_TIMEOUT_S = 60.0
_KILL_WAIT_S = 2.0
_DRAIN_AFTER_EXIT_S = 0.5
_TMPFS_DIRS = ("/tmp", "/dev/shm")
_SUPERVISOR_DIED = "the run's supervisor died"
SPOOL = "/.optiforge-spool"
"""Where the zygote's view holds the pool's run dirs (each run detaches it)."""


class WarmUnavailable(SandboxError):
    """The warm pool cannot serve this run (the caller falls back to a cold start)."""


def warm_unavailable_reason(sb: RunSandbox) -> str | None:
    """Why this sandbox cannot run warm on this host (None: it can)."""
    host = sb.host
    if sb.isolation not in ("bwrap", "unshare"):
        return f"isolation {sb.isolation!r} has no namespaces to fork runs into"
    if not host.is_root:
        return "warm runs need root (the zygote mounts each run's own view)"
    if not host.unshare:
        return f"namespaces unavailable: {host.unshare_error}"
    if not hasattr(os, "pidfd_open") or not hasattr(os, "memfd_create"):
        return "the kernel/Python lacks pidfd_open or memfd_create"
    root = os.path.realpath(sb.root)
    in_tmpfs = any(root == d or root.startswith(d + "/") for d in _TMPFS_DIRS)
    if fs_type(root) != "tmpfs":
        # a run's dir is bound into the zygote's private mount tree: a tmpfs mounted on
        # it per run (what bounds a cold run's dir on a disk) would not reach the run
        return f"the work-dir root {root} is not a tmpfs (warm run dirs would be unbounded)"
    if not in_tmpfs and any(
        root == b or root.startswith(b.rstrip("/") + "/") for b in sb.view.ro_binds
    ):
        return f"the work-dir root {root} lies inside the read-only view"
    return None


class WarmPool:
    """One zygote serving warm runs for one ``LocalSandbox`` (thread-safe, lazily started)."""

    def __init__(self, sb: RunSandbox, modules: list[str], env: dict[str, str] | None) -> None:
        self.sb = sb
        self.modules = list(modules)
        self.env = dict(env or {})
        self._lock = threading.Lock()
        self._ctl: socket.socket | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._owner = os.getpid()
        self._holder: threading.Thread | None = None
        self._stop = threading.Event()
        self._newroot: str | None = None
        self._spool: str | None = None
        self.zygote_pid: int | None = None
        """The zygote's pid as seen from the host (pid 1 of the pool's namespace)."""
        self.generation = 0
        """How many zygotes this pool has started (a restart means the last one died)."""

    # -- lifecycle ---------------------------------------------------------------------

    def alive(self) -> bool:
        return (
            self._owner == os.getpid()
            and self._proc is not None
            and self._proc.poll() is None
            and self.zygote_pid is not None
            and os.path.exists(f"/proc/{self.zygote_pid}")
        )

    def ensure(self) -> socket.socket:
        """The control socket of a live zygote, (re)starting one if needed."""
        with self._lock:
            if not self.alive():
                self._close_locked()
                self._start_locked()
            assert self._ctl is not None
            return self._ctl

    def close(self) -> None:
        with self._lock:
            self._close_locked()

    def _close_locked(self) -> None:
        if self._owner != os.getpid():  # inherited over fork: the zygote is not ours
            self._ctl = self._proc = None
            self._owner = os.getpid()
            return
        if self._ctl is not None:
            with contextlib.suppress(OSError):
                self._ctl.close()
        if self._proc is not None:
            with contextlib.suppress(OSError):
                self._proc.kill()
            with contextlib.suppress(Exception):
                self._proc.wait(5)
        self._stop.set()
        if self._newroot and os.path.isdir(self._newroot):
            with contextlib.suppress(OSError):
                os.rmdir(self._newroot)
        if self._spool:
            remove_quietly(self._spool)  # iterative: a deep run dir cannot crash the close
        self._ctl = self._proc = self._newroot = self._spool = self.zygote_pid = None

    def _start_locked(self) -> None:
        sb = self.sb
        token = uuid.uuid4().hex[:12]
        newroot = os.path.join(str(sb.root), f"{owner_prefix()}warm{token}.root")
        os.mkdir(newroot, 0o700)
        self._newroot = newroot
        spool = os.path.join(str(sb.root), f"{owner_prefix()}warm{token}.spool")
        os.mkdir(spool, 0o711)
        self._spool = spool
        ctl, child_ctl = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        status_r, status_w = os.pipe()
        root = os.path.realpath(sb.root)
        in_tmpfs = any(root == d or root.startswith(d + "/") for d in _TMPFS_DIRS)
        env = scrubbed_env("/", self.env)
        env.pop("TMPDIR", None)
        env["PATH"] = os.path.dirname(os.path.abspath(sb.python)) + ":" + env["PATH"]
        cfg = {
            "mode": "zygote",
            "ppid": os.getpid(),
            "status_fd": status_w,
            "cgroup_fds": [],
            "network": False,
            "workdir": None,
            "newroot": newroot,
            "ro_binds": list(sb.view.ro_binds),
            "symlinks": [list(x) for x in sb.view.symlinks],
            "masks": list(sb.view.masks),
            "mountpoints": [] if in_tmpfs else [root],
            "rw_binds": [[spool, SPOOL]],
            "tmpfs_kb": 1024,
            "tmpfs_inodes": 1024,
            "warm": self.modules,
            "ctl_fd": child_ctl.fileno(),
        }
        code = init_code()
        blob = marshal.dumps(cfg)
        started = threading.Event()
        box: dict[str, Any] = {}
        self._stop = stop = threading.Event()

        def hold() -> None:
            # The zygote's parent-death signal follows the *thread* that started it:
            # a thread that lives as long as the pool keeps a finished worker thread
            # from taking the zygote down.
            try:
                box["proc"] = subprocess.Popen(
                    [sb.python, "-I", "-c", BOOT],
                    cwd="/",
                    env=env,
                    stdin=subprocess.PIPE,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                    pass_fds=[child_ctl.fileno(), status_w],
                )
            except OSError as e:
                box["error"] = e
            finally:
                started.set()
            stop.wait()

        self._holder = threading.Thread(target=hold, name="optiforge-warm-zygote", daemon=True)
        self._holder.start()
        started.wait()
        child_ctl.close()
        os.close(status_w)
        try:
            if "error" in box:
                raise WarmUnavailable(f"could not start the zygote: {box['error']}")
            proc: subprocess.Popen[bytes] = box["proc"]
            self._proc = proc
            assert proc.stdin is not None
            with contextlib.suppress(OSError):
                proc.stdin.write(len(code).to_bytes(8, "little") + code)
                proc.stdin.write(len(blob).to_bytes(8, "little") + blob)
                proc.stdin.close()
            line = _read_line(status_r, _START_TIMEOUT_S)
        finally:
            os.close(status_r)
        if not line.startswith("ok zygote"):
            ctl.close()
            self._ctl = ctl
            self._close_locked()
            raise WarmUnavailable(
                f"the zygote did not start: {line[4:].strip() if line else 'no status'}"
            )
        self._ctl = ctl
        self.zygote_pid = _host_pid_of_ns_init(proc.pid)
        self.generation += 1

    # -- one run -------------------------------------------------------------------------

    def run(
        self,
        argv: list[str],
        inproc: bool,
        files: dict[str, str | bytes] | None,
        timeout_s: float,
        memory_mb: int,
        env: dict[str, str] | None,
        collect: list[str] | None,
    ) -> ExecResult:
        sb = self.sb
        ctl = self.ensure()
        assert self._spool is not None
        # on the host the run's dir lies in the pool's spool; the run sees it at the
        # path a cold run would have (under the sandbox root), with the spool hidden
        hostdir = tempfile.mkdtemp(prefix=owner_prefix(), dir=self._spool)
        workdir = os.path.join(str(sb.root), os.path.basename(hostdir))
        token = uuid.uuid4().hex
        cgroup = memcg = None
        mine: list[int] = []  # fds to close at the end
        theirs: list[int] = []  # fds handed to the run (closed here once sent)
        psock: socket.socket | None = None
        uid, gid = fresh_id(), fresh_id()
        try:
            wd = Path(hostdir)
            (wd / "tmp").mkdir()
            write_files(wd, files)
            os.chmod(wd, 0o700)
            for dirpath, dirnames, filenames in os.walk(wd):
                os.chown(dirpath, uid, gid)
                for name in dirnames + filenames:
                    os.lchown(os.path.join(dirpath, name), uid, gid)
            child_env = scrubbed_env(workdir, env)
            if "PATH" not in (env or {}):
                child_env["PATH"] = (
                    os.path.dirname(os.path.abspath(sb.python)) + ":" + child_env["PATH"]
                )
            cpu = sb.cpu_time_s if sb.cpu_time_s is not None else math.ceil(timeout_s) + 1
            rlimits = [
                (int(resource.RLIMIT_AS), memory_mb << 20, memory_mb << 20),
                (int(resource.RLIMIT_CPU), math.ceil(cpu), math.ceil(cpu) + 1),
                (int(resource.RLIMIT_FSIZE), sb.max_file_mb << 20, sb.max_file_mb << 20),
                (int(resource.RLIMIT_NOFILE), sb.max_open_files, sb.max_open_files),
                (int(resource.RLIMIT_NPROC), sb.max_procs, sb.max_procs),
                (int(resource.RLIMIT_CORE), 0, 0),
            ]
            cgroup = make_pids_cgroup(sb, token)
            memcg = make_memory_cgroup(sb, token, (memory_mb + 2 * sb.tmpfs_mb) << 20)
            cg_fds = []
            for path, ctrl in ((cgroup, "pids"), (memcg, "memory")):
                if path is not None:
                    name = "tasks" if sb.host.cgroup_v1.get(ctrl) else "cgroup.procs"
                    cg_fds.append(os.open(os.path.join(path, name), os.O_WRONLY | os.O_CLOEXEC))
            theirs += cg_fds
            req = {
                "workdir": workdir,
                "uid": uid,
                "gid": gid,
                "rlimits": rlimits,
                "seccomp": True,
                "tmpfs_kb": sb.tmpfs_mb << 10,
                "tmpfs_inodes": 65536,
                "argv": argv,
                "env": child_env,
                "inproc": inproc,
                "spool": SPOOL,
                "spool_name": os.path.basename(hostdir),
            }
            memfd = os.memfd_create("optiforge-warm-req", os.MFD_CLOEXEC)
            theirs.append(memfd)
            _write_all(memfd, marshal.dumps(req))
            os.lseek(memfd, 0, os.SEEK_SET)
            out_r, out_w = os.pipe()
            err_r, err_w = os.pipe()
            mine += [out_r, err_r]
            theirs += [out_w, err_w]
            psock, csock = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            theirs.append(csock.detach())
            t0 = time.perf_counter()
            fds = [theirs[-1], out_w, err_w, memfd, *cg_fds]
            try:
                socket.send_fds(ctl, [b"R"], fds)
            except OSError as e:
                raise WarmUnavailable(f"the zygote is gone: {e}") from e
            for fd in theirs:
                os.close(fd)
            theirs = []
            try:
                got = _communicate(sb.max_output_bytes, psock, out_r, err_r, t0 + timeout_s)
            except BaseException:
                # Interrupted: never leave the run going.
                if cgroup:
                    kill_cgroup(cgroup)
                kill_uid(uid)
                raise
            duration = time.perf_counter() - t0
            swept = kill_cgroup(cgroup) if cgroup else 0
            swept += kill_uid(uid)
            if got.error == _SUPERVISOR_DIED:
                # killed from outside (the run's supervisor, the zygote or its init got a
                # SIGKILL): the run failed, the caller did not; the next run restarts the
                # zygote if it is gone
                got.error = None
                got.killed_note = "the run was killed from outside (its supervisor died)"
            if got.error is not None:
                raise SandboxError(f"sandbox setup failed (warm): {got.error}")
            if got.status is None:
                raise SandboxError("sandbox setup failed (warm): the run reported no exit status")
            peak = (
                read_int(os.path.join(memcg, sb.host.memory_cgroup[1]))
                if memcg and sb.host.memory_cgroup
                else None
            )
            oom_kills = oom_kill_count(sb, memcg)
            collected, cnotes = collect_files(
                wd, collect, sb.max_file_mb << 20, sb.max_collect_bytes
            )
        finally:
            for fd in mine + theirs:
                with contextlib.suppress(OSError):
                    os.close(fd)
            if psock is not None:
                psock.close()
            remove_cgroup(cgroup)
            if memcg is not None:
                remove_cgroup(memcg)
            remove_quietly(hostdir)  # iterative, any depth; logged, never raised
        if got.killed_note:
            cnotes.append(got.killed_note)
        return run_result(
            sb,
            False,
            got.out,
            got.err,
            got.truncated,
            got.timed_out,
            got.status,
            got.ru,
            duration,
            cpu,
            f"ok seccomp={got.seccomp}",
            peak,
            swept,
            (cgroup is not None, memcg is not None),
            collected,
            cnotes,
            warm=True,
            oom_kills=oom_kills,
        )


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _read_line(fd: int, timeout_s: float) -> str:
    """Read the zygote's status pipe until a newline, EOF or the timeout."""
    buf = b""
    deadline = time.monotonic() + timeout_s
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    try:
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                break
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            buf += chunk
    finally:
        sel.close()
    return buf.decode(errors="replace")


def _host_pid_of_ns_init(outer: int) -> int | None:
    """The zygote (the outer init's only child) as a host pid."""
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            with open(f"/proc/{outer}/task/{outer}/children") as f:
                kids = f.read().split()
            if kids:
                return int(kids[0])
        time.sleep(0.005)
    return None


def _communicate(
    cap: int, psock: socket.socket, out_r: int, err_r: int, deadline: float
) -> SimpleNamespace:
    """Drain the run's pipes, read its messages (pidfd, setup status, exit), kill at deadline."""
    bufs = {out_r: bytearray(), err_r: bytearray()}
    trunc = {out_r: False, err_r: False}
    got = SimpleNamespace(
        status=None, ru=None, seccomp=0, error=None, timed_out=False, killed_note=None
    )
    pidfd: int | None = None
    sel = selectors.DefaultSelector()
    for fd in (out_r, err_r):
        sel.register(fd, selectors.EVENT_READ, "pipe")
    sel.register(psock, selectors.EVENT_READ, "msg")
    drain_until: float | None = None
    kill_until: float | None = None
    try:
        while sel.get_map():
            now = time.perf_counter()
            limit = drain_until or kill_until or deadline
            if now >= limit:
                if drain_until is not None:
                    break  # an escaped descendant holds a pipe: the sweep kills it
                if kill_until is not None:  # C0 never reported after the kill
                    got.status = signal.SIGKILL  # a waitstatus: killed by SIGKILL
                    got.killed_note = "the run did not report its exit after the kill"
                    break
                got.timed_out = True
                if pidfd is not None:
                    with contextlib.suppress(OSError):
                        signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                kill_until = time.perf_counter() + _KILL_WAIT_S
                continue
            for key, _ in sel.select(limit - now):
                if key.data == "msg":
                    try:
                        data, fds, _, _ = socket.recv_fds(psock, 1 << 16, 4)
                    except OSError:
                        data, fds = b"", []
                    if not data:
                        sel.unregister(psock)
                        if got.status is None:
                            got.error = got.error or _SUPERVISOR_DIED
                            got.status = signal.SIGKILL
                        drain_until = drain_until or time.perf_counter() + _DRAIN_AFTER_EXIT_S
                        continue
                    msg = marshal.loads(data)
                    if msg[0] == "pid" and fds:
                        pidfd = fds[0]
                        if got.timed_out:
                            with contextlib.suppress(OSError):
                                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                    elif msg[0] == "ok":
                        got.seccomp = int(msg[1])
                    elif msg[0] == "err":
                        got.error = str(msg[1])
                    elif msg[0] == "exit":
                        got.status = int(msg[1])
                        got.ru = SimpleNamespace(ru_utime=msg[2], ru_stime=msg[3], ru_maxrss=msg[4])
                        sel.unregister(psock)
                        drain_until = time.perf_counter() + _DRAIN_AFTER_EXIT_S
                    for extra in fds[1:] if msg[0] == "pid" else fds:
                        os.close(extra)
                    continue
                chunk = os.read(key.fd, 1 << 16)  # type: ignore[arg-type]
                if not chunk:
                    sel.unregister(key.fd)
                    continue
                fd = int(key.fd)  # type: ignore[call-overload]
                room = cap - len(bufs[fd])
                if room > 0:
                    bufs[fd] += chunk[:room]
                if len(chunk) > room:
                    trunc[fd] = True
            if got.status is not None and all(k.data == "msg" for k in sel.get_map().values()):
                break
    finally:
        sel.close()
        if pidfd is not None:
            os.close(pidfd)
    if got.ru is None:
        got.ru = SimpleNamespace(ru_utime=0.0, ru_stime=0.0, ru_maxrss=0)
    got.out, got.err = bytes(bufs[out_r]), bytes(bufs[err_r])
    got.truncated = (trunc[out_r], trunc[err_r])
    return got
