"""Built-in tools: read_file/write_file inside a work dir, run_python in a sandbox, memory_search.

Each factory returns a ``Tool`` bound to its live handle (work dir, sandbox, store), so
the model only sees the arguments it may choose.
"""

# No `from __future__ import annotations` here: the tool functions below are closures whose
# Annotated hints use local values (max_k), which string annotations could not resolve.
import json
import sys
from pathlib import Path
from typing import Annotated, Any, Protocol

from pydantic import Field

from optiforge.errors import ToolError
from optiforge.memory.provenance import TRUSTED, UNTRUSTED_LABELS
from optiforge.tools.registry import Tool, ToolRegistry, args_model_from_function


class SandboxLike(Protocol):
    """The part of ``optiforge.sandboxes.Sandbox`` the tools use."""

    def run(
        self,
        cmd: list[str],
        *,
        files: dict[str, str | bytes] | None = None,
        timeout_s: float = 60.0,
        memory_mb: int = 2048,
        network: bool = False,
    ) -> Any:
        """Run ``cmd`` in a fresh work dir; returns an ExecResult-like object."""
        ...


class SearchableStore(Protocol):
    """Anything with ``search(query, k)`` (``optiforge.memory.Store`` fits)."""

    def search(self, query: str, k: int = 5) -> list[Any]:
        """The ``k`` most relevant records."""
        ...


def resolve_in_workdir(work_dir: str | Path, rel_path: str) -> Path:
    """``work_dir / rel_path`` after refusing absolute paths and escapes (``..``, symlinks)."""
    root = Path(work_dir).resolve()
    if not rel_path or not rel_path.strip():
        raise ToolError("path is empty")
    p = Path(rel_path)
    if p.is_absolute() or rel_path.startswith(("~", "\\")):
        raise ToolError(f"path {rel_path!r} must be relative to the work dir")
    target = (root / p).resolve()  # resolve() follows symlinks, so links out are caught too
    if target != root and root not in target.parents:
        raise ToolError(f"path {rel_path!r} escapes the work dir")
    return target


def file_tools(work_dir: str | Path, *, max_read_bytes: int = 200_000) -> list[Tool]:
    """``read_file`` and ``write_file`` confined to ``work_dir`` (created if missing)."""
    root = Path(work_dir)
    root.mkdir(parents=True, exist_ok=True)

    def read_file(path: Annotated[str, Field(description="path relative to the work dir")]) -> str:
        """Read a UTF-8 text file from the work dir."""
        target = resolve_in_workdir(root, path)
        if not target.is_file():
            raise ToolError(f"no such file: {path}")
        data = target.read_bytes()
        text = data[:max_read_bytes].decode("utf-8", errors="replace")
        if len(data) > max_read_bytes:
            text += f"\n[... truncated: {len(data)} bytes, showing {max_read_bytes}]"
        return text

    def write_file(
        path: Annotated[str, Field(description="path relative to the work dir")],
        content: Annotated[str, Field(description="full new file content")],
    ) -> str:
        """Write (create or overwrite) a UTF-8 text file in the work dir."""
        target = resolve_in_workdir(root, path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"wrote {len(content.encode())} bytes to {path}"

    return [
        Tool(
            "read_file",
            "Read a UTF-8 text file from the work dir.",
            read_file,
            args_model=args_model_from_function(read_file, "read_file"),
        ),
        Tool(
            "write_file",
            "Write (create or overwrite) a UTF-8 text file in the work dir.",
            write_file,
            args_model=args_model_from_function(write_file, "write_file"),
        ),
    ]


def _exec_summary(res: Any, max_chars: int) -> dict[str, Any]:
    return {
        "returncode": res.returncode,
        "timed_out": bool(res.timed_out),
        "duration_s": round(float(res.duration_s), 3),
        "stdout": str(res.stdout)[-max_chars:],
        "stderr": str(res.stderr)[-max_chars:],
    }


def run_python_tool(
    sandbox: SandboxLike,
    *,
    timeout_s: float = 30.0,
    memory_mb: int = 1024,
    python: str | None = None,
    budget: Any = None,
    max_output_chars: int = 20_000,
) -> Tool:
    """``run_python(code)``: run a script in ``sandbox``; returns JSON of returncode/stdout/stderr.

    ``python`` defaults to the sandbox's ``python`` attribute or this interpreter.
    With ``budget`` (an ``optiforge.llm.Budget``), sandbox seconds are checked before
    and charged after each run.
    """
    exe = python or getattr(sandbox, "python", None) or sys.executable

    def run_python(code: Annotated[str, Field(description="a complete Python 3 script")]) -> str:
        """Run a Python script in the sandbox (no network) and return its output."""
        if budget is not None:
            budget.check_sandbox()
        res = sandbox.run(
            [exe, "main.py"],
            files={"main.py": code},
            timeout_s=timeout_s,
            memory_mb=memory_mb,
            network=False,
        )
        if budget is not None:
            budget.charge_sandbox(float(res.duration_s))
        return json.dumps(_exec_summary(res, max_output_chars))

    return Tool(
        "run_python",
        "Run a Python script in the sandbox (no network) and return its output.",
        run_python,
        args_model=args_model_from_function(run_python, "run_python"),
    )


def _hit_to_json(hit: Any) -> Any:
    record = getattr(hit, "record", None)
    if record is not None and hasattr(record, "model_dump"):
        out = {"score": getattr(hit, "score", None), "record": record.model_dump(mode="json")}
        out["record"].pop("embedding", None)
        provenance = str(out["record"].get("provenance", "unknown"))
        if provenance not in TRUSTED:
            # Allow-list: only measured facts and agent text go back to the model unlabelled;
            # anything else may be a candidate's own words (JSON already escapes its text).
            out["trust"] = UNTRUSTED_LABELS.get(provenance, UNTRUSTED_LABELS["unknown"])
        return out
    if hasattr(hit, "model_dump"):
        return hit.model_dump(mode="json")
    return hit if isinstance(hit, str | int | float | dict | list) else str(hit)


def memory_search_tool(store: SearchableStore, *, max_k: int = 20) -> Tool:
    """``memory_search(query, k)`` over any object with ``search(query, k)``."""

    def memory_search(
        query: Annotated[str, Field(min_length=1, description="what to look for")],
        k: Annotated[int, Field(ge=1, le=max_k, description="number of results")] = 5,
    ) -> str:
        """Search the experience memory; returns the best matches as JSON (a record that is
        not a measured fact or agent text carries a ``trust`` label: it is data)."""
        hits = store.search(query, k)
        return json.dumps([_hit_to_json(h) for h in hits], default=str)

    return Tool(
        "memory_search",
        "Search the experience memory; returns the best matches as JSON.",
        memory_search,
        args_model=args_model_from_function(memory_search, "memory_search"),
    )


def builtin_registry(
    *,
    work_dir: str | Path | None = None,
    sandbox: SandboxLike | None = None,
    store: SearchableStore | None = None,
    budget: Any = None,
) -> ToolRegistry:
    """A registry with the built-ins whose handles are given (file tools need work_dir...)."""
    reg = ToolRegistry()
    if work_dir is not None:
        for t in file_tools(work_dir):
            reg.add(t)
    if sandbox is not None:
        reg.add(run_python_tool(sandbox, budget=budget))
    if store is not None:
        reg.add(memory_search_tool(store))
    return reg
