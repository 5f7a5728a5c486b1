"""Run records: ``runs/<id>/manifest.json`` plus an append-only ``events.jsonl``.

Each event is one ``os.write`` of one JSON line on an ``O_APPEND`` descriptor, so it
reaches the OS as it happens: a ``kill -9`` loses at most the event in flight, and
readers skip a torn last line. Components that produce events (LLM calls, tool calls,
sandbox runs, evaluations) take any object with an ``event(kind, **fields)`` method: the
``Tracer`` protocol below. ``NullTracer`` drops everything.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from optiforge.errors import RunRecordError

MANIFEST = "manifest.json"
EVENTS = "events.jsonl"
_VERSIONED = ("optiforge", "torch", "triton", "litellm", "langgraph", "botorch", "cvxpy")


@runtime_checkable
class Tracer(Protocol):
    """Receives one event per LLM call, tool call, sandbox run, evaluation..."""

    def event(self, kind: str, **fields: Any) -> None:
        """Record an event of ``kind`` (e.g. ``llm_call``) with JSON-serialisable fields."""
        ...


class NullTracer:
    """A tracer that records nothing."""

    def event(self, kind: str, **fields: Any) -> None:
        return None


class ListTracer:
    """A tracer that keeps events in memory (tests, nested runs)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def event(self, kind: str, **fields: Any) -> None:
        self.events.append({"kind": kind, **fields})

    def of(self, kind: str) -> list[dict[str, Any]]:
        """Events of one kind."""
        return [e for e in self.events if e["kind"] == kind]


class TeeTracer:
    """Every event to ``primary`` and, labelled with ``labels``, to ``secondary``.

    A pipeline's node runs in its own run directory (a complete run: ``report``,
    ``--resume`` work on it) and its events also reach the pipeline's one log, tagged
    with the node (``node="discover"``).
    """

    def __init__(self, primary: Tracer, secondary: Tracer, **labels: Any) -> None:
        self.primary = primary
        self.secondary = secondary
        self.labels = labels

    @property
    def run_dir(self) -> Path | None:
        return getattr(self.primary, "run_dir", None)

    def worker_tracer(self) -> Any:
        return self.primary.worker_tracer()  # type: ignore[attr-defined]

    def event(self, kind: str, **fields: Any) -> None:
        self.primary.event(kind, **fields)
        self.secondary.event(kind, **{**fields, **self.labels})


class FileTracer:
    """A picklable tracer appending to an ``events.jsonl`` (for executor workers).

    Holds only the path; each event is one ``O_APPEND`` write, so lines from several
    processes interleave whole. Events carry the writer's ``pid`` instead of a ``seq``.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._tee: tuple[str, dict[str, Any]] | None | bool = False  # False: not read yet

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path, "_tee": False}  # each process reads the tee file itself

    def _tee_target(self) -> tuple[str, dict[str, Any]] | None:
        """``(events path, labels)`` from ``TEE`` beside the log: a pipeline node's events
        also go to the pipeline's one log, from worker processes too."""
        if self._tee is False:
            try:
                spec = json.loads((Path(self.path).parent / TEE).read_text())
                self._tee = (str(spec["path"]), dict(spec.get("labels") or {}))
            except (OSError, ValueError, KeyError, TypeError):
                self._tee = None
        return self._tee  # type: ignore[return-value]

    def event(self, kind: str, **fields: Any) -> None:
        record = {"ts": time.time(), "pid": os.getpid(), "kind": kind, **fields}
        _append(self.path, to_json_line(record))
        tee = self._tee_target()
        if tee is not None:
            _append(tee[0], to_json_line({**record, **tee[1]}))


TEE = "tee.json"
"""A run directory's pointer to a second event log (``{"path": ..., "labels": {...}}``)."""


def _append(path: str, line: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def _json_default(obj: Any) -> Any:
    if hasattr(obj, "model_dump"):
        return obj.model_dump(mode="json")
    if isinstance(obj, Path):
        return str(obj)
    if isinstance(obj, bytes):
        return obj.decode("utf-8", "replace")
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if isinstance(obj, set | frozenset):
        return sorted(obj)
    return repr(obj)


def to_json_line(record: dict[str, Any]) -> str:
    """Serialise one record as a single JSON line (non-JSON values become strings)."""
    return json.dumps(record, default=_json_default, separators=(",", ":")) + "\n"


def git_sha(path: Path | None = None) -> str | None:
    """The git commit of the checkout holding ``path`` (None outside a checkout)."""
    where = path or Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(where), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def versions() -> dict[str, str]:
    """Versions of Python and of the libraries a result depends on."""
    found = {"python": platform.python_version()}
    for name in _VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def new_run_id(prefix: str = "run") -> str:
    """A sortable, unique run id: ``<prefix>-YYYYmmdd-HHMMSS-<6 hex>``."""
    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    return f"{prefix}-{stamp}-{uuid.uuid4().hex[:6]}"


def _write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, default=_json_default) + "\n")
    os.replace(tmp, path)


