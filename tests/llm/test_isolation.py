"""Importing the LLM layer is cheap and offline; the test network guard works."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap

import pytest

from optiforge.testing.pytest_plugin import NetworkAccessBlocked, is_local_host


def test_import_does_not_load_litellm_or_touch_network() -> None:
    code = textwrap.dedent(
        """
        import socket, sys
        def refuse(*a, **k):
            raise SystemExit("network touched at import")
        socket.socket.connect = refuse
        socket.getaddrinfo = refuse
        import optiforge.llm, optiforge.testing, optiforge.tools
        from optiforge.llm import LiteLLM, make_llm
        make_llm("openai/gpt-4o-mini", api_key="sk-x")  # constructing is lazy too
        assert "litellm" not in sys.modules, "litellm imported eagerly"
        assert "openai" not in sys.modules, "openai imported eagerly"
        print("OK")
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr + out.stdout
    assert out.stdout.strip() == "OK"


def test_guard_blocks_non_local_connections() -> None:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        with pytest.raises(NetworkAccessBlocked, match="203.0.113.5"):
            s.connect(("203.0.113.5", 80))  # TEST-NET-3: refused before any packet
    finally:
        s.close()
    with pytest.raises(NetworkAccessBlocked):
        socket.getaddrinfo("example.com", 443)


def test_guard_allows_loopback() -> None:
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    c = socket.create_connection(srv.getsockname(), timeout=2)
    c.close()
    srv.close()
    assert is_local_host("::1") and is_local_host("localhost") and not is_local_host("10.0.0.1")


@pytest.mark.allow_network
def test_opt_in_marker_removes_guard() -> None:
    # No connection is attempted: only check that the patched method is not installed.
    assert getattr(socket.socket.connect, "__module__", None) != "optiforge.testing.pytest_plugin"
