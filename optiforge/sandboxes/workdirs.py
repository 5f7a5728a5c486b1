"""Work dirs of sandbox runs: owner-tagged names, a size-bounded tmpfs, deletion at any depth.

* Names carry the owner: ``optiforge-sbx-<pid>-s<start>-...`` (``<start>`` is the
  owner's start time in clock ticks, so a recycled pid is not mistaken for the owner).
  A dir whose owner is dead is a killed caller's leftover; ``sweep_work_dirs`` (run
  when any optiforge process starts, and by every new ``LocalSandbox``) removes it.
* ``remove_tree`` deletes without recursion and with at most two open dir fds: a
  candidate that made a 3000-level directory (``shutil.rmtree`` and ``os.walk``
  recurse once per level and raise ``RecursionError``) is deleted like any other.
* Where the work-dir root is a disk file system (``/dev/shm`` too small, as in
  Docker's default 64 MB), a root caller mounts a size-bounded tmpfs on each work dir
  (``mount_tmpfs``): a run can then not fill the disk.
"""

from __future__ import annotations

import ctypes
import functools
import logging
import os
import stat
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

PREFIX = "optiforge-sbx-"
"""Every work dir, warm root and warm spool of a sandbox run starts with this."""

_MS_NOSUID, _MS_NODEV = 2, 4
_MNT_DETACH = 2
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


@functools.cache
def _start_ticks(pid: int) -> int | None:
    """Start time of ``pid`` in clock ticks since boot (field 22 of ``/proc/PID/stat``)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            data = f.read()
    except OSError:
        return None
    return int(data[data.rindex(b")") + 2 :].split()[19])


def owner_prefix() -> str:
    """``optiforge-sbx-<pid>-s<start>-``: the name prefix of this process's work dirs."""
    pid = os.getpid()
    return f"{PREFIX}{pid}-s{_start_ticks(pid) or 0}-"


def owner_alive(name: str) -> bool:
    """Is the process that made the work dir ``name`` still alive (True when unsure)?"""
    parts = name[len(PREFIX) :].split("-", 2)
    try:
        pid = int(parts[0])
    except ValueError:
        return True
    if not os.path.exists(f"/proc/{pid}"):
        return False
    if len(parts) == 3 and parts[1].startswith("s") and parts[1][1:].isdigit():
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                data = f.read()
        except OSError:
            return False
        # the pid was recycled when its start time is not the owner's
        return int(data[data.rindex(b")") + 2 :].split()[19]) == int(parts[1][1:])
    return True


@functools.cache
def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def fs_type(path: str | os.PathLike[str]) -> str:
    """The file-system type ``path`` lives on (longest mount prefix in /proc/self/mounts)."""
    real = os.path.realpath(path)
    best, kind = "", "unknown"
    try:
        with open("/proc/self/mounts") as f:
            for line in f:
                fields = line.split()
                mnt = fields[1].replace("\\040", " ")
                if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(
                    best
                ):
                    best, kind = mnt, fields[2]
    except OSError:
        pass
    return kind


def mount_tmpfs(path: str, size_mb: int, inodes: int = 65536) -> str | None:
    """Mount a tmpfs of ``size_mb`` on ``path`` (root only); None on success, else why not."""
    opts = f"size={size_mb}m,nr_inodes={inodes},mode=0700".encode()
    ret = _libc().mount(b"tmpfs", path.encode(), b"tmpfs", _MS_NOSUID | _MS_NODEV, opts)
    if ret != 0:
        return f"mount tmpfs: {os.strerror(ctypes.get_errno())}"
    return None


def _unmount(path: str) -> None:
    """Lazily unmount whatever is mounted on ``path`` (its tmpfs pages are freed)."""
    if _libc().umount2(path.encode(), _MNT_DETACH) != 0:
        raise OSError(ctypes.get_errno(), f"umount {path}: {os.strerror(ctypes.get_errno())}")


def _open_dir(name: str, dir_fd: int) -> int:
    """Open a child dir without following links; make it ours to empty (a 0000 dir)."""
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except PermissionError:
        os.chmod(name, 0o700, dir_fd=dir_fd)
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    try:
        st = os.fstat(fd)
        if stat.S_IMODE(st.st_mode) & 0o700 != 0o700:
            os.fchmod(fd, 0o700)
    except OSError:
        os.close(fd)
        raise
    return fd


