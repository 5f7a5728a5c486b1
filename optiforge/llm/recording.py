"""Request keys, the SQLite response cache and the JSONL cassette (record/replay)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from optiforge.errors import CassetteMiss, ConfigError
from optiforge.llm.types import ProviderReply

# Parameters that change transport, not the answer: left out of the key so a cached or
# recorded answer is reused across API keys, timeouts and retry settings.
_NON_OUTPUT_PARAMS = {"api_key", "timeout", "num_retries", "max_retries", "extra_headers", "stream"}


def request_key(
    model: str,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    schema: type[BaseModel] | None,
    params: dict[str, Any],
) -> str:
    """sha256 hex of canonical JSON of (model, messages, tools, schema json-schema, params)."""
    payload = {
        "model": model,
        "messages": messages,
        "tools": tools or None,
        "schema": schema.model_json_schema() if schema is not None else None,
        "params": {k: v for k, v in sorted(params.items()) if k not in _NON_OUTPUT_PARAMS},
    }
    blob = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _first_user_snippet(messages: list[dict[str, Any]], n: int = 80) -> str:
    for m in messages:
        if m.get("role") == "user":
            content = m.get("content")
            text = content if isinstance(content, str) else json.dumps(content)
            return text[:n]
    return ""


class ResponseCache:
    """SQLite cache of provider replies keyed by ``request_key``; safe across threads."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._conn = sqlite3.connect(str(self.path), check_same_thread=False)
        with self._conn:
            self._conn.execute("PRAGMA journal_mode=WAL")
            self._conn.execute(
                "CREATE TABLE IF NOT EXISTS responses ("
                "key TEXT PRIMARY KEY, model TEXT, reply TEXT NOT NULL, created REAL)"
            )

    def get(self, key: str) -> ProviderReply | None:
        """The stored reply for ``key`` or None."""
        with self._lock:
            row = self._conn.execute("SELECT reply FROM responses WHERE key = ?", (key,)).fetchone()
        return ProviderReply.model_validate_json(row[0]) if row else None

    def put(self, key: str, model: str, reply: ProviderReply) -> None:
        """Store (or overwrite) the reply for ``key``."""
        with self._lock, self._conn:
            self._conn.execute(
                "INSERT OR REPLACE INTO responses (key, model, reply, created) VALUES (?, ?, ?, ?)",
                (key, model, reply.model_dump_json(), time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return int(self._conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def close(self) -> None:
        """Close the database connection."""
        with self._lock:
            self._conn.close()


class Cassette:
    """JSONL record/replay of provider replies.

    ``record``: every provider answer is appended (and flushed) as one line
    ``{"key", "model", "messages", "reply"}``. ``replay``: answers are served from the file
    without any server; identical requests get their recorded answers in order (the last
    one repeats); an unrecorded request raises ``CassetteMiss``.
    """

    def __init__(self, path: str | Path, mode: Literal["record", "replay"] = "replay") -> None:
        if mode not in ("record", "replay"):
            raise ConfigError(f"Cassette mode must be 'record' or 'replay', got {mode!r}")
        self.path = Path(path)
        self.mode = mode
        self._lock = threading.Lock()
        self._entries: dict[str, list[ProviderReply]] = {}
        self._served: dict[str, int] = {}
        if mode == "replay":
            if not self.path.exists():
                raise ConfigError(f"cassette {self.path} does not exist (record it first)")
            for lineno, line in enumerate(self.path.read_text().splitlines(), 1):
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                    reply = ProviderReply.model_validate(row["reply"])
                    self._entries.setdefault(row["key"], []).append(reply)
                except (json.JSONDecodeError, KeyError, ValueError) as e:
                    raise ConfigError(f"cassette {self.path} line {lineno} is corrupt: {e}") from e
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)

    _SHARED: dict[tuple[str, str], Cassette] = {}
    _SHARED_LOCK = threading.Lock()

    @classmethod
    def shared(cls, path: str | Path, mode: Literal["record", "replay"]) -> Cassette:
        """This process's one cassette for ``path`` and ``mode``: the runs of an eval read
        (or write) it in turn, so a request that recurs across runs (an agent and its LLM
        baseline asking the same first question) gets its recorded answers in the order
        they were recorded, not the first one again in every run."""
        key = (str(Path(path).resolve()), mode)
        with cls._SHARED_LOCK:
            if key not in cls._SHARED:
                cls._SHARED[key] = cls(path, mode=mode)
            return cls._SHARED[key]

    def __len__(self) -> int:
        return sum(len(v) for v in self._entries.values())

    def replay(self, key: str, messages: list[dict[str, Any]]) -> ProviderReply:
        """The recorded reply for ``key``; raises CassetteMiss if there is none."""
        with self._lock:
            replies = self._entries.get(key)
            if not replies:
                raise CassetteMiss(
                    f"cassette {self.path.name} has no answer for request {key[:16]} "
                    f"(first user message: {_first_user_snippet(messages)!r})"
                )
            i = self._served.get(key, 0)
            self._served[key] = i + 1
            return replies[min(i, len(replies) - 1)]

    def record(
        self, key: str, model: str, messages: list[dict[str, Any]], reply: ProviderReply
    ) -> None:
        """Append one request/answer pair and flush it to disk."""
        line = json.dumps(
            {"key": key, "model": model, "messages": messages, "reply": reply.model_dump()},
            sort_keys=True,
            default=str,
        )
        with self._lock, self.path.open("a") as fh:
            fh.write(line + "\n")
            fh.flush()
        self._entries.setdefault(key, []).append(reply)
