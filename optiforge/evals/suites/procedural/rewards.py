"""SMITH's three reward axes, computed separately for every build and use rollout.

A **tool** is ``{"name", "description", "parameters" (a JSON Schema object), "code"}``: the
code defines a function ``name`` whose positional parameters are the schema's properties,
in order. The code never runs here: schema checks read it with ``ast``; calls run in the
sandbox (``optiforge.solvers.tools``).

Build rollout (a tool written from examples, run on held-out generator instances, its
positional arguments the instance's values in the order the question states them):

- **schema** (0 or 1): the schema is valid JSON Schema (Draft 2020-12), an object with
  properties; the code defines ``name`` with exactly those positional parameters, in
  order, no ``*args``/``**kwargs``; ``required`` names only properties and covers every
  parameter without a default; the name is a function-calling identifier.
- **code** (share of instances): the call returned a JSON value without an exception,
  within the soft limits (``SOFT_S`` seconds of CPU, ``MAX_STDOUT`` bytes printed). Both are
  measured outside the tool's process by the sandboxed runner's trusted call runner
  (``optiforge.solvers.tools``: the kernel's CPU time of the call's process tree, the bytes
  on its fds 1 and 2) and signed with a key drawn here per batch: a tool that patches
  the clock or rewrites the records wins nothing. CPU time rather than wall time, so a
  loaded machine does not fail an honest tool; sleeping costs no CPU but is cut at
  ``WALL_S``.
- **outcome** (share of instances): the value equals the exact verifier's answer
  (``families.verify``: same JSON types, no substring or tolerance credit), whatever the
  limits said.

Use rollout (a function call ``{"name", "arguments"}`` against the pool):

- **schema** (0/1): ``name`` is a pool tool and ``arguments`` is an object valid under its
  schema;
- **code** (0/1): the call ran (keyword arguments) within the limits;
- **outcome** (0/1): exact answer.

An entry ``{"answer": value}`` answers without a tool (a no-tools baseline): schema and
code 0, outcome judged. A call naming no pool tool cannot run: its code and outcome are 0 too. Otherwise the axes
are measured independently (a schema-invalid call still runs; a slow, correct tool loses
only the code axis).
"""

from __future__ import annotations

import ast
import hmac
import json
import re
from typing import Any

from optiforge.evals.suites.procedural.families import verify

SOFT_S = 0.5
"""CPU seconds one call may take before the code axis fails it (the hard limit is 4x)."""
MAX_STDOUT = 4096
"""Bytes a call may print before the code axis fails it."""
HARD_S = 4 * SOFT_S
WALL_S = 10.0
"""Wall seconds after which a call is cut (a tool that sleeps or waits uses no CPU)."""
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_RUNNER = "from optiforge.solvers.tools import run_request\nrun_request()\n"