def _identity(fd: int) -> tuple[int, int]:
    st = os.fstat(fd)
    return st.st_dev, st.st_ino


def _take(fd: int) -> list[str]:
    """Unlink every non-dir entry of the dir open as ``fd``; return its subdirs' names."""
    with os.scandir(fd) as it:
        entries = [(e.name, e.is_dir(follow_symlinks=False)) for e in it]
    for name, is_dir in entries:
        if not is_dir:
            os.unlink(name, dir_fd=fd)
    return [name for name, is_dir in entries if is_dir]


def _empty(top: int) -> None:
    """Empty the dir open as ``top``: depth first, iteratively, one dir fd open at a time.

    It goes down with ``openat(child)`` and back up with ``openat("..")``, checking that
    ``..`` is the dir it came from (device and inode): no recursion and no fd per
    level, so any depth works (``shutil.rmtree`` recurses, ``fts`` keeps fds open).
    """
    fd = os.dup(top)
    levels: list[tuple[tuple[int, int], list[str]]] = [(_identity(fd), _take(fd))]
    names: list[str] = []
    try:
        while True:
            pending = levels[-1][1]
            if pending:
                name = pending.pop()
                child = _open_dir(name, fd)
                os.close(fd)
                fd = child
                names.append(name)
                levels.append((_identity(fd), _take(fd)))
                continue
            if len(levels) == 1:
                return
            parent = os.open("..", _DIR_FLAGS & ~os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = parent
            levels.pop()
            if _identity(fd) != levels[-1][0]:
                raise OSError(f"the tree changed while it was deleted (at {names[-1]!r})")
            os.rmdir(names.pop(), dir_fd=fd)
    finally:
        os.close(fd)


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Delete ``path`` and all under it at any depth, never following a link; raises OSError.

    A tmpfs mounted on ``path`` (a work dir on a disk root) is unmounted first.
    """
    path = os.fspath(path)
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(st.st_mode):
        os.unlink(path)
        return
    if os.path.ismount(path):
        _unmount(path)
    parent = os.open(os.path.dirname(path) or ".", _DIR_FLAGS & ~os.O_NOFOLLOW)
    try:
        top = _open_dir(os.path.basename(path), parent)
        try:
            _empty(top)
        finally:
            os.close(top)
        os.rmdir(os.path.basename(path), dir_fd=parent)
    finally:
        os.close(parent)


def remove_quietly(path: str | os.PathLike[str]) -> bool:
    """``remove_tree`` that logs instead of raising (a cleanup must not crash the caller)."""
    try:
        remove_tree(path)
        return True
    except OSError as e:
        log.warning("could not remove sandbox leftover %s: %s", path, e)
        return False


def default_roots() -> list[str]:
    """Where work dirs go by default: ``/dev/shm`` (a tmpfs) and the system temp dir."""
    return list(dict.fromkeys(["/dev/shm", tempfile.gettempdir()]))


def sweep_work_dirs(root: str | os.PathLike[str]) -> int:
    """Remove work dirs of dead owners under ``root``; never raises. Returns how many.

    A leftover that cannot be removed is logged and skipped: one poisoned entry must
    not stop the sweep, nor the process that runs it.
    """
    removed = 0
    try:
        names = os.listdir(root)
    except OSError:
        return 0
    for name in names:
        if not name.startswith(PREFIX) or owner_alive(name):
            continue
        path = os.path.join(os.fspath(root), name)
        try:
            if name.endswith(".root") and not os.path.ismount(path):
                os.rmdir(path)
            else:
                remove_tree(path)
            removed += 1
        except Exception as e:  # noqa: BLE001 - logged; the next sweep tries again
            log.warning("sandbox sweep: could not remove %s: %s", path, e)
    return removed


def sweep_default_roots() -> int:
    """``sweep_work_dirs`` over the default roots (what an optiforge process does at start)."""
    return sum(sweep_work_dirs(r) for r in default_roots() if Path(r).is_dir())
