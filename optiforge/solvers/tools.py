"""Calling an LLM-written tool on arguments, inside the sandbox (the code is untrusted).

A tool is Python source defining a function ``name``; a request asks for several calls of
it (positional ``args`` or keyword ``kwargs``) and gets one record per call: ``ok`` (it
returned a JSON value), ``result``, ``error`` (the exception, or why the value is not
JSON), ``seconds`` (CPU seconds of the call's process tree), ``wall_s``, ``stdout_bytes``
and ``timed_out``. The caller judges soft limits (time, output) from the numbers.

Every number is measured outside the tool's process, never reported by it: the runner
(``run_request``, trusted code) forks a **call runner** before anything else, and the call
runner forks one fresh child per call. The child closes every inherited fd, points its
fds 1 and 2 at a pipe the call runner counts (so ``os.write(1, ...)`` counts too), execs
the tool's module and calls it; the call runner reads the child's CPU time from the
kernel (``RUSAGE_CHILDREN`` around the call, orphans reaped as a subreaper and killed
first, so work handed to a grandchild counts; where ``/proc/<pid>/task/*/children`` is
missing, only orphans still in the call's process group are found), and cuts a call at ``hard_s`` seconds of
CPU (``ITIMER_PROF``, ``RLIMIT_CPU`` behind it) or ``wall_s`` seconds of wall time. Both trusted processes are not
dumpable (another process of the same uid cannot read their memory or open their fds).
The records are signed with a key the runner reads from ``key`` and deletes before any
tool code runs (the call runner was forked before it, so no child holds the key): a tool
that rewrites ``out.json`` breaks the signature and the caller rejects the batch.

Run in the sandbox as ``run_request()`` (reads ``request.json`` and ``key``, writes
``out.json``: ``{"payload": records as JSON text, "mac": HMAC-SHA256 hex}``).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import hmac
import json
import math
import os
import resource
import selectors
import signal
import sys
import time
import traceback
from typing import Any

MAX_RESULT_CHARS = 100_000
_PR_SET_DUMPABLE, _PR_SET_CHILD_SUBREAPER = 4, 36
_RESULT_FD = 3


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


def _json_value(value: Any) -> tuple[bool, str | None]:
    """Whether ``value`` is plain JSON (no NaN/inf, string keys, not too large)."""
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as e:
        return False, f"the result is not a JSON value: {type(value).__name__} ({e})"[:300]
    if len(text) > MAX_RESULT_CHARS:
        return False, f"the result is {len(text)} characters of JSON (at most {MAX_RESULT_CHARS})"
    return True, None


def mac_of(key: bytes, payload: str) -> str:
    """The signature the runner puts on its records (and the caller checks)."""
    return hmac.new(key, payload.encode(), hashlib.sha256).hexdigest()


def _prctl(option: int, value: int) -> None:
    """Best effort: without libc's prctl the protections it adds are missing, not faked."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def _child(
    code: str, name: str, call: dict[str, Any], hard_s: float, out_w: int, res_w: int
) -> None:
    """The forked child of one call: isolate its fds, run the tool, write the outcome to fd 3."""
    try:
        with contextlib.suppress(OSError):  # its own group: killpg reaches its descendants
            os.setpgid(0, 0)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out_w, 1)
        os.dup2(out_w, 2)
        os.dup2(res_w, _RESULT_FD)
        os.closerange(_RESULT_FD + 1, 1 << 16)  # the call runner's pipes above all
        # the hard limit to the tick (SIGPROF); RLIMIT_CPU (whole seconds) if the tool
        # disarms the timer
        cpu = math.ceil(hard_s)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        signal.signal(signal.SIGPROF, signal.SIG_DFL)
        signal.setitimer(signal.ITIMER_PROF, hard_s)
        namespace: dict[str, Any] = {"__name__": "tool", "math": math}
        try:
            exec(compile(code, "<tool>", "exec"), namespace)  # noqa: S102  # trusted: runs inside the sandbox (shipped by package_files); the parent never calls it on candidate code
            fn = namespace.get(name)
            if not callable(fn):
                raise NameError(f"the code defines no function {name!r}")
            value = fn(*(call.get("args") or []), **(call.get("kwargs") or {}))
            ok, why = _json_value(value)
            msg = (
                b"V" + json.dumps(value, allow_nan=False).encode()
                if ok
                else b"E" + str(why).encode()
            )
        except BaseException as e:  # noqa: BLE001 - any failure of untrusted code is a result
            msg = b"E" + f"{type(e).__name__}: {e}"[:300].encode("utf-8", "replace")
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        view = memoryview(msg)
        while view:
            view = view[os.write(_RESULT_FD, view) :]
    finally:
        os._exit(0)


def _children() -> list[int]:
    """Pids of this process's live children (orphans of a call land here: a subreaper)."""
    out: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{tid}/children") as f:
                out += [int(p) for p in f.read().split()]
    return out


def _reap_all(pid: int) -> None:
    """Kill what is left of a call (its process group, then every orphan) and reap it."""
    for _ in range(1000):
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        kids = _children()
        for k in kids:
            with contextlib.suppress(OSError):
                os.kill(k, signal.SIGKILL)
        for k in kids:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(k, 0)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
        if not kids:
            return


