"""The ``Sandbox`` contract: ``run(cmd, ...) -> ExecResult``, plus the shared helpers.

Every back end reports, per run, which protections were really in force
(``ExecResult.protections``) instead of claiming isolation it did not achieve.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from pathlib import Path, PurePosixPath
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from optiforge.errors import SandboxError

NetworkHow = Literal["netns-bwrap", "netns-unshare", "docker-none", "none"]

CONTAINMENT_PROMISE: dict[str, str] = {
    "no_secrets": "the command sees no secret of the caller: a scrubbed environment, no "
    "other process's /proc entries, no view of the caller's home or files",
    "no_network": "no route to any network, the host's loopback included (unless the "
    "caller passed network=True)",
    "writes_confined": "writes only to its own work dir and a size-bounded private tmpfs "
    "(/tmp, /dev/shm); everything else is read-only",
    "no_signals_or_ptrace": "cannot signal, ptrace or read the memory of any process "
    "outside the run (an unprivileged uid, a PID namespace, seccomp)",
    "no_view_of_others": "sees no other process or other run (own PID namespace, fresh "
    "/proc, private /tmp and /dev/shm)",
    "minimal_read_view": "reads only what it needs: the interpreter, its libraries, "
    "system dirs and its own files; not the project's source, tests, answer keys or "
    "the user's home",
    "dies_with_timeout_and_parent": "every process of the run dies at the timeout and "
    "when the caller dies (SIGKILL included); nothing is left behind",
    "bounded_resources": "bounded memory, disk, processes, open files and CPU time",
}
"""The one containment promise every sandbox mode is measured against (clause -> text)."""


class Protections(BaseModel):
    """What a single run was actually protected by (measured/decided per run, not promised)."""

    model_config = ConfigDict(extra="forbid")

    backend: str
    """Back end that ran the command (``local`` or ``docker``)."""
    process_group: bool = False
    """The child ran in its own process group / session that was killed as a whole."""
    pid_namespace: bool = False
    """The child ran in a new PID namespace: killing its init kills every descendant."""
    rlimit_as: bool = False
    """RLIMIT_AS (address space) was set to ``memory_mb``."""
    rlimit_cpu: bool = False
    """RLIMIT_CPU was set (SIGXCPU/SIGKILL past the CPU-seconds limit)."""
    rlimit_fsize: bool = False
    """RLIMIT_FSIZE capped the size of any file the child writes."""
    rlimit_nproc: bool = False
    """RLIMIT_NPROC is effective (False when the child runs as root: root bypasses it)."""
    pids_cgroup: bool = False
    """A per-run pids cgroup capped the task count and was emptied (SIGKILL) after the run."""
    rlimit_nofile: bool = False
    """RLIMIT_NOFILE capped open file descriptors."""
    memory_cap: bool = False
    """Some memory cap was in force (RLIMIT_AS locally, cgroup mem_limit in Docker)."""
    env_scrubbed: bool = False
    """The child saw only an allow-listed environment plus what the caller passed."""
    output_capped: bool = False
    """stdout/stderr were read incrementally and truncated at ``max_output_bytes``."""
    network_isolated: bool = False
    """The child had no route to the host's network (only meaningful when network=False)."""
    network_how: NetworkHow = "none"
    """How the network was cut: ``netns-bwrap``, ``netns-unshare``, ``docker-none``, ``none``."""
    fs_write_confined: bool = False
    """Writes outside the work dir were refused (read-only root / tmpfs /tmp)."""
    fs_how: str = "none"
    """How writes were confined, or why they were not."""
    run_as_uid: int | None = None
    """Effective uid of the command (None when unknown, e.g. inside a container)."""
    privileges_dropped: bool = False
    """The command ran as an unprivileged uid although the caller is root."""
    minimal_view: bool = False
    """The file system view held only the interpreter, libraries, system dirs, the work dir."""
    proc_private: bool = False
    """``/proc`` was a fresh mount of the run's own PID namespace."""
    seccomp: bool = False
    """A seccomp filter refused ptrace, namespace, mount and similar syscalls."""
    no_new_privs: bool = False
    """``PR_SET_NO_NEW_PRIVS`` was set: setuid binaries cannot raise privileges."""
    dies_with_parent: bool = False
    """The run is killed by the kernel when the calling process dies."""
    disk_bounded: bool = False
    """Every writable place (work dir, tmpfs) was bounded in size (tmpfs size, cgroup)."""
    memory_cgroup: bool = False
    """A per-run memory cgroup bounded (and measured) the run's total memory."""
    network_requested: bool = False
    """The caller asked for network access (network=True)."""
    warm: bool = False
    """The run was a fresh fork of a warm zygote (``LocalSandbox(warm=...)``), not a cold start."""
    notes: list[str] = Field(default_factory=list)
    """Human-readable caveats (e.g. why a protection was not available)."""

    def unmet(self) -> dict[str, str]:
        """Clauses of ``CONTAINMENT_PROMISE`` this run did not meet -> why (empty: all met)."""
        out: dict[str, str] = {}
        confined_uid = self.privileges_dropped or (self.run_as_uid not in (0, None))
        if not (self.env_scrubbed and self.minimal_view and self.proc_private):
            out["no_secrets"] = "the caller's files or other processes' /proc entries are readable"
        if self.network_requested:
            out["no_network"] = "network=True was requested"
        elif not self.network_isolated:
            out["no_network"] = "no network namespace"
        if not (self.fs_write_confined and self.disk_bounded):
            out["writes_confined"] = self.fs_how if not self.fs_write_confined else "disk unbounded"
        if not (self.pid_namespace and confined_uid and self.seccomp):
            missing = [
                n
                for n, ok in (
                    ("PID namespace", self.pid_namespace),
                    ("unprivileged uid", confined_uid),
                    ("seccomp", self.seccomp),
                )
                if not ok
            ]
            out["no_signals_or_ptrace"] = "missing: " + ", ".join(missing)
        if not (self.pid_namespace and self.proc_private and self.minimal_view):
            out["no_view_of_others"] = "host processes or other runs' files are visible"
        if not self.minimal_view:
            out["minimal_read_view"] = "the whole file system is readable"
        if not (self.process_group and self.pid_namespace and self.dies_with_parent):
            out["dies_with_timeout_and_parent"] = "the command can outlive a killed caller"
        bounded = (
            self.memory_cap
            and self.rlimit_cpu
            and self.rlimit_nofile
            and (self.pids_cgroup or self.rlimit_nproc)
            and self.disk_bounded
        )
        if not bounded:
            out["bounded_resources"] = "memory, disk, processes, files or CPU unbounded"
        return out

    def summary(self) -> dict[str, Any]:
        """A compact JSON-serialisable view for tracer events."""
        return self.model_dump(exclude={"notes"})


