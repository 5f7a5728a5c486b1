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
