"""A run's processes and cgroups on the host: the per-run pids and memory cgroups (made,
read, killed, removed), the processes of a run's fresh uid, a process's descendants. Used by
cold runs (``local``) and warm ones (``warm``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time

from optiforge.sandboxes.host import RunSandbox


def count_tasks(uid: int) -> int:
    """Tasks (threads) the uid runs now: RLIMIT_NPROC counts them all."""
    count = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid == uid:
                count += len(os.listdir(f"/proc/{entry}/task"))
        except OSError:
            continue
    return count


def kill_uid(uid: int, rounds: int = 10) -> int:
    """SIGKILL every process owned by ``uid`` (a run's fresh uid: only its own processes)."""
    killed = 0
    for _ in range(rounds):
        pids = []
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError):
                    if os.stat(f"/proc/{entry}").st_uid == uid:
                        pids.append(int(entry))
        if not pids:
            break
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        time.sleep(0.01)
    return killed


def oom_kill_count(sb: RunSandbox, memcg: str | None) -> int:
    """How many processes the run's memory cgroup killed (``oom_kill``; 0 when unknown)."""
    if memcg is None:
        return 0
    name = "memory.oom_control" if sb.host.cgroup_v1.get("memory") else "memory.events"
    try:
        with open(os.path.join(memcg, name)) as f:
            for line in f:
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
    except (OSError, ValueError):
        return 0
    return 0


def make_pids_cgroup(sb: RunSandbox, token: str) -> str | None:
    """A per-run pids cgroup capped at ``max_procs`` tasks, or None if unavailable."""
    base = sb.host.pids_cgroup
    if base is None:
        return None
    path = os.path.join(base, f"optiforge-{os.getpid()}-{token}")
    try:
        os.mkdir(path)
        with open(os.path.join(path, "pids.max"), "w") as f:
            f.write(str(sb.max_procs))
    except OSError:
        remove_cgroup(path)
        return None
    return path


def make_memory_cgroup(sb: RunSandbox, token: str, limit: int) -> str | None:
    """A per-run memory cgroup limited to ``limit`` bytes (RAM + tmpfs pages), or None."""
    if sb.host.memory_cgroup is None:
        return None
    base, _, limit_file = sb.host.memory_cgroup
    path = os.path.join(base, f"optiforge-mem-{os.getpid()}-{token}")
    try:
        os.mkdir(path)
        with open(os.path.join(path, limit_file), "w") as f:
            f.write(str(limit))
    except OSError:
        remove_cgroup(path)
        return None
    return path


def kill_cgroup(path: str, rounds: int = 20) -> int:
    """SIGKILL every task left in the run's cgroup; returns how many were killed."""
    killed = 0
    for _ in range(rounds):
        try:
            with open(os.path.join(path, "cgroup.procs")) as f:
                pids = [int(x) for x in f.read().split()]
        except OSError:
            return killed
        if not pids:
            return killed
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        time.sleep(0.01)
    return killed


def read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def remove_cgroup(path: str | None) -> None:
    """rmdir the run's cgroup (it must be empty; killed tasks take a moment to leave)."""
    if path is None:
        return
    for _ in range(50):
        try:
            os.rmdir(path)
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


def descendants(root: int) -> list[int]:
    """All live descendants of ``root`` (breadth first), from ``/proc/*/stat`` parent pids."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                data = f.read()
        except OSError:
            continue
        # The command name may contain spaces/parens: the ppid follows the last ')'.
        ppid = int(data[data.rindex(b")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    out: list[int] = []
    frontier = [root]
    while frontier:
        nxt: list[int] = []
        for pid in frontier:
            kids = children.get(pid, [])
            out.extend(kids)
            nxt.extend(kids)
        frontier = nxt
    return out
