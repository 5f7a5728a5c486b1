"""The ``Sandbox`` contract: ``run(cmd, ...) -> ExecResult``, plus the shared helpers.

Every back end reports, per run, which protections were really in force
(``ExecResult.protections``) instead of claiming isolation it did not achieve.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path, PurePosixPath
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from optiforge.errors import SandboxError

NetworkHow = Literal["netns-bwrap", "netns-unshare", "docker-none", "none"]


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
    notes: list[str] = Field(default_factory=list)
    """Human-readable caveats (e.g. why a protection was not available)."""

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


def collect_files(
    workdir: Path, patterns: list[str] | None, max_bytes: int
) -> tuple[dict[str, bytes | str], list[str]]:
    """Read files matching relative globs; returns (files, notes about skipped ones).

    Symlinks are not followed out of the work dir: a child could plant a link to
    ``/etc/shadow`` and have the (root) parent read it back.
    """
    out: dict[str, bytes | str] = {}
    notes: list[str] = []
    root = workdir.resolve()
    for pattern in patterns or []:
        safe_relpath(pattern)
        for hit in sorted(glob.glob(str(workdir / pattern), recursive=True)):
            path = Path(hit)
            rel = path.relative_to(workdir).as_posix()
            if path.is_symlink() or not path.is_file():
                if path.is_symlink():
                    notes.append(f"collect: skipped symlink {rel}")
                continue
            if not path.resolve().is_relative_to(root):
                notes.append(f"collect: skipped {rel} (resolves outside the work dir)")
                continue
            size = path.stat().st_size
            if size > max_bytes:
                notes.append(f"collect: skipped {rel} ({size} bytes > cap {max_bytes})")
                continue
            out[rel] = decode_maybe(path.read_bytes())
    return out, notes


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
