"""The litellm child process: calls in flight together, typed errors, a child that dies or
outlives nothing, an environment that changes. (Every LiteLLM test in
``test_litellm_http.py`` also goes through it: it is the default path.)"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from _procs import wait_gone

from optiforge.errors import LLMRateLimited
from optiforge.llm import LiteLLM
from optiforge.llm.provider_process import shared
from optiforge.testing import OpenAICompatServer

USER = [{"role": "user", "content": "hi"}]


def make(server: OpenAICompatServer, **kw: object) -> LiteLLM:
    kw.setdefault("backoff_base_s", 0.001)
    kw.setdefault("backoff_max_s", 0.01)
    return LiteLLM("openai/test-model", api_base=server.url, api_key="sk-test", **kw)  # type: ignore[arg-type]


def _child_pid() -> int:
    proc = shared()._proc
    assert proc is not None and proc.poll() is None
    return proc.pid


def test_calls_are_in_flight_together(openai_server: OpenAICompatServer) -> None:
    """Four calls against a server taking 0.6 s each finish in about one reply's time: the
    child answers each request on its own thread."""
    openai_server.script([], default={"content": "late", "delay_s": 0.6})
    llm = make(openai_server)
    llm._prepare()
    done: list[float] = []

    def one() -> None:
        llm.complete(USER)
        done.append(time.monotonic())

    t0 = time.monotonic()
    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(done) == 4 and openai_server.count == 4
    assert max(done) - t0 < 4 * 0.6 - 0.3  # not one after another


def test_a_typed_error_keeps_its_fields(openai_server: OpenAICompatServer) -> None:
    openai_server.script([{"status": 429, "error": "slow down", "headers": {"Retry-After": "7"}}])
    with pytest.raises(LLMRateLimited) as info:
        make(openai_server, max_retries=0).complete(USER)
    assert info.value.retry_after == pytest.approx(7.0)


def test_a_child_that_dies_is_replaced(openai_server: OpenAICompatServer) -> None:
    openai_server.script([], default={"content": "fine"})
    llm = make(openai_server)
    assert llm.complete(USER).text == "fine"
    old = _child_pid()
    os.kill(old, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while shared()._proc is not None and shared()._proc.poll() is None:  # type: ignore[union-attr]
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert llm.complete(USER).text == "fine"  # a new child answers
    assert _child_pid() != old


def test_a_changed_environment_gets_a_new_child(
    openai_server: OpenAICompatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child reads provider keys from the environment it started with: a key set later
    reaches the provider (a new child has it)."""
    openai_server.script([], default={"content": "ok"})
    monkeypatch.setenv("OPENAI_API_KEY", "sk-first")
    llm = LiteLLM("openai/test-model", api_base=openai_server.url, max_retries=0)
    llm.complete(USER)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-second")
    llm.complete(USER)
    assert openai_server.authorizations[-2:] == ["Bearer sk-first", "Bearer sk-second"]


def test_the_child_dies_with_its_run() -> None:
    """kill -9 of the run leaves no provider process behind (it exits on its connection's
    end-of-file), and Ctrl-C is the run's, not the child's."""
    code = textwrap.dedent(
        """
        import time
        from optiforge.llm.provider_process import shared
        shared().warm("openai/x", None).result(timeout=120)
        print(shared()._proc.pid, flush=True)
        time.sleep(600)
        """
    )
    run = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert run.stdout is not None
    child = int(run.stdout.readline())
    os.kill(child, signal.SIGINT)  # ignored by the child
    time.sleep(0.3)
    os.kill(child, 0)  # still there
    run.kill()
    run.wait()
    wait_gone(child, 15, "the provider process")
