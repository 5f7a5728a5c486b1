"""A finished sandboxed run as an ``ExecResult``: exit status, who killed it, the
protections it had, the tracer event. Shared by cold runs (``local``) and warm ones
(``warm``).
"""

from __future__ import annotations

import math
import os
import signal
from typing import Any

from optiforge.sandboxes.base import ExecResult, Protections
from optiforge.sandboxes.host import RunSandbox

MEMORY_SIGNS = ("MemoryError", "Cannot allocate memory", "std::bad_alloc", "out of memory")


def run_result(
    sb: RunSandbox,
    network: bool,
    out: bytes,
    err: bytes,
    truncated: tuple[bool, bool],
    timed_out: bool,
    status: int,
    ru: Any,
    duration: float,
    cpu: float,
    setup: str,
    peak_bytes: int | None,
    swept: int,
    cgroups: tuple[bool, bool],
    collected: dict[str, bytes | str],
    cnotes: list[str],
    *,
    warm: bool = False,
    oom_kills: int = 0,
) -> ExecResult:
    rc = os.waitstatus_to_exitcode(status)
    # the namespace init reports a signal death of the command as 128 + N
    if sb.isolation != "none" and 128 < rc <= 128 + 64:
        rc = -(rc - 128)
    stderr = err.decode("utf-8", errors="replace")
    killed_by: str | None = None
    if timed_out:
        killed_by = "timeout"
    elif oom_kills > 0:
        # the run's memory cgroup killed a process of it (the kernel's own count)
        killed_by = "memory"
    elif rc == -signal.SIGXCPU or (
        # rusage is tick-sampled: it can read a little under what the kernel's CPU-limit
        # timer counted when it fired
        rc == -signal.SIGKILL and ru.ru_utime + ru.ru_stime >= math.ceil(cpu) - 0.25
    ):
        killed_by = "cpu"
    elif rc != 0 and any(s in stderr for s in MEMORY_SIGNS):
        killed_by = "memory"
    elif rc < 0:
        killed_by = f"signal {-rc}"
    prot = sb._protections(network, seccomp="seccomp=1" in setup, cgroups=cgroups)
    if warm:
        mark_warm(prot, sb)
    if not cgroups[0] and sb.host.pids_cgroup_error:
        prot.notes.append(f"no pids cgroup: {sb.host.pids_cgroup_error}")
    prot.notes.extend(cnotes)
    if peak_bytes is None:
        prot.notes.append(
            "peak_rss_mb is wait4's ru_maxrss (no memory cgroup): the largest single process"
        )
    if swept:
        prot.notes.append(f"killed {swept} descendant(s) left after the command exited")
    if oom_kills:
        prot.notes.append(f"the memory cgroup killed {oom_kills} process(es) of the run (OOM)")
    result = ExecResult(
        returncode=rc,
        stdout=out.decode("utf-8", errors="replace"),
        stderr=stderr,
        duration_s=duration,
        peak_rss_mb=peak_bytes / 2**20 if peak_bytes is not None else ru.ru_maxrss / 1024.0,
        timed_out=timed_out,
        files=collected,
        protections=prot,
        stdout_truncated=truncated[0],
        stderr_truncated=truncated[1],
        killed_by=killed_by,
    )
    if sb.tracer is not None:
        sb.tracer.event(
            "sandbox_run",
            backend="local",
            isolation=sb.isolation,
            warm=warm,
            duration_s=round(duration, 6),
            returncode=rc,
            timed_out=timed_out,
            killed_by=killed_by,
            peak_rss_mb=round(result.peak_rss_mb, 3),
            protections=prot.summary(),
            unmet=sorted(prot.unmet()),
        )
    return result


def mark_warm(prot: Protections, sb: RunSandbox) -> None:
    """A warm run: the unshare machinery in a forked child of the zygote."""
    prot.warm = True
    prot.network_how = "netns-unshare"
    prot.fs_how = (
        f"warm (forked from an unshare zygote): minimal read-only root, own work dir rw, "
        f"own /tmp and /dev/shm tmpfs of {sb.tmpfs_mb} MB"
    )
    prot.notes.append(f"warm: forked from a zygote that imported {', '.join(sb.warm or [])}")