class RunRecorder:
    """Owns one run directory: its manifest and its event log. Thread-safe."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._fd: int | None = os.open(
            self.run_dir / EVENTS, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644
        )
        self._seq = sum(1 for _ in iter_events(self.run_dir))

    @property
    def id(self) -> str:
        return self.run_dir.name

    @classmethod
    def create(
        cls,
        root: str | Path = "runs",
        *,
        kind: str = "run",
        config: dict[str, Any] | None = None,
        seed: int | None = None,
        provider: str | None = None,
        run_dir: str | Path | None = None,
    ) -> RunRecorder:
        """Make ``root/<new id>/`` (or ``run_dir``) and write its manifest."""
        target = Path(run_dir) if run_dir else Path(root) / new_run_id(kind)
        if (target / MANIFEST).exists():
            raise RunRecordError(
                f"{target} already holds a run; use --resume {target} or a new --out"
            )
        rec = cls(target)
        manifest = {
            "id": rec.id,
            "kind": kind,
            "status": "running",
            "started_at": _dt.datetime.now(_dt.UTC).isoformat(),
            "argv": sys.argv,
            "config": config or {},
            "seed": seed,
            "provider": provider or "offline",
            "git_sha": git_sha(),
            "versions": versions(),
            # results depend on the BLAS/OpenMP thread count (the CLI pins 1 by default)
            "threads": {v: os.environ.get(v) for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")},
            "host": platform.node(),
            "platform": platform.platform(),
        }
        _write_json_atomic(target / MANIFEST, manifest)
        rec.event("run_started", run_id=rec.id)
        return rec

    @classmethod
    def open(cls, run_dir: str | Path) -> RunRecorder:
        """Re-open an existing run directory (``--resume``); events append."""
        path = Path(run_dir)
        if not (path / MANIFEST).is_file():
            raise RunRecordError(f"{path} is not a run directory (no {MANIFEST})")
        rec = cls(path)
        rec.update_manifest(status="running")
        rec.event("run_resumed", run_id=rec.id)
        return rec

    def manifest(self) -> dict[str, Any]:
        return read_manifest(self.run_dir)

    def worker_tracer(self) -> FileTracer:
        """A picklable tracer writing to this run's event log from another process."""
        return FileTracer(self.run_dir / EVENTS)

    def update_manifest(self, **fields: Any) -> None:
        """Merge ``fields`` into the manifest (atomic replace)."""
        with self._lock:
            data = read_manifest(self.run_dir)
            data.update(fields)
            _write_json_atomic(self.run_dir / MANIFEST, data)

    def event(self, kind: str, **fields: Any) -> None:
        """Append one event; it is in the OS's hands when this returns."""
        with self._lock:
            if self._fd is None:
                raise RunRecordError(f"run {self.id} is closed")
            self._seq += 1
            line = to_json_line({"seq": self._seq, "ts": time.time(), "kind": kind, **fields})
            os.write(self._fd, line.encode())

    def finish(self, status: str = "finished", **fields: Any) -> None:
        """Mark the run finished (or ``failed``/``interrupted``) and close the log."""
        if self._fd is None:
            return
        self.event("run_finished", status=status)
        self.update_manifest(
            status=status, finished_at=_dt.datetime.now(_dt.UTC).isoformat(), **fields
        )
        self.close()

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> RunRecorder:
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.finish("finished")
        elif issubclass(exc_type, KeyboardInterrupt):
            self.finish("interrupted")
        else:
            self.finish("failed", error=f"{exc_type.__name__}: {exc}")


def read_manifest(run_dir: str | Path) -> dict[str, Any]:
    """The manifest of a run directory."""
    path = Path(run_dir) / MANIFEST
    try:
        return json.loads(path.read_text())
    except FileNotFoundError as err:
        raise RunRecordError(f"{run_dir} is not a run directory (no {MANIFEST})") from err
    except json.JSONDecodeError as err:
        raise RunRecordError(f"{path} is not valid JSON: {err}") from err


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """The JSON objects of a JSONL file, in order ([] when there is none); lines that do not
    parse (the torn last line of a killed run) are skipped."""
    p = Path(path)
    if not p.is_file():
        return []
    rows = []
    for line in p.read_text(errors="replace").splitlines():
        try:
            row = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(row, dict):
            rows.append(row)
    return rows


def iter_events(run_dir: str | Path, kind: str | None = None) -> Iterator[dict[str, Any]]:
    """Events of a run in order; a torn last line (crash mid-write) is skipped."""
    path = Path(run_dir) / EVENTS
    if not path.exists():
        return
    with path.open() as fh:
        for line in fh:
            if not line.endswith("\n"):
                break  # the event in flight when the process died
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:
                continue
            if kind is None or ev.get("kind") == kind:
                yield ev