def _cpu_children() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def measure_call(
    code: str, name: str, call: dict[str, Any], hard_s: float, wall_s: float
) -> dict[str, Any]:
    """Run one call in a fresh child and measure it from outside (see the module doc)."""
    out_r, out_w = os.pipe()
    res_r, res_w = os.pipe()
    cpu0, t0 = _cpu_children(), time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(out_r)
        os.close(res_r)
        _child(code, name, call, hard_s, out_w, res_w)
    os.close(out_w)
    os.close(res_w)
    pidfd = os.pidfd_open(pid)
    sel = selectors.DefaultSelector()
    for fd in (out_r, res_r, pidfd):
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    printed, result, cut_wall, exited, drains = 0, bytearray(), False, False, 0
    cap = MAX_RESULT_CHARS + 16
    while True:
        left = wall_s - (time.monotonic() - t0)
        if exited:
            left = 0.0  # the child is gone: take what its pipes hold, never wait on orphans
        elif left <= 0:
            cut_wall = True
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            left = 0.0
        events = sel.select(max(left, 0.0))
        got = False
        for key, _ in events:
            fd = int(key.fd)
            if fd == pidfd:
                exited = True
                continue
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not data:
                sel.unregister(fd)
                continue
            got = True
            if fd == out_r:
                printed += len(data)
            elif len(result) <= cap:
                result += data[: cap + 1 - len(result)]
        if exited or cut_wall:
            drains += 1
            # what the child left in its pipes, bounded: an orphan may keep writing
            if not got or drains > 64:
                break
    _, status, _ru = os.wait4(pid, 0)
    _reap_all(pid)
    cpu, wall = _cpu_children() - cpu0, time.monotonic() - t0
    for fd in (out_r, res_r, pidfd):
        os.close(fd)
    sel.close()
    rec: dict[str, Any] = {"ok": False, "result": None, "error": None, "timed_out": False,
                           "seconds": round(cpu, 6), "wall_s": round(wall, 6), "stdout_bytes": printed}  # fmt: skip
    sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else 0
    if cut_wall:
        rec.update(error=f"timed out after {wall_s:g} s of wall time", timed_out=True)
    elif sig == signal.SIGPROF or (
        sig in (signal.SIGXCPU, signal.SIGKILL) and cpu >= math.ceil(hard_s) - 0.25
    ):
        rec.update(error=f"timed out: over {hard_s:g} s of CPU", timed_out=True)
    elif result[:1] == b"V" and len(result) <= cap:
        try:
            value = json.loads(bytes(result[1:]), parse_constant=_no_constant)
            rec.update(ok=True, result=value)
        except ValueError as e:
            rec["error"] = f"the result is not a JSON value: {e}"[:300]
    elif result[:1] == b"E":
        rec["error"] = bytes(result[1:301]).decode("utf-8", "replace")
    else:
        how = f"signal {sig}" if sig else f"exit {os.WEXITSTATUS(status)}"
        rec["error"] = f"the call ended without a result ({how})"
    return rec


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _call_runner(req_r: int, rec_w: int) -> None:
    """The forked call runner: one JSON line in (a call), one record line out, until EOF."""
    try:
        _prctl(_PR_SET_DUMPABLE, 0)
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        with os.fdopen(req_r, "rb") as requests, os.fdopen(rec_w, "wb") as records:
            for line in requests:
                job = json.loads(line)
                rec = measure_call(
                    job["code"], job["name"], job["call"], job["hard_s"], job["wall_s"]
                )
                records.write(json.dumps(rec, separators=(",", ":")).encode() + b"\n")
                records.flush()
    except BaseException:  # noqa: BLE001 - say why on stderr; the runner then fails the batch
        traceback.print_exc()
    finally:
        os._exit(0)


def run_request(
    path: str = "request.json", out_path: str = "out.json", key_path: str = "key"
) -> None:
    """Sandbox entry: ``{"tools": [{"code", "name", "calls"}], "hard_s", "wall_s"}`` -> a
    list (one per tool) of call records, signed, in ``out_path`` (see the module doc)."""
    _prctl(_PR_SET_DUMPABLE, 0)
    with open(path) as f:
        req = json.load(f)
    hard = float(req.get("hard_s", 2.0))
    wall = float(req.get("wall_s", 5 * hard))
    req_r, req_w = os.pipe()
    rec_r, rec_w = os.pipe()
    pid = os.fork()  # before the key is read: no process that runs tool code holds it
    if pid == 0:
        os.close(req_w)
        os.close(rec_r)
        _call_runner(req_r, rec_w)
    os.close(req_r)
    os.close(rec_w)
    with open(key_path, "rb") as f:
        key = f.read()
    os.unlink(key_path)
    out: list[list[dict[str, Any]]] = []
    with os.fdopen(req_w, "wb") as jobs, os.fdopen(rec_r, "rb") as records:
        for t in req["tools"]:
            recs = []
            for call in t["calls"]:
                job = {
                    "code": t["code"],
                    "name": t["name"],
                    "call": call,
                    "hard_s": hard,
                    "wall_s": wall,
                }
                jobs.write(json.dumps(job).encode() + b"\n")
                jobs.flush()
                line = records.readline()
                if not line:
                    raise RuntimeError("the call runner died (killed by a tool?)")
                recs.append(json.loads(line))
            out.append(recs)
    os.waitpid(pid, 0)
    payload = json.dumps(out, separators=(",", ":"))
    with open(out_path, "w") as f:
        json.dump({"payload": payload, "mac": mac_of(key, payload)}, f)
