"""ScriptedLLM / FunctionLLM share the production code paths."""

from __future__ import annotations

import time

import pytest
from pydantic import BaseModel

from optiforge.errors import (
    BudgetExceeded,
    ConfigError,
    LLMOffline,
    LLMTimeout,
    StructuredOutputError,
)
from optiforge.llm import LLM, Budget, OfflineLLM, is_offline, make_llm, provider_rows
from optiforge.llm.litellm_client import LiteLLM
from optiforge.testing import FunctionLLM, Raise, ScriptedLLM, ScriptExhausted, Sleep

U = [{"role": "user", "content": "hi"}]


class Answer(BaseModel):
    value: float


def test_scripted_replies_and_calls_recorded() -> None:
    llm = ScriptedLLM(["one", {"tool_calls": [{"name": "f", "arguments": {"a": 1}}]}])
    assert isinstance(llm, LLM)
    assert llm.complete(U).text == "one"
    c = llm.complete([{"role": "user", "content": "two"}], tools=[])
    assert c.tool_calls[0].name == "f" and c.tool_calls[0].arguments == {"a": 1}
    assert llm.calls[1][-1]["content"] == "two"
    with pytest.raises(ScriptExhausted, match=r"call #3 but only 2 outputs.*'three'"):
        llm.complete([{"role": "user", "content": "three"}])


def test_faults() -> None:
    llm = ScriptedLLM([Raise(LLMTimeout("slow")), ConfigError("boom"), Sleep(0.05, then="late")])
    with pytest.raises(LLMTimeout):
        llm.complete(U)
    with pytest.raises(ConfigError):
        llm.complete(U)
    t0 = time.monotonic()
    assert llm.complete(U).text == "late"
    assert time.monotonic() - t0 >= 0.05


def test_retries_apply_to_scripted_faults() -> None:
    llm = ScriptedLLM([Raise(LLMTimeout("t1")), "ok"], max_retries=1)
    c = llm.complete(U)
    assert c.text == "ok" and c.record.attempts == 2


def test_schema_reask_via_scripted_and_budget() -> None:
    budget = Budget(max_calls=3)
    llm = ScriptedLLM(["nope", Answer(value=2.5)], budget=budget)
    c = llm.complete(U, schema=Answer)
    assert c.parsed == Answer(value=2.5) and c.reasks == 1
    assert budget.calls == 2  # each re-ask is a charged call
    assert "not valid JSON" in llm.calls[1][-1]["content"]
    bad = ScriptedLLM(["x", "y"], max_reasks=1)
    with pytest.raises(StructuredOutputError):
        bad.complete(U, schema=Answer)
    shared = ScriptedLLM(["a", "b"], budget=budget)  # the same budget: 2 of 3 calls used
    assert shared.complete(U).text == "a"
    with pytest.raises(BudgetExceeded):
        shared.complete(U)
    assert len(shared.calls) == 1  # refused before the provider was asked


def test_function_llm_reacts_to_conversation() -> None:
    def fn(messages, tools, schema):
        n = sum(1 for m in messages if m["role"] == "user")
        return {"value": n} if schema is None else Answer(value=n)

    llm = FunctionLLM(lambda m, t, s: Answer(value=len(m)) if s else "plain")
    assert llm.complete(U).text == "plain"
    assert llm.complete(U, schema=Answer).parsed == Answer(value=2)  # system + user
    assert FunctionLLM(fn).complete(U, schema=Answer).parsed == Answer(value=1)


def test_bad_messages_fail_clearly() -> None:
    llm = ScriptedLLM(["x"])
    with pytest.raises(ConfigError, match="non-empty list"):
        llm.complete([])
    with pytest.raises(ConfigError, match=r"messages\[0\]"):
        llm.complete([{"content": "no role"}])
    with pytest.raises(ConfigError, match="schema must be"):
        llm.complete(U, schema=dict)  # type: ignore[arg-type]


def test_offline() -> None:
    assert make_llm(None) is None and make_llm("offline") is None and make_llm("OFFLINE") is None
    assert is_offline("offline") and not is_offline("openai/gpt-4o-mini")
    llm = make_llm("openai/gpt-4o-mini", api_key="sk-x")
    assert isinstance(llm, LiteLLM) and llm.model == "openai/gpt-4o-mini"
    with pytest.raises(LLMOffline, match="offline"):
        OfflineLLM().complete(U)
    with pytest.raises(ConfigError):
        LiteLLM("offline")


def test_provider_table(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    rows = {r["provider"]: r for r in provider_rows()}
    assert rows["openai"]["key_set"] == "yes" and rows["anthropic"]["key_set"] == "no"
    assert rows["ollama"]["api_base"] == "http://localhost:11434"
    assert {"hosted_vllm", "openai-compatible", "offline"} <= set(rows)
