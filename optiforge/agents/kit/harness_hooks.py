"""Code hooks: new control logic a harness patch may carry, checked and run safely.

A code hook is a small Python function ``def hook(obs): ...`` installed at one of the
harness's extension points (``HOOK_POINTS``). The agent that runs the harness calls it
with ``obs`` (plain data: the instruction, the turns so far with their commands, exit
codes and output tails, the step, the limits) and reads its return value: ``None`` (do
nothing) or a string, whose meaning depends on the point:

- ``before_action``: a note appended to the message the model reads before it acts;
- ``after_observation``: a note appended to a command's observation (it stays in history);
- ``before_submit``: refuses the submit; the string is shown to the model instead.

Safety, in two layers (the same split as the project's other candidate code: a static
allow-list, then the sandbox):

1. ``check_hook_source`` (an AST allow-list, run when a patch is applied, so a bad hook is
   a ``ConfigError`` before any gate runs it): one top-level ``def hook(obs)`` (a docstring
   allowed), no imports, no classes, lambdas, ``while``, ``try``, ``with``, ``global``,
   ``del``, no name or attribute starting with ``_``, no names but ``obs``, the function's
   own locals and a few pure builtins (``SAFE_BUILTINS``), and attribute access only to
   the string/dict read methods in ``SAFE_METHODS`` (so no ``open``, ``getattr``, ``eval``,
   ``__class__`` walks, no I/O of any kind); ``*``/``**``/shifts are not in the grammar
   (no one-line memory bombs);
2. ``run_code_hook`` runs it in a fresh sandbox run (``python -I -S``, the builtins cut
   to ``SAFE_BUILTINS``, a memory cap and a timeout), never in this process: the parent
   only reads a JSON report after a random mark. A hook that crashes, times out or returns
   something other than ``None``/``str`` is a no-op for that call; the error is recorded
   in the turn, so the gate sees the harness as it behaves.

Hooks are pure functions of ``obs``, so their results are cached per (source, obs).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import secrets
import threading
from pathlib import Path
from typing import Any, Literal

from optiforge.errors import SandboxError

HookPoint = Literal["before_action", "after_observation", "before_submit"]
HOOK_POINTS: tuple[str, ...] = ("before_action", "after_observation", "before_submit")
SAFE_BUILTINS: frozenset[str] = frozenset(
    {"len", "any", "all", "min", "max", "sum", "sorted", "str", "int", "bool", "enumerate",
     "range", "list", "reversed", "abs", "zip", "dict", "set", "tuple", "isinstance"}
)  # fmt: skip
SAFE_METHODS: frozenset[str] = frozenset(
    {"startswith", "endswith", "lower", "upper", "strip", "lstrip", "rstrip", "split",
     "splitlines", "join", "count", "find", "get", "keys", "values", "items", "append"}
)  # fmt: skip
MAX_SOURCE_CHARS = 4000
MAX_NODES = 600
MAX_NOTE_CHARS = 2000
HOOK_TIMEOUT_S = 10.0
HOOK_MEMORY_MB = 256

_ALLOWED = (
    ast.Module, ast.FunctionDef, ast.arguments, ast.arg, ast.Return, ast.If, ast.For,
    ast.Assign, ast.AugAssign, ast.Expr, ast.Break, ast.Continue, ast.Pass, ast.BoolOp,
    ast.BinOp, ast.UnaryOp, ast.Compare, ast.IfExp, ast.Call, ast.Name, ast.Constant,
    ast.Subscript, ast.Slice, ast.List, ast.Tuple, ast.Dict, ast.ListComp, ast.GeneratorExp,
    ast.comprehension, ast.JoinedStr, ast.FormattedValue, ast.keyword, ast.Attribute,
    ast.Load, ast.Store, ast.And, ast.Or, ast.Add, ast.Sub, ast.Mod, ast.FloorDiv,
    ast.Not, ast.USub, ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In,
    ast.NotIn, ast.Is, ast.IsNot,
)  # fmt: skip


def check_hook_source(source: str) -> None:
    """Raise ``ValueError`` naming the first construct outside the hook grammar (module doc)."""
    if len(source) > MAX_SOURCE_CHARS:
        raise ValueError(f"a code hook has at most {MAX_SOURCE_CHARS} characters")
    try:
        tree = ast.parse(source, mode="exec")
    except SyntaxError as e:
        raise ValueError(f"a code hook does not parse: {e.msg} (line {e.lineno})") from None
    body = list(tree.body)
    if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):  # fmt: skip
        body = body[1:]
    if len(body) != 1 or not isinstance(body[0], ast.FunctionDef) or body[0].name != "hook":
        raise ValueError("a code hook is exactly one top-level `def hook(obs):`")
    fn = body[0]
    a = fn.args
    if (fn.decorator_list or fn.returns or a.posonlyargs or a.kwonlyargs or a.vararg
            or a.kwarg or a.defaults or [x.arg for x in a.args] != ["obs"]):  # fmt: skip
        raise ValueError("a code hook's signature is exactly `def hook(obs):` (no decorators)")
    nodes = list(ast.walk(tree))
    if len(nodes) > MAX_NODES:
        raise ValueError(f"a code hook has at most {MAX_NODES} syntax nodes")
    local = {"obs"} | {
        n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    for n in nodes:
        if not isinstance(n, _ALLOWED):
            raise ValueError(f"a code hook may not use {type(n).__name__} (line {_line(n)})")
        if isinstance(n, ast.FunctionDef) and n is not fn:
            raise ValueError(f"a code hook defines no other function (line {_line(n)})")
        if isinstance(n, ast.Name):
            if n.id.startswith("_"):
                raise ValueError(f"a code hook may not name {n.id!r} (line {_line(n)})")
            if isinstance(n.ctx, ast.Load) and n.id not in local and n.id not in SAFE_BUILTINS:
                raise ValueError(f"a code hook may not use {n.id!r} (line {_line(n)})")
            if isinstance(n.ctx, ast.Store) and n.id in SAFE_BUILTINS:
                raise ValueError(f"a code hook may not rebind {n.id!r} (line {_line(n)})")
        if isinstance(n, ast.Attribute) and (
            n.attr not in SAFE_METHODS or not isinstance(n.ctx, ast.Load)
        ):
            raise ValueError(f"a code hook may not use .{n.attr} (line {_line(n)})")
        if isinstance(n, ast.Constant) and not isinstance(
            n.value, str | int | float | bool | type(None)
        ):
            raise ValueError(f"a code hook may not use a {type(n.value).__name__} constant")
        if isinstance(n, ast.FormattedValue) and n.format_spec is not None:
            raise ValueError(f"a code hook's f-strings take no format spec (line {_line(n)})")
    for n in nodes:  # a method is only ever called, never passed around
        if isinstance(n, ast.Attribute) and not any(
            isinstance(p, ast.Call) and p.func is n for p in nodes
        ):
            raise ValueError(f"a code hook may only call .{n.attr}(...) (line {_line(n)})")


def _line(n: ast.AST) -> int:
    return int(getattr(n, "lineno", 0))


@functools.cache
def _runner() -> str:
    return (Path(__file__).resolve().parent / "hook_runner.py").read_text()


_CACHE: dict[str, tuple[str | None, str | None]] = {}
_LOCK = threading.Lock()
_CACHE_MAX = 50_000


def run_code_hook(source: str, obs: dict[str, Any], sandbox: Any) -> tuple[str | None, str | None]:
    """Run hook ``source`` on ``obs`` in a fresh ``sandbox`` run: (note or None, error or
    None). The source must have passed ``check_hook_source`` (the harness checks it when a
    patch installs it); the runner checks nothing itself, it only cuts the builtins."""
    blob = json.dumps({"source": source, "obs": obs}, sort_keys=True, default=str)
    key = hashlib.sha256(blob.encode()).hexdigest()
    with _LOCK:
        if key in _CACHE:
            return _CACHE[key]
    mark = "@@hook-" + secrets.token_hex(8) + "@@"
    python = str(getattr(sandbox, "python", None) or "python3")
    try:
        res = sandbox.run(
            [python, "-I", "-S", "-c", _runner(), json.dumps(sorted(SAFE_BUILTINS))],
            files={"hook_input.json": blob},
            timeout_s=HOOK_TIMEOUT_S,
            memory_mb=HOOK_MEMORY_MB,
            env={"HOOK_MARK": mark},
        )
    except SandboxError as e:
        return None, f"sandbox: {e}"[:300]  # not cached: the sandbox, not the hook, failed
    report: Any = None
    for line in reversed(res.stdout.splitlines()):
        if line.startswith(mark):
            try:
                report = json.loads(line[len(mark) :])
            except ValueError:
                report = None
            break
    out: tuple[str | None, str | None]
    if res.timed_out:
        out = None, "the hook timed out"
    elif not isinstance(report, dict):
        out = (
            None,
            f"the hook runner gave no report (exit {res.returncode}): "
            + (res.stderr.strip()[-200:]),
        )
    elif report.get("error"):
        out = None, str(report["error"])[:300]
    else:
        note = report.get("note")
        out = (str(note)[:MAX_NOTE_CHARS] if note else None), None
    with _LOCK:
        if len(_CACHE) < _CACHE_MAX:
            _CACHE[key] = out
    return out