class ExecResult(BaseModel):
    """The outcome of one sandboxed command."""

    model_config = ConfigDict(extra="forbid")

    returncode: int
    """Exit status; negative ``-N`` when the command died from signal N (Popen convention)."""
    stdout: str
    stderr: str
    duration_s: float
    peak_rss_mb: float
    """Peak resident set of the command and its waited-for descendants (ru_maxrss)."""
    timed_out: bool
    files: dict[str, bytes | str] = Field(default_factory=dict)
    """Collected output files, relative path -> content (str when valid UTF-8)."""
    protections: Protections
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    killed_by: str | None = None
    """None, ``timeout``, ``signal N``, ``memory`` (allocation refused/OOM), ``cpu``."""

    @property
    def ok(self) -> bool:
        """True when the command exited 0 without being killed or timing out."""
        return self.returncode == 0 and not self.timed_out and self.killed_by is None


@runtime_checkable
class Sandbox(Protocol):
    """Runs a command in a fresh work dir with limits; see ``LocalSandbox``/``DockerSandbox``."""

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
        """Run ``cmd`` (a string runs through ``/bin/sh -c``).

        files: written into the fresh work dir before the run (relative paths).
        collect: relative globs read back from the work dir after the run.
        """
        ...


def normalize_cmd(cmd: list[str] | str) -> list[str]:
    """A string runs through ``/bin/sh -c``; a list is argv. Empty is an error."""
    if isinstance(cmd, str):
        if not cmd.strip():
            raise SandboxError("empty command")
        return ["/bin/sh", "-c", cmd]
    if not cmd or not all(isinstance(a, str) for a in cmd):
        raise SandboxError(f"command must be a non-empty list of str, got {cmd!r}")
    return list(cmd)


def check_limits(timeout_s: float, memory_mb: int) -> None:
    """Reject nonsensical limits with one clear line."""
    if not (timeout_s > 0):
        raise SandboxError(f"timeout_s must be > 0, got {timeout_s}")
    if memory_mb < 16:
        raise SandboxError(f"memory_mb must be >= 16, got {memory_mb}")


def safe_relpath(name: str) -> PurePosixPath:
    """Validate a work-dir-relative path: no absolute paths, no ``..`` escapes."""
    p = PurePosixPath(name)
    if not name or p.is_absolute() or ".." in p.parts:
        raise SandboxError(f"file path must be relative and stay inside the work dir: {name!r}")
    return p


def write_files(workdir: Path, files: dict[str, str | bytes] | None) -> None:
    """Write ``files`` under ``workdir`` (creating parent dirs)."""
    for name, content in (files or {}).items():
        target = workdir / safe_relpath(name)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = content.encode() if isinstance(content, str) else content
        target.write_bytes(data)


