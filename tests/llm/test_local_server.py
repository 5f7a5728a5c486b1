"""The embedded model's server, with a stand-in model: OpenAI requests in, llama.cpp's
arguments out (schemas as bounded grammars), and the real litellm path through it."""

from __future__ import annotations

import socket
import threading
from typing import Any

import pytest
from pydantic import BaseModel

from optiforge.llm import LiteLLM
from optiforge.llm.local_server import (
    ARRAY_CAP,
    STRING_CAP,
    LocalModelServer,
    RequestError,
    bounded,
    llama_request,
)


class Edge(BaseModel):
    source: str
    target: str
    kind: str = "direct"


class Beliefs(BaseModel):
    edges: list[Edge]


class FakeLlama:
    """Answers like ``Llama.create_chat_completion``; records what it was asked."""

    def __init__(self, content: str) -> None:
        self.content = content
        self.calls: list[dict[str, Any]] = []

    def create_chat_completion(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        return {
            "choices": [{"message": {"role": "assistant", "content": self.content},
                         "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
        }  # fmt: skip


@pytest.fixture
def served() -> Any:
    backend = FakeLlama('{"edges": [{"source": "rain", "target": "wet", "kind": "direct"}]}')
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    server = LocalModelServer(backend, "tiny-model", sock)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield backend, f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    server.shutdown()


def test_a_json_schema_request_becomes_a_bounded_grammar() -> None:
    schema = Beliefs.model_json_schema()
    kw = llama_request({
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "B", "schema": schema}},
        "temperature": 0.3, "max_tokens": 64, "stop": ["\n```\n"],
    })  # fmt: skip
    assert kw["messages"] == [{"role": "user", "content": "hi"}]
    assert (kw["temperature"], kw["max_tokens"], kw["stop"]) == (0.3, 64, ["\n```\n"])
    grammar = kw["response_format"]
    assert grammar["type"] == "json_object"
    edge = grammar["schema"]["$defs"]["Edge"]["properties"]
    assert edge["source"]["maxLength"] == STRING_CAP
    assert grammar["schema"]["properties"]["edges"]["maxItems"] == ARRAY_CAP
    assert "maxLength" not in schema["$defs"]["Edge"]["properties"]["source"]  # not mutated


def test_bounds_a_schema_sets_itself_are_kept() -> None:
    s = {"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 5}, "b": {"type": "string", "enum": ["x", "y"]},
        "c": {"type": "array", "items": {"type": "integer"}, "maxItems": 3}}}  # fmt: skip
    assert bounded(s) == s


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"messages": []}, "non-empty"),
        ({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function"}]},
         "tools"),
        ({"messages": [{"role": "user", "content": "x"}], "stream": True}, "stream"),
        ({"messages": [{"role": "user", "content": "x"}], "response_format": {"type": "xml"}},
         "xml"),
    ],
)  # fmt: skip
def test_requests_it_cannot_serve_are_refused(body: dict[str, Any], needle: str) -> None:
    with pytest.raises(RequestError, match=needle):
        llama_request(body)


def test_litellm_reaches_it_with_the_schema_and_real_token_counts(served: Any) -> None:
    """The real path: LiteLLM (provider process) -> litellm -> HTTP -> the server, the
    schema sent as OpenAI's json_schema response format and parsed back."""
    backend, url = served
    llm = LiteLLM("openai/tiny-model", api_base=url, api_key="sk-local", json_mode=True,
                  response_schema=True)  # fmt: skip
    c = llm.complete([{"role": "user", "content": "edges?"}], schema=Beliefs)
    assert isinstance(c.parsed, Beliefs) and c.parsed.edges[0].source == "rain"
    assert (c.record.tokens_in, c.record.tokens_out) == (12, 5)
    sent = backend.calls[-1]["response_format"]
    assert sent["type"] == "json_object" and sent["schema"]["properties"]["edges"]["maxItems"]


