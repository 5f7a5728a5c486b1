"""What a SMITH tool is, and how a model's reply becomes one.

A tool is ``{"name", "description", "parameters" (JSON Schema of an object), "code"}``;
the three reward axes that judge it are the suite's (``procedural.rewards``). A reply
gives the tool as a JSON object (in a ```json block or bare) and the code in its
``code`` field or a ```python block. Tools in one pool have distinct names: a clash is
renamed (``name_2``) in the code too.
"""

from __future__ import annotations

import json
import re
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, Field

JsonType = Literal["integer", "string", "boolean", "array", "object"]


class SmithState(TypedDict, total=False):
    """SMITH's graph state (checkpointed after every node)."""

    pool: list[dict[str, Any]]
    builds: int
    """Build tasks done."""
    spent: int
    """Validations made (the budget's evaluations)."""
    log: list[dict[str, Any]]
    """Every build rollout: build id, attempt, the three axes, passed."""
    asked: int
    """Use questions done."""
    calls: dict[str, list[dict[str, Any]]]
    errors: list[str]
    done: bool


class Param(BaseModel):
    name: str = Field(description="the parameter's name, as in the function", max_length=32,
                      pattern=r"^[a-z_][a-z0-9_]{0,31}$")  # fmt: skip
    type: JsonType
    items: JsonType | None = Field(default=None, description="for an array: its items' type")


class ToolReply(BaseModel):
    """A tool as structured output (with ``--model local`` the schema is a grammar the
    model cannot leave). The parameters are a flat typed list, a small grammar even for a
    135M model; ``tool()`` turns them into the tool's JSON Schema."""

    # bounded: a small model held to a grammar otherwise fills a string field to the reply's
    # length limit (SmolLM2 wrote a 1000-token tool name) and never reaches the code
    name: str = Field(
        description="snake_case function name", max_length=40, pattern=r"^[a-z_][a-z0-9_]{0,39}$"
    )
    description: str = Field(description="one line: what the tool computes", max_length=160)
    params: list[Param] = Field(description="the function's parameters, in order", max_length=8)
    code: str = Field(description="Python source defining the function")

    def tool(self) -> dict[str, Any]:
        props: dict[str, Any] = {}
        for p in self.params:
            props[p.name] = {"type": p.type} | (
                {"items": {"type": p.items}} if p.type == "array" and p.items else {}
            )
        return {"name": self.name, "description": self.description, "code": self.code,
                "parameters": {"type": "object", "properties": props, "required": list(props)}}  # fmt: skip


class CallReply(BaseModel):
    """One function call as structured output (a model without function calling)."""

    name: str = Field(description="the tool's name")
    arguments: dict[str, Any] = Field(description="the tool's arguments")


def parse_tool(text: str) -> tuple[dict[str, Any] | None, str]:
    """A tool from a reply: a JSON object (in a ```json block or bare) and the code (its
    ``code`` field or the first ```python block). ``(None, why)`` when there is none."""
    blocks = re.findall(r"```(\w*)\s*\n(.*?)```", text, re.S)
    spec: Any = None
    for lang, body in blocks:
        if lang.lower() in ("json", ""):
            try:
                spec = json.loads(body)
                break
            except json.JSONDecodeError:
                continue
    if spec is None:
        start, end = text.find("{"), text.rfind("}")
        if start >= 0 and end > start:
            try:
                spec = json.loads(text[start : end + 1])
            except json.JSONDecodeError:
                spec = None
    if not isinstance(spec, dict):
        return None, "the reply holds no JSON object for the tool"
    code = spec.get("code")
    if not isinstance(code, str) or not code.strip():
        code = next((body for lang, body in blocks if lang.lower() in ("python", "py")), None)
    if not code:
        return None, "the reply holds no code"
    return {"name": spec.get("name"), "description": str(spec.get("description") or ""),
            "parameters": spec.get("parameters"), "code": code.strip() + "\n"}, ""  # fmt: skip


def unique_name(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    k = 2
    while f"{name}_{k}" in taken:
        k += 1
    return f"{name}_{k}"


def renamed(tool: dict[str, Any], new: str) -> dict[str, Any]:
    old = str(tool["name"])
    return {**tool, "name": new, "code": re.sub(rf"\b{re.escape(old)}\b", new, str(tool["code"]))}