def schema_check(tool: Any) -> tuple[bool, str]:
    """``(ok, why)`` for the schema axis of a build rollout (see the module doc)."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    if not isinstance(tool, dict):
        return False, "a tool is an object with name, description, parameters and code"
    name, params, code = tool.get("name"), tool.get("parameters"), tool.get("code")
    if not isinstance(name, str) or not _NAME.match(name):
        return False, f"name {name!r} is not a function-calling identifier"
    if not isinstance(code, str) or not code.strip():
        return False, "no code"
    if not isinstance(params, dict):
        return False, "parameters is not a JSON Schema object"
    try:
        Draft202012Validator.check_schema(params)
    except SchemaError as e:
        return False, f"parameters is not valid JSON Schema: {e.message}"[:300]
    props = params.get("properties")
    if params.get("type") != "object" or not isinstance(props, dict) or not props:
        return False, 'parameters must be {"type": "object", "properties": {...}} with properties'
    try:
        tree = ast.parse(code)
    except SyntaxError as e:
        return False, f"the code does not parse: {e.msg} (line {e.lineno})"
    fn = next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == name), None)
    if fn is None:
        return False, f"the code defines no top-level function {name!r}"
    a = fn.args
    if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs:
        return False, f"{name} takes *args, **kwargs or keyword-only parameters"
    names = [p.arg for p in a.args]
    if names != list(props):
        return False, f"{name}{tuple(names)} does not match the schema's properties {list(props)}"
    required = params.get("required", [])
    if not isinstance(required, list) or not set(required) <= set(props):
        return False, "required names a parameter that is not a property"
    no_default = names[: len(names) - len(a.defaults)]
    if not set(no_default) <= set(required):
        missing = sorted(set(no_default) - set(required))
        return False, f"parameters without a default are not required: {missing}"
    return True, ""


def run_calls(
    batches: list[dict[str, Any]], sandbox: Any | None, timeout_s: float = 120.0
) -> list[list[dict[str, Any]]]:
    """Run ``[{"code", "name", "calls"}]`` in one sandbox process: per tool, per call, the
    records of ``optiforge.solvers.tools``. A crashed or timed-out batch fails every call.

    ``timeout_s``: the batch's wall limit, raised to what its calls may take under their own
    cuts (``WALL_S`` each, plus start-up): a safety net above them, so neither a loaded
    machine nor one tool that sleeps to its cut fails the other calls of the batch."""
    import secrets

    from optiforge.sandboxes import get_sandbox
    from optiforge.sandboxes.payload import package_files
    from optiforge.solvers.tools import mac_of

    if not batches:
        return []
    sandbox = sandbox or get_sandbox("local")
    n_calls = sum(len(b.get("calls") or []) for b in batches)
    timeout_s = max(timeout_s, n_calls * (WALL_S + 1.0) + 60.0)
    key = secrets.token_bytes(32)
    files: dict[str, str | bytes] = dict(package_files("optiforge.solvers.tools"))
    files["request.json"] = json.dumps({"tools": batches, "hard_s": HARD_S, "wall_s": WALL_S})
    files["key"] = key
    files["run.py"] = _RUNNER
    python = str(getattr(sandbox, "python", None) or "python3")
    res = sandbox.run([python, "run.py"], files=files, timeout_s=timeout_s, memory_mb=1024,
                      env={"OMP_NUM_THREADS": "1"}, collect=["out.json"])  # fmt: skip
    if res.timed_out or res.returncode != 0 or "out.json" not in res.files:
        why = (
            "the batch timed out"
            if res.timed_out
            else f"exit {res.returncode}: {res.stderr[-300:]}"
        )
        return _failed(batches, why, res.timed_out)
    out = res.files["out.json"]
    try:
        signed = json.loads(out if isinstance(out, str) else out.decode())
        payload, mac = signed["payload"], signed["mac"]
        ok = (
            isinstance(payload, str)
            and isinstance(mac, str)
            and hmac.compare_digest(mac, mac_of(key, payload))
        )
    except (ValueError, TypeError, KeyError):
        ok = False
    if not ok:
        return _failed(
            batches,
            "the runner's records fail their signature check (out.json was rewritten)",
            False,
        )
    records = json.loads(payload)
    if len(records) != len(batches) or any(
        len(r) != len(b["calls"]) for r, b in zip(records, batches, strict=True)
    ):
        return _failed(batches, "the runner's records do not match the request", False)
    return list(records)


def _failed(batches: list[dict[str, Any]], why: str, timed_out: bool) -> list[list[dict[str, Any]]]:
    """Every call of every batch failed with ``why`` (a batch that cannot be trusted)."""
    return [[{"ok": False, "result": None, "error": why, "seconds": 0.0, "stdout_bytes": 0,
              "timed_out": timed_out} for _ in b["calls"]] for b in batches]  # fmt: skip


def within_limits(rec: dict[str, Any]) -> bool:
    return (
        bool(rec.get("ok"))
        and rec.get("seconds", 0.0) <= SOFT_S
        and rec.get("stdout_bytes", 0) <= MAX_STDOUT
    )


def build_rewards(
    tool: Any, instances: list[dict[str, Any]], records: list[dict[str, Any]] | None
) -> dict[str, Any]:
    """The three axes of one build rollout from its call ``records`` on ``instances``
    (``None``: the tool was not run because its schema failed to name a callable)."""
    ok, why = schema_check(tool)
    if records is None:
        records = [{"ok": False, "error": why or "not run"} for _ in instances]
    code = [within_limits(r) for r in records]
    outcome = [
        bool(r.get("ok")) and verify(r.get("result"), i["answer"])
        for r, i in zip(records, instances, strict=True)
    ]
    first_bad = next(((r, i) for r, i in zip(records, instances, strict=True) if not r.get("ok") or not verify(r.get("result"), i["answer"])), None)  # fmt: skip
    out: dict[str, Any] = {
        "schema": 1.0 if ok else 0.0,
        "code": sum(code) / max(len(code), 1),
        "outcome": sum(outcome) / max(len(outcome), 1),
        "schema_error": why,
    }
    out["passed"] = out["schema"] == 1.0 and out["code"] == 1.0 and out["outcome"] == 1.0
    if first_bad is not None:
        r, i = first_bad
        out["first_failure"] = {"question": i["question"], "expected": i["answer"],
                                "got": r.get("result"), "error": r.get("error")}  # fmt: skip
    slow = [r for r in records if r.get("ok") and not within_limits(r)]
    if slow:
        out["limits"] = (
            f"{len(slow)} call(s) over the soft limits ({SOFT_S:g} s of CPU, {MAX_STDOUT} bytes printed)"
        )
    return out


def tool_batch(tool: dict[str, Any], instances: list[dict[str, Any]]) -> dict[str, Any]:
    """The sandbox request that runs ``tool`` on each instance's values, positionally."""
    return {"code": tool["code"], "name": tool["name"],
            "calls": [{"args": list(i["args"].values())} for i in instances]}  # fmt: skip


def call_schema(call: Any, pool: dict[str, dict[str, Any]]) -> tuple[bool, str]:
    """Schema axis of a use rollout: a pool tool, and arguments valid under its schema."""
    from jsonschema import Draft202012Validator

    if not isinstance(call, dict) or not isinstance(call.get("name"), str):
        return False, "no function call"
    tool = pool.get(call["name"])
    if tool is None:
        return False, f"no tool {call['name']!r} in the pool"
    args = call.get("arguments")
    if not isinstance(args, dict):
        return False, "arguments is not a JSON object"
    errors = sorted(Draft202012Validator(tool["parameters"]).iter_errors(args), key=str)
    if errors:
        return False, f"arguments do not match {call['name']}'s schema: {errors[0].message}"[:300]
    return True, ""


def use_rewards(
    call: Any, pool: dict[str, dict[str, Any]], expected: Any, record: dict[str, Any] | None
) -> dict[str, Any]:
    """The three axes of one use rollout (``record``: the sandboxed call; None if it could
    not run)."""
    if (
        isinstance(call, dict) and "answer" in call and "name" not in call
    ):  # answered without a tool
        return {"schema": 0.0, "code": 0.0, "outcome": 1.0 if verify(call["answer"], expected) else 0.0,
                "schema_error": "no function call", "error": None}  # fmt: skip
    ok, why = call_schema(call, pool)
    ran = record is not None and within_limits(record)
    right = record is not None and bool(record.get("ok")) and verify(record.get("result"), expected)
    return {"schema": 1.0 if ok else 0.0, "code": 1.0 if ran else 0.0, "outcome": 1.0 if right else 0.0,
            "schema_error": why, "error": None if record is None else record.get("error")}  # fmt: skip
