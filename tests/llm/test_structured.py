"""Tolerant JSON extraction and schema validation messages."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from optiforge.llm.structured import (
    SchemaParseError,
    extract_json,
    parse_structured,
    with_schema_instruction,
)


class Cfg(BaseModel):
    name: str
    size: int


@pytest.mark.parametrize(
    "text",
    [
        '{"name": "a", "size": 1}',
        '```json\n{"name": "a", "size": 1}\n```',
        '```\n{"name": "a", "size": 1}\n```',
        'Sure! Here it is: {"name": "a", "size": 1} Hope that helps.',
    ],
)
def test_extract_tolerates_fences_and_prose(text: str) -> None:
    assert parse_structured(text, Cfg) == Cfg(name="a", size=1)


def test_errors_name_the_problem() -> None:
    with pytest.raises(SchemaParseError, match="size: Input should be a valid integer"):
        parse_structured('{"name": "a", "size": "big"}', Cfg)
    with pytest.raises(SchemaParseError, match="not valid JSON"):
        extract_json("{name: a}")
    with pytest.raises(SchemaParseError, match="empty"):
        parse_structured("  ", Cfg)


def test_instruction_goes_into_system_message() -> None:
    msgs = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "go"}]
    out = with_schema_instruction(msgs, Cfg)
    assert len(out) == 2 and out[0]["content"].startswith("You are terse.")
    assert '"size"' in out[0]["content"] and msgs[0]["content"] == "You are terse."
    out2 = with_schema_instruction([{"role": "user", "content": "go"}], Cfg)
    assert out2[0]["role"] == "system" and len(out2) == 2


def test_extract_code_block() -> None:
    from optiforge.llm.structured import extract_code_block

    assert (
        extract_code_block("Here:\n```python\ndef f(x):\n    return x\n```\nDone")
        == "def f(x):\n    return x\n"
    )
    assert extract_code_block("```\nprint(1)\n```") == "print(1)\n"
    assert extract_code_block("no fence at all") == "no fence at all"
    # a block left open (stopped at its closing fence, or cut at the length limit) runs to
    # the end of the reply
    assert extract_code_block("Here:\n```python\ndef f(x):\n    return x") == (
        "def f(x):\n    return x"
    )
    assert extract_code_block("```python\na = 1\n```\nthen\n```python\nb = 2\n") == "a = 1\n"
    assert extract_code_block(None) == ""
