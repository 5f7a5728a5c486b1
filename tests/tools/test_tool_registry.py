"""ToolRegistry: schema derivation, validation errors as text, dispatch."""

from __future__ import annotations

import json
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

from optiforge.errors import ToolError
from optiforge.tools import ToolRegistry


def make_registry() -> ToolRegistry:
    reg = ToolRegistry()

    @reg.register
    def add(a: int, b: Annotated[int, Field(description="second term")] = 1) -> int:
        """Add two integers.

        Longer text that is not part of the description.
        """
        return a + b

    @reg.register(name="fail")
    def boom(reason: str) -> str:
        raise RuntimeError(reason)

    return reg


def test_spec_is_derived_from_type_hints() -> None:
    reg = make_registry()
    spec = {s["function"]["name"]: s for s in reg.specs()}["add"]
    assert spec["type"] == "function"
    fn = spec["function"]
    assert fn["description"] == "Add two integers."
    params = fn["parameters"]
    assert params["type"] == "object" and params["required"] == ["a"]
    assert params["properties"]["a"]["type"] == "integer"
    assert params["properties"]["b"]["description"] == "second term"
    assert params["properties"]["b"]["default"] == 1
    assert params["additionalProperties"] is False
    assert reg.names == ["add", "fail"] and "add" in reg and len(reg) == 2


def test_dispatch_success_and_json_content() -> None:
    reg = make_registry()
    r = reg.dispatch("add", '{"a": 2, "b": 40}')
    assert r.ok and r.content == "42" and r.value == 42
    assert reg.call("add", a=1) == 2


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ('{"a": "two"}', "a: Input should be a valid integer"),
        ("{}", "a: Field required"),
        ('{"a": 1, "c": 3}', "c: Extra inputs are not permitted"),
        ('{"a": 1', "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
    ],
)
def test_invalid_arguments_come_back_as_text(args: str, needle: str) -> None:
    r = make_registry().dispatch("add", args)
    assert not r.ok and r.error == "invalid_arguments" and needle in r.content


def test_unknown_tool_and_failing_tool() -> None:
    reg = make_registry()
    r = reg.dispatch("mul", "{}")
    assert not r.ok and r.error == "unknown_tool" and "available tools: add, fail" in r.content
    r = reg.dispatch("fail", '{"reason": "disk full"}')
    assert not r.ok and r.error == "tool_failed" and "RuntimeError: disk full" in r.content
    with pytest.raises(ToolError, match="disk full"):
        reg.call("fail", reason="disk full")
    with pytest.raises(ToolError, match="unknown tool"):
        reg.get("mul")


def test_pydantic_model_tools() -> None:
    class ScaleVector(BaseModel):
        """Multiply a vector by a factor."""

        values: list[float]
        factor: float = 2.0
        mode: Literal["plain", "abs"] = "plain"

        def run(self) -> list[float]:
            vals = [abs(v) for v in self.values] if self.mode == "abs" else self.values
            return [v * self.factor for v in vals]

    reg = ToolRegistry()
    tool = reg.register_model(ScaleVector)
    assert tool.name == "scale_vector" and tool.description == "Multiply a vector by a factor."
    r = reg.dispatch("scale_vector", json.dumps({"values": [1, -2], "mode": "abs"}))
    assert r.ok and r.value == [2.0, 4.0]
    r = reg.dispatch("scale_vector", json.dumps({"values": [1], "mode": "cube"}))
    assert not r.ok and "mode" in r.content
    reg.register_model(ScaleVector, fn=lambda m: sum(m.values), name="total")
    assert reg.call("total", values=[1, 2, 3]) == 6


def test_registration_errors() -> None:
    reg = make_registry()
    with pytest.raises(ToolError, match="already registered"):
        reg.register(lambda a: a, name="add")

    def untyped(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(ToolError, match="needs a type hint"):
        reg.register(untyped)

    def star(*xs: int) -> int:
        return sum(xs)

    with pytest.raises(ToolError, match=r"\*args"):
        reg.register(star)

    def ok(x: int) -> int:
        return x

    with pytest.raises(ToolError, match="must match"):
        reg.register(ok, name="bad name!")
    with pytest.raises(ToolError, match="run"):
        reg.register_model(BaseModel)
