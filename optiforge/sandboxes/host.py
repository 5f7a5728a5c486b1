"""What a sandboxed run is given: the host's isolation (``HostIsolation``), the file-system
view (``View``), and ``RunSandbox``, the sandbox settings a run reads. The run machinery
(``warm``, ``cgroups``, ``results``) types its sandbox with ``RunSandbox``, so it never
imports ``local`` (which imports it: no import circle, not even a type-only one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from optiforge.sandboxes.base import Protections


@dataclass(frozen=True)
class HostIsolation:
    """What this machine offers, probed once per process."""

    is_root: bool
    bwrap: str | None
    """Path of a bwrap that ran a namespaced ``true`` successfully, else None."""
    bwrap_error: str | None
    unshare: bool
    """The kernel lets us create mount/PID/net namespaces (root only; probed with ``unshare``)."""
    unshare_error: str | None
    pids_cgroup: str | None = None
    """A writable pids-controller cgroup dir under which per-run cgroups can be made."""
    memory_cgroup: tuple[str, str, str] | None = None
    """(writable memory cgroup dir, peak-usage file, limit file)."""
    pids_cgroup_error: str | None = None
    cgroup_v1: dict[str, bool] = field(default_factory=dict)
    """controller -> True when that cgroup is v1 (join through ``tasks``, not ``cgroup.procs``)."""


@dataclass(frozen=True)
class View:
    """What the command sees of the host file system (all read-only), besides its work dir."""

    ro_binds: tuple[str, ...]
    symlinks: tuple[tuple[str, str], ...]
    masks: tuple[str, ...]
    """Dirs inside ``ro_binds`` hidden under an empty tmpfs (an installed optiforge)."""


class RunSandbox(Protocol):
    """The settings of a local sandbox that a run reads (``LocalSandbox`` has them)."""

    @property
    def root(self) -> Path: ...
    @property
    def python(self) -> str: ...
    @property
    def isolation(self) -> str: ...
    @property
    def host(self) -> HostIsolation: ...
    @property
    def view(self) -> View: ...
    @property
    def tracer(self) -> Any | None: ...
    @property
    def cpu_time_s(self) -> float | None: ...
    @property
    def max_output_bytes(self) -> int: ...
    @property
    def max_procs(self) -> int: ...
    @property
    def max_open_files(self) -> int: ...
    @property
    def max_file_mb(self) -> int: ...
    @property
    def max_collect_bytes(self) -> int: ...
    @property
    def tmpfs_mb(self) -> int: ...
    @property
    def warm(self) -> list[str] | None: ...

    def _protections(
        self, network: bool, *, seccomp: bool, cgroups: tuple[bool, bool] | None
    ) -> Protections: ...
