"""Sandboxed execution: the ``Sandbox`` protocol, local and docker back ends, executors.

``get_sandbox("local")`` is the default; ``get_sandbox("docker", image=...)`` raises
``SandboxUnavailable`` when no Docker engine is reachable. ``conformance.self_check``
runs the same functional battery against any back end and ``redteam.red_team`` the
attacks; both judge a back end against what it reports of ``CONTAINMENT_PROMISE``
(``ExecResult.protections.unmet()``).
"""

from __future__ import annotations

import os
from typing import Any

from optiforge.errors import ConfigError, UnsafeSandbox
from optiforge.sandboxes.base import CONTAINMENT_PROMISE, ExecResult, Protections, Sandbox
from optiforge.sandboxes.executors import (
    Executor,
    InlineExecutor,
    ProcessExecutor,
    RayExecutor,
    ThreadExecutor,
)
from optiforge.sandboxes.local import LocalSandbox, available_isolations, host_isolation

UNSAFE_ENV = "OPTIFORGE_UNSAFE_SANDBOX"
"""Set to ``1`` (``--unsafe-sandbox``) to run LLM-written code in a sandbox that does not
meet ``CONTAINMENT_PROMISE``; inherited by worker processes, never by sandboxed commands."""


def unsafe_allowed() -> bool:
    """Did the user allow sandboxes that do not meet the containment promise?"""
    return os.environ.get(UNSAFE_ENV) == "1"


def get_sandbox(backend: str = "local", *, trusted_code: bool = False, **kw: Any) -> Sandbox:
    """Build a sandbox by back-end name (``local`` or ``docker``); ``kw`` go to its constructor.

    Agents and suites call this for LLM-written code: a back end whose protections
    leave a clause of ``CONTAINMENT_PROMISE`` unmet raises ``UnsafeSandbox`` unless the
    user allowed it (``--unsafe-sandbox``). ``trusted_code=True`` (a command the user
    typed, ``optiforge sandbox exec``) skips the check.
    """
    sb: Any
    if backend == "local":
        sb = LocalSandbox(**kw)
    elif backend == "docker":
        from optiforge.sandboxes.docker import DockerSandbox

        sb = DockerSandbox(**kw)
    else:
        raise ConfigError(f"unknown sandbox backend {backend!r} (choose local or docker)")
    if not trusted_code and not unsafe_allowed():
        unmet = sb.protections().unmet()
        if unmet:
            mode = getattr(sb, "isolation", backend)
            raise UnsafeSandbox(
                f"the {backend} sandbox ({mode}) does not meet the containment promise "
                f"({', '.join(sorted(unmet))}): install bubblewrap (apt-get install "
                "bubblewrap) or run as root for the unshare mode, or pass --unsafe-sandbox "
                "to run LLM-written code anyway"
            )
    return sb


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
    "ThreadExecutor",
    "available_isolations",
    "get_sandbox",
    "unsafe_allowed",
    "host_isolation",
]
