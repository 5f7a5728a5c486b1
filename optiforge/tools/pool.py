"""Load the tool pool stored in memory into a registry; stored code runs only in a sandbox."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable
from typing import Any

from optiforge.errors import ToolError
from optiforge.tools.builtins import SandboxLike
from optiforge.tools.registry import Tool, ToolRegistry

_MARKER = "__OPTIFORGE_TOOL_RESULT__"

# Runs inside the sandbox: import the stored code, call the named function with the JSON
# arguments, print the JSON result after a marker so the tool's own prints stay apart.
_RUNNER = f"""
import json, sys
sys.path.insert(0, ".")
with open("args.json") as fh:
    payload = json.load(fh)
import tool_code
fn = getattr(tool_code, payload["name"], None)
if not callable(fn):
    sys.stderr.write("stored code defines no function named %r\\n" % payload["name"])
    sys.exit(3)
result = fn(**payload["arguments"])
sys.stdout.write("\\n{_MARKER}" + json.dumps(result, default=str) + "\\n")
"""


def _stored_tools(store: Any) -> Iterable[Any]:
    if hasattr(store, "tools") and callable(store.tools):
        return list(store.tools())
    if isinstance(store, Iterable):
        return list(store)
    raise ToolError("load_tool_pool needs a store with .tools() or an iterable of tool records")


def sandboxed_tool(
    record: Any,
    sandbox: SandboxLike,
    *,
    timeout_s: float = 30.0,
    memory_mb: int = 1024,
    python: str | None = None,
) -> Tool:
    """A Tool whose function runs ``record.code`` in ``sandbox`` with the JSON arguments.

    ``record`` needs ``name``, ``description``, ``json_schema`` (arguments) and ``code``
    (Python defining a function of that name). The result is the function's JSON return
    value, or its stdout when it returns None.
    """
    name, code = str(record.name), str(record.code or "")
    if not code.strip():
        raise ToolError(f"stored tool {name!r} has no code")
    schema = dict(record.json_schema or {"type": "object", "properties": {}})
    schema.setdefault("type", "object")
    exe = python or getattr(sandbox, "python", None) or sys.executable

    def run_stored(arguments: dict[str, Any]) -> Any:
        res = sandbox.run(
            [exe, "runner.py"],
            files={
                "runner.py": _RUNNER,
                "tool_code.py": code,
                "args.json": json.dumps({"name": name, "arguments": arguments}),
            },
            timeout_s=timeout_s,
            memory_mb=memory_mb,
            network=False,
        )
        if res.timed_out:
            raise ToolError(f"stored tool {name!r} timed out after {timeout_s} s")
        if res.returncode != 0:
            tail = str(res.stderr).strip().splitlines()[-3:]
            raise ToolError(f"stored tool {name!r} exited {res.returncode}: {' | '.join(tail)}")
        out = str(res.stdout)
        before, sep, after = out.rpartition(_MARKER)
        if not sep:
            raise ToolError(f"stored tool {name!r} produced no result")
        value = json.loads(after.strip())
        return before.strip() if value is None else value

    return Tool(name, str(record.description or ""), run_stored, parameters=schema)


def load_tool_pool(
    store: Any,
    sandbox: SandboxLike,
    registry: ToolRegistry | None = None,
    *,
    names: Iterable[str] | None = None,
    replace: bool = False,
    timeout_s: float = 30.0,
    memory_mb: int = 1024,
) -> ToolRegistry:
    """Add the stored tools (``store.tools()`` or an iterable of records) to ``registry``.

    ``names`` restricts which tools load; a stored tool whose name is already registered
    is an error unless ``replace``.
    """
    reg = registry if registry is not None else ToolRegistry()
    wanted = set(names) if names is not None else None
    for record in _stored_tools(store):
        if wanted is not None and record.name not in wanted:
            continue
        reg.add(
            sandboxed_tool(record, sandbox, timeout_s=timeout_s, memory_mb=memory_mb),
            replace=replace,
        )
    return reg
