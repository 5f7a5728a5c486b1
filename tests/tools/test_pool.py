"""load_tool_pool: stored tools run only through the sandbox."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from optiforge.errors import ToolError
from optiforge.tools import ToolRegistry, load_tool_pool

HYPOT = SimpleNamespace(
    name="hypot",
    description="Euclidean norm of (x, y).",
    json_schema={
        "type": "object",
        "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
        "required": ["x", "y"],
    },
    code="import math\n\ndef hypot(x, y):\n    print('debug output')\n    return math.hypot(x, y)\n",
)
SHOUT = SimpleNamespace(
    name="shout",
    description="Print in capitals.",
    json_schema={"type": "object", "properties": {"text": {"type": "string"}}},
    code="import os\n\ndef shout(text):\n    open('touched.txt', 'w').write(os.getcwd())\n    print(text.upper())\n",
)
BROKEN = SimpleNamespace(
    name="broken",
    description="",
    json_schema={},
    code="def broken():\n    raise ValueError('bad input value')\n",
)


def test_stored_tools_run_in_the_sandbox(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_sandbox: Any
) -> None:
    monkeypatch.chdir(tmp_path)
    sbx = fake_sandbox
    reg = load_tool_pool([HYPOT, SHOUT, BROKEN], sbx)
    assert reg.names == ["broken", "hypot", "shout"]
    spec = {s["function"]["name"]: s["function"] for s in reg.specs()}
    assert spec["hypot"]["parameters"]["required"] == ["x", "y"]
    r = reg.dispatch("hypot", '{"x": 3, "y": 4}')
    assert r.ok and r.value == pytest.approx(5.0) and json.loads(r.content) == pytest.approx(5.0)
    assert sbx.runs[-1]["files"]["tool_code.py"] == HYPOT.code and sbx.runs[-1]["network"] is False
    assert reg.call("shout", text="hi") == "HI"  # None result -> the function's stdout
    assert not (tmp_path / "touched.txt").exists()  # stored code never ran in our process/cwd
    assert len(sbx.runs) == 2


def test_schema_errors_and_failures_are_text(fake_sandbox: Any) -> None:
    sbx = fake_sandbox
    reg = load_tool_pool([HYPOT, BROKEN], sbx)
    r = reg.dispatch("hypot", '{"x": "three", "y": 4}')
    assert (
        not r.ok
        and r.error == "invalid_arguments"
        and "'three' is not of type 'number'" in r.content
    )
    assert sbx.runs == []  # rejected before the sandbox was asked
    r = reg.dispatch("broken", "{}")
    assert not r.ok and r.error == "tool_failed" and "ValueError: bad input value" in r.content


def test_pool_from_memory_store(tmp_path: Path, fake_sandbox: Any) -> None:
    memory = pytest.importorskip("optiforge.memory")
    store = memory.Store(f"sqlite:///{tmp_path / 'm.db'}", embedder=None)
    store.add_tool(
        memory.Tool(
            name="hypot",
            description=HYPOT.description,
            json_schema=HYPOT.json_schema,
            code=HYPOT.code,
        )
    )
    store.add_tool(memory.Tool(name="shout", json_schema=SHOUT.json_schema, code=SHOUT.code))
    base = ToolRegistry()
    reg = load_tool_pool(store, fake_sandbox, base, names=["hypot"])
    assert reg is base and reg.names == ["hypot"]
    assert reg.call("hypot", x=6, y=8) == pytest.approx(10.0)
    with pytest.raises(ToolError, match="already registered"):
        load_tool_pool(store, fake_sandbox, reg, names=["hypot"])


def test_empty_code_is_refused(fake_sandbox: Any) -> None:
    with pytest.raises(ToolError, match="no code"):
        load_tool_pool(
            [SimpleNamespace(name="x", description="", json_schema={}, code="")], fake_sandbox
        )
