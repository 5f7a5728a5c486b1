"""Calling an LLM-written tool on arguments, inside the sandbox (the code is untrusted).

A tool is Python source defining a function ``name``; a request asks for several calls of
it (positional ``args`` or keyword ``kwargs``) and gets one record per call: ``ok`` (it
returned a JSON value), ``result``, ``error`` (the exception, or why the value is not
JSON), ``seconds``, ``stdout_bytes`` and ``timed_out``. Each call has a hard limit
(``hard_s``, by ``SIGALRM``: an endless loop fails its own call, not the batch); the
caller judges soft limits (time, output) from the numbers. The module defining the tool
runs once per request; a tool that fails to import fails every call with that error.

Run in the sandbox as ``run_request()`` (reads ``request.json``, writes ``out.json``).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import signal
import time
from typing import Any

MAX_RESULT_CHARS = 100_000


def json_kind(value: Any) -> str | None:
    """The JSON Schema type of a Python value (``"integer"``, ``"array"``...; a bool is a
    ``"boolean"``, a tuple an ``"array"``); None for a value JSON has no type for."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return None


class _CallTimeout(Exception):
    pass


def _alarm(signum: int, frame: Any) -> None:
    raise _CallTimeout()


def _json_value(value: Any) -> tuple[bool, str | None]:
    """Whether ``value`` is plain JSON (no NaN/inf, string keys, not too large)."""
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as e:
        return False, f"the result is not a JSON value: {type(value).__name__} ({e})"[:300]
    if len(text) > MAX_RESULT_CHARS:
        return False, f"the result is {len(text)} characters of JSON (at most {MAX_RESULT_CHARS})"
    return True, None


def call_tool(
    code: str, name: str, calls: list[dict[str, Any]], hard_s: float = 2.0
) -> list[dict[str, Any]]:
    """One record per call (see the module doc)."""
    namespace: dict[str, Any] = {"__name__": "tool", "math": math}
    sink = io.StringIO()
    try:
        with contextlib.redirect_stdout(sink):
            exec(compile(code, "<tool>", "exec"), namespace)  # noqa: S102  # trusted: runs inside the sandbox (shipped by package_files); the parent never calls it on candidate code
        fn = namespace.get(name)
        if not callable(fn):
            raise NameError(f"the code defines no function {name!r}")
    except BaseException as e:  # noqa: BLE001 - any failure of untrusted code is a result
        err = f"{type(e).__name__}: {e}"[:300]
        return [{"ok": False, "result": None, "error": err, "seconds": 0.0, "stdout_bytes": 0,
                 "timed_out": False} for _ in calls]  # fmt: skip
    out = []
    old = signal.signal(signal.SIGALRM, _alarm)
    try:
        for call in calls:
            sink = io.StringIO()
            rec: dict[str, Any] = {"ok": False, "result": None, "error": None, "timed_out": False}
            start = time.perf_counter()
            try:
                signal.setitimer(signal.ITIMER_REAL, hard_s)
                with contextlib.redirect_stdout(sink):
                    value = fn(*(call.get("args") or []), **(call.get("kwargs") or {}))
                signal.setitimer(signal.ITIMER_REAL, 0)
                ok, why = _json_value(value)
                rec.update(ok=ok, result=value if ok else None, error=why)
            except _CallTimeout:
                rec.update(error=f"timed out after {hard_s:g} s", timed_out=True)
            except BaseException as e:  # noqa: BLE001
                signal.setitimer(signal.ITIMER_REAL, 0)
                rec["error"] = f"{type(e).__name__}: {e}"[:300]
            rec["seconds"] = round(time.perf_counter() - start, 6)
            rec["stdout_bytes"] = len(sink.getvalue().encode("utf-8", "replace"))
            out.append(rec)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return out


def run_request(path: str = "request.json", out_path: str = "out.json") -> None:
    """Sandbox entry: ``{"tools": [{"code", "name", "calls"}], "hard_s"}`` -> a list (one per
    tool) of call records in ``out_path``."""
    with open(path) as f:
        req = json.load(f)
    hard = float(req.get("hard_s", 2.0))
    out = [call_tool(t["code"], t["name"], t["calls"], hard) for t in req["tools"]]
    with open(out_path, "w") as f:
        json.dump(out, f, separators=(",", ":"))
