"""pytest plugin: forbid non-local network access in tests; ``openai_server`` fixture.

Load it from the root ``tests/conftest.py`` with
``pytest_plugins = ["optiforge.testing.pytest_plugin"]``. A test that truly needs the
internet opts in with ``@pytest.mark.allow_network``.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from optiforge.testing.server import OpenAICompatServer

_LOCAL_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", ""}


class NetworkAccessBlocked(OSError):
    """A test tried to reach a non-local address (opt in with ``allow_network``).

    An ``OSError`` on purpose: code that copes with a machine without internet (e.g. Ray's
    UDP "which interface routes to 8.8.8.8" probe, which falls back to 127.0.0.1) copes
    with the guard the same way, while a request that needs the internet fails.
    """


def is_local_host(host: Any) -> bool:
    """True for loopback addresses and localhost names."""
    if isinstance(host, bytes):
        host = host.decode(errors="replace")
    if not isinstance(host, str):
        return False
    host = host.strip("[]").split("%", 1)[0]
    if host.lower() in _LOCAL_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _check_address(family: int, address: Any) -> None:
    if family == getattr(socket, "AF_UNIX", object()):
        return
    host = address[0] if isinstance(address, tuple) and address else address
    if not is_local_host(host):
        raise NetworkAccessBlocked(
            f"test tried to connect to {address!r}; only 127.0.0.1/localhost/::1 are allowed "
            "(mark the test with @pytest.mark.allow_network to opt in)"
        )


def install_network_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """Patch socket connect/connect_ex/getaddrinfo to refuse non-loopback targets."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex
    real_getaddrinfo = socket.getaddrinfo

    def connect(self: socket.socket, address: Any) -> None:
        _check_address(self.family, address)
        return real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        _check_address(self.family, address)
        return real_connect_ex(self, address)

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        # DNS lookups are network traffic too; numeric loopback and localhost resolve locally.
        if host is not None and not is_local_host(host):
            raise NetworkAccessBlocked(f"test tried to resolve {host!r}; network is blocked")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def pytest_configure(config: pytest.Config) -> None:
    """Register the opt-in marker (the project runs with --strict-markers)."""
    config.addinivalue_line(
        "markers", "allow_network: the test may open non-local network connections"
    )


@pytest.fixture(autouse=True)
def _block_network(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Autouse: every test runs with non-local network access blocked unless marked."""
    if request.node.get_closest_marker("allow_network") is None:
        install_network_guard(monkeypatch)


@pytest.fixture
def openai_server() -> Iterator[OpenAICompatServer]:
    """A started OpenAICompatServer with an empty script; set replies with ``.script([...])``."""
    with OpenAICompatServer() as server:
        yield server
