"""``kit.ask.ask_valid``: the one ask / validate / re-ask-with-the-error loop."""

from __future__ import annotations

from typing import Any

from optiforge.agents.kit.ask import Invalid, ask_valid
from optiforge.errors import LLMProviderError
from optiforge.llm.types import Completion
from optiforge.testing import ScriptedLLM


def _even(reply: Completion) -> int:
    n = int(reply.text)
    if n % 2:
        raise Invalid(f"{n} is odd")
    return n


def test_an_invalid_reply_is_reasked_with_its_reason_then_accepted() -> None:
    llm = ScriptedLLM(["3", "4"])
    seen: list[tuple[int, str]] = []
    asked = ask_valid(llm, [{"role": "user", "content": "an even number"}], _even, tries=3,
                      reask=lambda why: f"No: {why}.", params=lambda k: {"temperature": 0.1 * k},
                      on_invalid=lambda k, why: seen.append((k, why)))  # fmt: skip
    assert asked.valid and asked.value == 4 and asked.asks == 2 and asked.errors == ["3 is odd"]
    assert seen == [(0, "3 is odd")]
    second = llm.calls[1]
    assert [m["content"] for m in second[-2:]] == ["3", "No: 3 is odd."]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]


def test_tries_bound_the_requests_and_no_reask_follows_the_last() -> None:
    llm = ScriptedLLM(["1", "3"])
    asked = ask_valid(llm, [{"role": "user", "content": "x"}], _even, tries=2, reask=str)
    assert not asked.valid and asked.value is None and asked.asks == 2
    assert asked.errors == ["1 is odd", "3 is odd"] and len(llm.calls) == 2
    assert len(asked.messages) == 3  # the request, the first reply and its re-ask


def test_a_provider_error_stops_the_loop_or_propagates() -> None:
    fail = LLMProviderError("down")

    class Down:
        def complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
            raise fail

    asked = ask_valid(Down(), [{"role": "user", "content": "x"}], _even, tries=3, reask=str)
    assert asked.stop is fail and asked.asks == 1 and not asked.valid
    try:
        ask_valid(Down(), [{"role": "user", "content": "x"}], _even, tries=3, reask=str, stop_on=())
    except LLMProviderError as e:
        assert e is fail
    else:
        raise AssertionError("stop_on=() must let the provider error through")


def test_a_reply_the_llm_already_refused_counts_and_is_sent_again_unchanged() -> None:
    sent: list[int] = []

    class Refusing:
        def complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
            sent.append(len(messages))
            if len(sent) == 1:
                raise Invalid("schema never matched")
            return ScriptedLLM(["2"]).complete(messages)

    asked = ask_valid(Refusing(), [{"role": "user", "content": "x"}], _even, tries=2, reask=str)
    assert asked.valid and asked.value == 2 and asked.errors == ["schema never matched"]
    assert sent == [1, 1]
