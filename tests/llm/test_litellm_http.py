"""LiteLLM through the real litellm -> openai client -> HTTP path against a local server."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from pydantic import BaseModel

from optiforge.errors import (
    BudgetExceeded,
    CassetteMiss,
    LLMAuthError,
    LLMProviderError,
    LLMRateLimited,
    LLMTimeout,
    StructuredOutputError,
)
from optiforge.llm import Budget, Cassette, LiteLLM, ResponseCache, ping
from optiforge.testing import OpenAICompatServer

USER = [{"role": "user", "content": "Say hello"}]


class Point(BaseModel):
    x: int
    y: int


class ListTracer:
    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    def event(self, kind: str, **fields: Any) -> None:
        self.events.append((kind, fields))


def make(server: OpenAICompatServer, model: str = "openai/test-model", **kw: Any) -> LiteLLM:
    kw.setdefault("timeout_s", 5.0)
    kw.setdefault("backoff_base_s", 0.001)
    kw.setdefault("backoff_max_s", 0.01)
    return LiteLLM(model, api_base=server.url, api_key="sk-test", **kw)


def test_plain_chat_records_usage(openai_server: OpenAICompatServer) -> None:
    openai_server.script(
        [{"content": "hello there", "usage": {"prompt_tokens": 11, "completion_tokens": 3}}]
    )
    tracer = ListTracer()
    c = make(openai_server, tracer=tracer).complete(USER)
    assert c.text == "hello there"
    assert c.finish_reason == "stop"
    assert c.message == {"role": "assistant", "content": "hello there"}
    assert (c.record.tokens_in, c.record.tokens_out) == (11, 3)
    assert c.record.cost_known is False and c.record.cost_usd == 0.0  # unknown local model
    assert c.record.attempts == 1 and not c.record.cached
    assert openai_server.count == 1
    assert openai_server.requests[0]["messages"] == USER
    assert openai_server.requests[0]["model"] == "test-model"
    kind, fields = tracer.events[0]
    assert kind == "llm_call" and fields["ok"] is True
    for k in ("model", "tokens_in", "tokens_out", "cost_usd", "latency_s", "cached", "attempts"):
        assert k in fields
    assert fields["tokens_in"] == 11


@pytest.mark.slow
def test_known_model_cost_matches_price_map(openai_server: OpenAICompatServer) -> None:
    import litellm

    openai_server.script(
        [{"content": "hi", "usage": {"prompt_tokens": 1000, "completion_tokens": 500}}]
    )
    rec = make(openai_server, model="openai/gpt-4o-mini").complete(USER).record
    price = litellm.model_cost["gpt-4o-mini"]
    expected = 1000 * price["input_cost_per_token"] + 500 * price["output_cost_per_token"]
    assert rec.cost_known is True
    assert rec.cost_usd == pytest.approx(expected, rel=1e-9)
    assert rec.cost_usd > 0


def test_tool_calls_are_parsed(openai_server: OpenAICompatServer) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "add two ints",
                "parameters": {
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    "required": ["a", "b"],
                },
            },
        }
    ]
    openai_server.script(
        [{"tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 2, "b": 3}}]}]
    )
    c = make(openai_server).complete(USER, tools=tools)
    assert c.finish_reason == "tool_calls"
    assert [(t.id, t.name, t.arguments) for t in c.tool_calls] == [("c1", "add", {"a": 2, "b": 3})]
    assert c.message["tool_calls"][0]["function"]["name"] == "add"
    assert openai_server.requests[0]["tools"] == tools


def test_json_schema_output(openai_server: OpenAICompatServer) -> None:
    openai_server.script(['```json\n{"x": 1, "y": 2}\n```'])
    c = make(openai_server).complete(USER, schema=Point)
    assert c.parsed == Point(x=1, y=2) and c.reasks == 0
    req = openai_server.requests[0]
    assert req["response_format"] == {"type": "json_object"}
    assert req["messages"][0]["role"] == "system" and '"x"' in req["messages"][0]["content"]


def test_invalid_json_then_valid_reasks(openai_server: OpenAICompatServer) -> None:
    openai_server.script(['{"x": "not an int", "y": 2}', '{"x": 5, "y": 6}'])
    tracer = ListTracer()
    c = make(openai_server, tracer=tracer).complete(USER, schema=Point)
    assert c.parsed == Point(x=5, y=6) and c.reasks == 1
    checked = [f for kind, f in tracer.events if kind == "llm_structured"]
    assert [(f["schema"], f["reask"], f["ok"]) for f in checked] == [
        ("Point", 0, False),
        ("Point", 1, True),
    ]
    assert "x" in checked[0]["error"] and checked[1]["error"] is None
    assert openai_server.count == 2
    second = openai_server.requests[1]["messages"]
    assert second[-2]["role"] == "assistant" and "not an int" in second[-2]["content"]
    assert second[-1]["role"] == "user" and "x:" in second[-1]["content"]


def test_never_valid_raises_after_bounded_reasks(openai_server: OpenAICompatServer) -> None:
    openai_server.script([], default="no json here")
    with pytest.raises(StructuredOutputError, match="Point after 3 tries"):
        make(openai_server, max_reasks=2).complete(USER, schema=Point)
    assert openai_server.count == 3


def test_429_then_success_honours_retry_after(openai_server: OpenAICompatServer) -> None:
    openai_server.script([{"status": 429, "headers": {"Retry-After": "0.2"}}, "ok"])
    t0 = time.monotonic()
    c = make(openai_server, max_retries=3).complete(USER)
    assert c.text == "ok" and c.record.attempts == 2
    assert openai_server.count == 2
    assert time.monotonic() - t0 >= 0.2  # backoff alone would be ~1 ms


def test_429_forever_raises_rate_limited(openai_server: OpenAICompatServer) -> None:
    openai_server.script([], default={"status": 429, "headers": {"retry-after-ms": "5"}})
    with pytest.raises(LLMRateLimited) as info:
        make(openai_server, max_retries=1).complete(USER)
    assert info.value.retry_after == pytest.approx(0.005)
    assert openai_server.count == 2


def test_500_forever_gives_up_after_n_attempts(openai_server: OpenAICompatServer) -> None:
    openai_server.script([], default={"status": 500})
    tracer = ListTracer()
    budget = Budget()
    with pytest.raises(LLMProviderError, match="after 3 attempts"):
        make(openai_server, max_retries=2, tracer=tracer, budget=budget).complete(USER)
    assert openai_server.count == 3  # ours are the only retries (litellm/openai set to 0)
    ((kind, fields),) = tracer.events
    assert kind == "llm_call" and fields["ok"] is False and fields["attempts"] == 3
    assert budget.calls == 1


def test_auth_error_is_not_retried(openai_server: OpenAICompatServer) -> None:
    openai_server.script([], default={"status": 401})
    with pytest.raises(LLMAuthError):
        make(openai_server, max_retries=3).complete(USER)
    assert openai_server.count == 1


def test_slow_reply_times_out(openai_server: OpenAICompatServer) -> None:
    openai_server.script([{"delay_s": 1.5, "content": "late"}])
    llm = make(openai_server, timeout_s=0.3, max_retries=0)
    llm._prepare()  # the one-off set-up (importing litellm) is not the call's time
    t0 = time.monotonic()
    with pytest.raises(LLMTimeout):  # the reply would have come at 1.5 s: no timeout, no raise
        llm.complete(USER)
    # under the reply's delay plus slack for a loaded machine (the raise is the measure)
    assert time.monotonic() - t0 < 15.0
    assert openai_server.count == 1


def test_budget_blocks_third_call_before_server(openai_server: OpenAICompatServer) -> None:
    openai_server.script([], default="fine")
    budget = Budget(max_calls=2)
    llm = make(openai_server, budget=budget)
    llm.complete(USER)
    llm.complete([{"role": "user", "content": "again"}])
    with pytest.raises(BudgetExceeded) as info:
        llm.complete([{"role": "user", "content": "third"}])
    assert info.value.limit == "calls"
    assert openai_server.count == 2
    assert budget.snapshot()["calls"] == {"used": 2, "cap": 2}


def test_cache_hit_skips_server_and_budget(openai_server: OpenAICompatServer, tmp_path) -> None:
    openai_server.script(["first answer"])
    budget = Budget(max_calls=1)
    cache = ResponseCache(tmp_path / "cache.db")
    llm = make(openai_server, cache=cache, budget=budget)
    a = llm.complete(USER, temperature=0)
    b = llm.complete(USER, temperature=0)  # would exceed max_calls if it were a real call
    assert a.text == b.text == "first answer"
    assert not a.record.cached and b.record.cached and b.record.attempts == 0
    assert openai_server.count == 1 and budget.calls == 1
    # A different output-affecting parameter is a different key.
    with pytest.raises(BudgetExceeded):
        llm.complete(USER, temperature=1)
    # A fresh client on the same file sees the entry (persistence).
    c = make(openai_server, cache=ResponseCache(tmp_path / "cache.db")).complete(
        USER, temperature=0
    )
    assert c.record.cached and openai_server.count == 1


def test_cassette_record_then_replay_without_server(tmp_path) -> None:
    path = tmp_path / "run.jsonl"
    with OpenAICompatServer(["alpha", '{"x": 3, "y": 4}']) as server:
        rec_llm = make(server, cassette=Cassette(path, mode="record"))
        r1 = rec_llm.complete(USER)
        r2 = rec_llm.complete([{"role": "user", "content": "point"}], schema=Point)
        url = server.url
    assert len(path.read_text().splitlines()) == 2
    # The server is gone: a real request would now fail to connect.
    replay = LiteLLM(
        "openai/test-model",
        api_base=url,
        api_key="sk-test",
        cassette=Cassette(path, mode="replay"),
        max_retries=0,
    )
    p1 = replay.complete(USER)
    p2 = replay.complete([{"role": "user", "content": "point"}], schema=Point)
    assert p1.text == r1.text == "alpha"
    assert p2.parsed == r2.parsed == Point(x=3, y=4)
    assert p1.record.replayed and p1.record.tokens_in == r1.record.tokens_in
    with pytest.raises(
        CassetteMiss, match=r"request [0-9a-f]{16} \(first user message: 'never asked"
    ):
        replay.complete([{"role": "user", "content": "never asked this"}])


def test_a_request_recurring_across_runs_replays_in_recorded_order(tmp_path) -> None:
    """An eval's runs share its cassette: two runs asking the same question got two answers
    when recorded, and get them back in that order on replay (each run's own cassette
    object would hand both runs the first answer)."""
    path = tmp_path / "eval.jsonl"
    with OpenAICompatServer(["first run's answer", "second run's answer"]) as server:
        for _ in range(2):  # two runs, each with its own LLM, as an eval builds them
            make(server, cassette=Cassette.shared(path, mode="record")).complete(USER)
    replies = [  # the server is gone: only the cassette can answer
        LiteLLM("openai/test-model", api_base="http://127.0.0.1:9/v1",
                api_key="sk-test", max_retries=0,
                cassette=Cassette.shared(path, mode="replay")).complete(USER)
        for _ in range(2)
    ]  # fmt: skip
    assert [r.text for r in replies] == ["first run's answer", "second run's answer"]


def test_acomplete(openai_server: OpenAICompatServer) -> None:
    openai_server.script(["async hello"])
    c = asyncio.run(make(openai_server).acomplete(USER))
    assert c.text == "async hello"


def test_ping(openai_server: OpenAICompatServer) -> None:
    openai_server.script(["pong"])
    rec = ping(make(openai_server))
    assert rec.model == "openai/test-model" and rec.tokens_in > 0
    assert "pong" in openai_server.requests[0]["messages"][0]["content"]


def test_connection_refused_is_provider_error(tmp_path) -> None:
    with OpenAICompatServer() as server:
        url = server.url
    llm = LiteLLM(
        "openai/test-model", api_base=url, api_key="sk", max_retries=1, backoff_base_s=0.001
    )
    with pytest.raises(LLMProviderError, match="after 2 attempts"):
        llm.complete(USER)


def test_concurrent_acomplete_respects_call_budget(openai_server: OpenAICompatServer) -> None:
    openai_server.script([], default={"content": "ok", "delay_s": 0.2})
    llm = make(openai_server, budget=Budget(max_calls=2))

    async def main() -> list[Any]:
        msgs = [[{"role": "user", "content": f"q{i}"}] for i in range(3)]
        return await asyncio.gather(*(llm.acomplete(m) for m in msgs), return_exceptions=True)

    results = asyncio.run(main())
    assert sum(isinstance(r, BudgetExceeded) for r in results) == 1
    assert sum(getattr(r, "text", None) == "ok" for r in results) == 2
    assert openai_server.count == 2


def test_reasks_and_cache_hits_are_traced(openai_server: OpenAICompatServer, tmp_path) -> None:
    openai_server.script(["not json", '{"x": 1, "y": 1}'])
    tracer = ListTracer()
    llm = make(openai_server, tracer=tracer, cache=ResponseCache(tmp_path / "c.db"))
    llm.complete(USER, schema=Point)
    llm.complete(USER, schema=Point)  # both provider replies now come from the cache
    calls = [f for kind, f in tracer.events if kind == "llm_call"]
    assert [f["cached"] for f in calls] == [False, False, True, True]
    checked = [f["ok"] for kind, f in tracer.events if kind == "llm_structured"]
    assert checked == [False, True, False, True]  # the cached replies are checked again
    assert openai_server.count == 2


def test_hosted_vllm_provider_string_reaches_the_server(openai_server: OpenAICompatServer) -> None:
    openai_server.script(['{"x": 7, "y": 8}'])
    c = make(openai_server, model="hosted_vllm/test-model").complete(USER, schema=Point)
    assert c.parsed == Point(x=7, y=8) and c.record.model == "hosted_vllm/test-model"
    assert openai_server.requests[0]["model"] == "test-model"


def test_openai_compatible_server_needs_no_key(
    openai_server: OpenAICompatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The README's `--model openai/<m> --api-base URL` works with no OPENAI_API_KEY set."""
    from optiforge.llm.litellm_client import PLACEHOLDER_KEY

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    openai_server.script([{"content": "hi"}])
    llm = LiteLLM("openai/local-model", api_base=openai_server.url, timeout_s=5.0)
    assert llm.complete(USER).text == "hi"
    assert openai_server.authorizations == [f"Bearer {PLACEHOLDER_KEY}"]