def test_errors_are_http_errors(served: Any) -> None:
    import json
    import urllib.error
    import urllib.request

    _, url = served
    req = urllib.request.Request(
        f"{url}/chat/completions", data=json.dumps({"messages": []}).encode(),
        headers={"Content-Type": "application/json"},
    )  # fmt: skip
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(req, timeout=10)
    assert info.value.code == 400
    with urllib.request.urlopen(f"{url}/models", timeout=10) as r:
        assert json.load(r)["data"][0]["id"] == "tiny-model"


class BarrierLlama(FakeLlama):
    """Answers only once ``parties`` generations are in flight at the same time."""

    def __init__(self, barrier: threading.Barrier) -> None:
        super().__init__("ok")
        self.barrier = barrier

    def create_chat_completion(self, **kwargs: Any) -> dict[str, Any]:
        self.barrier.wait()  # BrokenBarrierError (HTTP 500) unless the other one is here
        return super().create_chat_completion(**kwargs)


def _serve(parallel: int, barrier: threading.Barrier) -> tuple[LocalModelServer, str, list[Any]]:
    made: list[Any] = []

    def make() -> Any:
        made.append(BarrierLlama(barrier))
        return made[-1]

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    server = LocalModelServer(make(), "tiny-model", sock, parallel=parallel, make_backend=make)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{sock.getsockname()[1]}/v1", made


def _post_concurrently(url: str, n: int) -> list[int]:
    import json
    import urllib.error
    import urllib.request

    codes: list[int] = []

    def post() -> None:
        req = urllib.request.Request(
            f"{url}/chat/completions",
            data=json.dumps({"messages": [{"role": "user", "content": "hi"}]}).encode(),
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                codes.append(r.status)
        except urllib.error.HTTPError as e:
            codes.append(e.code)

    threads = [threading.Thread(target=post) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return codes


def test_two_requests_are_generated_at_the_same_time() -> None:
    """Two requests in flight meet at a barrier inside the model: only a server that
    generates both at once answers them (one at a time, the first waits alone)."""
    server, url, made = _serve(2, threading.Barrier(2, timeout=20))
    try:
        assert _post_concurrently(url, 2) == [200, 200]
        assert len(made) == 2  # the second instance was made when the first was busy
        assert _post_concurrently(url, 2) == [200, 200]
        assert len(made) == 2  # and reused, not made again
    finally:
        server.shutdown()


def test_one_instance_serves_one_request_at_a_time() -> None:
    """The same barrier with ``parallel=1``: the requests never meet (the check above can
    fail)."""
    server, url, made = _serve(1, threading.Barrier(2, timeout=1))
    try:
        assert 500 in _post_concurrently(url, 2)
        assert len(made) == 1
    finally:
        server.shutdown()


def test_accepted_sockets_set_tcp_nodelay() -> None:
    """No Nagle delay on the server's side of a (keep-alive) connection."""
    import urllib.request

    server, url, _ = _serve(1, threading.Barrier(1))
    seen: list[int] = []
    base = server.httpd.RequestHandlerClass

    class Spy(base):  # type: ignore[valid-type,misc]
        def setup(self) -> None:
            super().setup()
            seen.append(self.connection.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))

    server.httpd.RequestHandlerClass = Spy
    try:
        with urllib.request.urlopen(f"{url}/models", timeout=10) as r:
            assert r.status == 200
    finally:
        server.shutdown()
    assert seen and seen[0] != 0


def test_default_parallel_is_bounded_by_cores_and_memory(monkeypatch: Any) -> None:
    from optiforge.llm import local_server as ls

    monkeypatch.setattr(ls.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(ls, "_available_memory", lambda: 64 << 30)
    assert ls.default_parallel(100 << 20, 8192, 1) == 4
    assert ls.default_parallel(100 << 20, 8192, 8) == 2
    monkeypatch.setattr(ls, "_available_memory", lambda: 1 << 30)  # 512 MiB to spend
    assert ls.default_parallel(100 << 20, 8192, 1) == 1
    monkeypatch.setattr(ls.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(ls, "_available_memory", lambda: 64 << 30)
    assert ls.default_parallel(100 << 20, 8192, 1) == 2
