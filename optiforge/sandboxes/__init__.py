"""Sandboxed execution: the ``Sandbox`` protocol, local and docker back ends, executors.

``get_sandbox("local")`` is the default; ``get_sandbox("docker", image=...)`` raises
``SandboxUnavailable`` when no Docker engine is reachable. ``conformance.self_check``
runs the same functional battery against any back end and ``redteam.red_team`` the
attacks; both judge a back end against what it reports of ``CONTAINMENT_PROMISE``
(``ExecResult.protections.unmet()``).
"""

from __future__ import annotations

from typing import Any

from optiforge.errors import ConfigError
from optiforge.sandboxes.base import CONTAINMENT_PROMISE, ExecResult, Protections, Sandbox
from optiforge.sandboxes.executors import (
    Executor,
    InlineExecutor,
    ProcessExecutor,
    RayExecutor,
)
from optiforge.sandboxes.local import LocalSandbox, available_isolations, host_isolation


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
    "CONTAINMENT_PROMISE",
    "DockerSandbox",
    "ExecResult",
    "Executor",
    "InlineExecutor",
    "LocalSandbox",
    "ProcessExecutor",
    "Protections",
    "RayExecutor",
    "Sandbox",
    "available_isolations",
    "get_sandbox",
    "host_isolation",
]