def test_a_set_key_is_sent_to_the_api_base(
    openai_server: OpenAICompatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-real")
    openai_server.script([{"content": "hi"}])
    LiteLLM("openai/local-model", api_base=openai_server.url, timeout_s=5.0).complete(USER)
    assert openai_server.authorizations == ["Bearer sk-real"]


def test_missing_key_is_an_auth_error_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key for a hosted provider: one attempt, no backoff, and the message names the
    variable to set (it used to be a retried "InternalServerError" for 25-32 s)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    llm = LiteLLM("openai/gpt-4o-mini", timeout_s=5.0)
    with pytest.raises(LLMAuthError, match="OPENAI_API_KEY") as info:
        llm.complete(USER)
    assert info.value.attempts == 1  # type: ignore[attr-defined]


def test_rejected_key_is_not_retried(openai_server: OpenAICompatServer) -> None:
    openai_server.script([{"status": 401, "error": "invalid api key"}] * 3)
    with pytest.raises(LLMAuthError, match="OPENAI_API_KEY"):
        make(openai_server).complete(USER)
    assert openai_server.count == 1


def test_first_call_latency_excludes_importing_litellm(
    openai_server: OpenAICompatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`llm ping` reported litellm's ~2 s import as the first call's latency. A set-up that
    takes 1 s (far above a local round trip) must not appear in the call's latency."""
    import optiforge.llm.litellm_client as lc

    real = lc.import_litellm
    slow = {"first": True}

    def slow_first_import() -> Any:
        if slow.pop("first", False):
            time.sleep(1.0)
        return real()

    monkeypatch.setattr(lc, "import_litellm", slow_first_import)
    openai_server.script([{"content": "pong"}])
    record = make(openai_server, in_process=True).complete(USER).record
    assert not slow  # the slow set-up did run
    assert record.latency_s < 1.0


def test_first_call_latency_excludes_starting_the_provider_process(
    openai_server: OpenAICompatServer,
) -> None:
    """A fresh provider process takes seconds to import litellm; the call's latency does
    not include it. (A priced model: an unpriced ``openai/`` model at an ``api_base`` goes
    through the ``openai`` client and never imports litellm.)"""
    from optiforge.llm.provider_process import shared

    shared().close()  # the next call starts a new one
    openai_server.script([{"content": "pong"}])
    t0 = time.monotonic()
    record = make(openai_server, model="openai/gpt-4o-mini").complete(USER).record
    assert time.monotonic() - t0 > 1.0  # litellm's import happened in between
    assert record.latency_s < 1.0


_PREWARM = """
import sys, time
from optiforge.llm import LiteLLM
from optiforge.llm.provider_process import shared
llm = LiteLLM('openai/x', api_base='http://127.0.0.1:9/v1', in_process={in_process})
assert 'litellm' not in sys.modules
t0 = time.monotonic()
llm.prewarm()
assert time.monotonic() - t0 < 1.5, "prewarm waited for the import"  # import: 2 s idle, more loaded
deadline = time.monotonic() + 120
if {in_process}:
    while 'litellm' not in sys.modules or not hasattr(sys.modules['litellm'], 'completion'):
        assert time.monotonic() < deadline
        time.sleep(0.05)
else:
    shared().warm('openai/x', 'http://127.0.0.1:9/v1').result(timeout=120)
    llm._prepare()  # warm already: returns at once
    assert 'litellm' not in sys.modules and 'openai' not in sys.modules
print('ok')
"""


@pytest.mark.parametrize("in_process", [True, False])
def test_prewarm_imports_litellm_in_the_background(in_process: bool) -> None:
    """A run starts importing litellm when it builds its LLM, not inside the first call:
    in a thread (``in_process``) or in the provider process, which the run's own process
    then never imports."""
    import subprocess
    import sys

    code = _PREWARM.format(in_process=in_process)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=180)
    assert out.stdout.strip() == "ok", out.stderr[-2000:]