def decode_maybe(data: bytes) -> bytes | str:
    """UTF-8 text as ``str``, anything else as ``bytes``."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return data


def glob_match(rel: str, pattern: str) -> bool:
    """Does work-dir-relative ``rel`` match ``pattern`` (``**`` = any number of segments)?"""

    def go(parts: list[str], pats: list[str]) -> bool:
        if not pats:
            return not parts
        if pats[0] == "**":
            return any(go(parts[i:], pats[1:]) for i in range(len(parts) + 1))
        return bool(parts) and fnmatch.fnmatchcase(parts[0], pats[0]) and go(parts[1:], pats[1:])

    return go(rel.split("/"), [p for p in pattern.split("/") if p])


MAX_COLLECT_FILES = 10_000
"""At most this many files are examined per collect (a planted tree cannot stall the parent)."""


MAX_COLLECT_DEPTH = 64
"""Collect looks no deeper than this many dir levels (a 3000-level tree stalls nothing)."""


def _walk_files(top: str, notes: list[str]) -> list[tuple[str, str]]:
    """(dir, name) of every non-dir entry under ``top`` (symlinks included, never followed).

    Iterative (``os.walk`` recurses once per level on Python 3.11: a deep tree raised
    ``RecursionError`` in the parent), depth-first in sorted order, at most
    ``MAX_COLLECT_DEPTH`` levels and ``MAX_COLLECT_FILES`` entries looked at.
    """
    out: list[tuple[str, str]] = []
    stack = [(top, 0)]
    looked = 0
    while stack:
        dirpath, depth = stack.pop()
        try:
            with os.scandir(dirpath) as it:
                entries = sorted((e.name, e.is_dir(follow_symlinks=False)) for e in it)
        except OSError:
            continue
        looked += len(entries)
        out += [(dirpath, n) for n, is_dir in entries if not is_dir]
        if looked > MAX_COLLECT_FILES:
            break
        subdirs = [n for n, is_dir in entries if is_dir]
        if subdirs and depth + 1 > MAX_COLLECT_DEPTH:
            notes.append(f"collect: not looking below {MAX_COLLECT_DEPTH} dir levels")
            continue
        stack += [(os.path.join(dirpath, n), depth + 1) for n in reversed(subdirs)]
    return out


def collect_files(
    workdir: Path, patterns: list[str] | None, max_bytes: int, max_total: int | None = None
) -> tuple[dict[str, bytes | str], list[str]]:
    """Read files matching relative globs; returns (files, notes about skipped ones).

    The walk never follows a symlink (a link to ``/`` would make the parent walk the
    disk) and reads only regular files with one link (a hard link to a root-only file
    planted in the work dir is refused), opened with ``O_NOFOLLOW``.

    max_bytes: the cap per file; max_total: the cap on all files together (None: no
        more than ``max_bytes``). A file is judged by its apparent size *and* its real
        size (``st_blocks``): a sparse 500 MB file costs the parent 500 MB to read, so
        it is skipped unless it fits; and no read ever asks for more than what is left.
    """
    out: dict[str, bytes | str] = {}
    notes: list[str] = []
    if not patterns:
        return out, notes
    for pattern in patterns:
        safe_relpath(pattern)
    budget = max_bytes if max_total is None else max_total
    seen = 0
    for dirpath, name in _walk_files(str(workdir), notes):
        seen += 1
        if seen > MAX_COLLECT_FILES:
            notes.append(f"collect: stopped after {MAX_COLLECT_FILES} files")
            return out, notes
        path = os.path.join(dirpath, name)
        rel = os.path.relpath(path, workdir).replace(os.sep, "/")
        if not any(glob_match(rel, p) for p in patterns):
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            notes.append(f"collect: skipped {rel} (a symlink or unreadable)")
            continue
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                notes.append(f"collect: skipped {rel} (not a regular file)")
                continue
            if st.st_nlink != 1:
                notes.append(f"collect: skipped {rel} (hard-linked: {st.st_nlink} links)")
                continue
            left = min(max_bytes, budget)
            size = max(st.st_size, st.st_blocks * 512)
            if size > left:
                notes.append(
                    f"collect: skipped {rel} ({st.st_size} bytes, {st.st_blocks * 512} "
                    f"allocated > the {left} bytes left of the collect cap)"
                )
                continue
            # the file may still grow (an escaped writer): never read past the cap
            data = _read_at_most(f.fileno(), left + 1)
            if len(data) > left:
                notes.append(f"collect: skipped {rel} (grew past the collect cap)")
                continue
            budget -= len(data)
            out[rel] = decode_maybe(data)
    return out, notes


def _read_at_most(fd: int, limit: int) -> bytes:
    """Read up to ``limit`` bytes from ``fd`` in chunks (no buffer larger than the data)."""
    parts: list[bytes] = []
    got = 0
    while got < limit:
        chunk = os.read(fd, min(1 << 20, limit - got))
        if not chunk:
            break
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)


def scrubbed_env(workdir: str, extra: dict[str, str] | None) -> dict[str, str]:
    """The allow-listed child environment: PATH, HOME, LANG, TMPDIR, no bytecode, + ``extra``."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "HOME": workdir,
        "LANG": os.environ.get("LANG", "C.UTF-8"),
        "TMPDIR": f"{workdir}/tmp",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    for k, v in (extra or {}).items():
        if not isinstance(k, str) or not isinstance(v, str) or not k or "=" in k:
            raise SandboxError(f"env entries must be str -> str with a valid name, got {k!r}")
        env[k] = v
    return env
