"""Sandboxed execution: the ``Sandbox`` protocol, local and docker back ends, executors.

``get_sandbox("local")`` is the default; ``get_sandbox("docker", image=...)`` raises
``SandboxUnavailable`` when no Docker engine is reachable. ``conformance.self_check``
runs the same battery against any back end.
"""

from __future__ import annotations

from typing import Any

from optiforge.errors import ConfigError
from optiforge.sandboxes.base import ExecResult, Protections, Sandbox
from optiforge.sandboxes.executors import (
    Executor,
    InlineExecutor,
    ProcessExecutor,
    RayExecutor,
)
from optiforge.sandboxes.local import LocalSandbox, host_isolation


def get_sandbox(backend: str = "local", **kw: Any) -> Sandbox:
    """Build a sandbox by back-end name (``local`` or ``docker``); ``kw`` go to its constructor."""
    if backend == "local":
        return LocalSandbox(**kw)
    if backend == "docker":
        from optiforge.sandboxes.docker import DockerSandbox

        return DockerSandbox(**kw)
    raise ConfigError(f"unknown sandbox backend {backend!r} (choose local or docker)")


def __getattr__(name: str) -> Any:
    # DockerSandbox imports the docker SDK (requests, urllib3): only load it on use.
    if name == "DockerSandbox":
        from optiforge.sandboxes.docker import DockerSandbox

        return DockerSandbox
    raise AttributeError(name)


__all__ = [
    "DockerSandbox",
    "ExecResult",
    "Executor",
    "InlineExecutor",
    "LocalSandbox",
    "ProcessExecutor",
    "Protections",
    "RayExecutor",
    "Sandbox",
    "get_sandbox",
    "host_isolation",
]
