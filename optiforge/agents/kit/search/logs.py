"""The run's two candidate logs (``evaluations.jsonl``, ``rejected.jsonl``) and each
search's history read from them, checked against the graph state's count and digest."""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from optiforge.agents.kit.driver import FORCE_RESTART_HINT
from optiforge.agents.kit.search.records import EVALUATIONS, REJECTED, SearchState, is_invalid
from optiforge.errors import RunRecordError
from optiforge.runs import to_json_line


class EvalLog:
    """Per-run append-only log of candidate records (survives a kill mid-node): finished
    evaluations (``evaluations.jsonl``) or rejected candidates (``rejected.jsonl``); in
    memory only when the run has no directory.

    A last line without its newline is a record torn by a kill mid-append: it is cut
    off (so the next append starts a clean line) and counted in ``torn_tail``. Any
    other unreadable line means the file was damaged: ``RunRecordError`` naming it.
    """

    def __init__(self, run_dir: Path | None, name: str = EVALUATIONS) -> None:
        self.path = run_dir / name if run_dir else None
        self.done: dict[str, dict[str, Any]] = {}
        self.rounds: dict[int, list[str]] = {}
        """The logged ids of each round, in logging order."""
        self.torn_tail = False
        self.lock = threading.Lock()
        """Appends come from evaluator threads too (``overlap``: a submitted round's
        results are logged the moment they land, whichever node is running)."""
        if self.path and self.path.exists():
            data = self.path.read_bytes()
            cut = len(data)
            if data and not data.endswith(b"\n"):
                cut = data.rfind(b"\n") + 1
                with self.path.open("r+b") as fh:
                    fh.truncate(cut)
                self.torn_tail = True
            for i, line in enumerate(data[:cut].splitlines(), 1):
                try:
                    rec = json.loads(line)
                    self._index(rec)
                except (json.JSONDecodeError, KeyError, TypeError, ValueError):
                    raise RunRecordError(
                        f"{self.path}: line {i} is damaged (not a candidate record); "
                        "the run cannot resume from it: rerun with --force-restart to move "
                        "the run aside and start over"
                    ) from None

    def _index(self, rec: dict[str, Any]) -> None:
        rid = rec["id"]
        if rid not in self.done:
            self.rounds.setdefault(int(rec.get("round", 0)), []).append(rid)
        self.done[rid] = rec

    def append(self, rec: dict[str, Any]) -> None:
        with self.lock:
            self._write(rec)

    def append_new(self, rec: dict[str, Any]) -> bool:
        """``append`` unless a record of that id is logged already (whether it was)."""
        with self.lock:
            if rec["id"] in self.done:
                return False
            self._write(rec)
            return True

    def _write(self, rec: dict[str, Any]) -> None:
        """On disk first, then in ``done``: other threads read ``done`` without the lock
        (``SearchLoop.wait``), and a node that sees a record there may finish and be
        checkpointed at once, so a kill must not find it missing from the file."""
        if self.path:
            with self.path.open("a") as fh:
                fh.write(to_json_line(rec))
                fh.flush()
        self._index(rec)

    def round_ids(self, rnd: int) -> list[str]:
        """The logged ids of round ``rnd`` (a copy: appends may run concurrently)."""
        with self.lock:
            return list(self.rounds.get(rnd, []))


NO_DIGEST = f"{0:016x}"


def ids_digest(ids: list[str], start: str = NO_DIGEST) -> str:
    """``start`` XOR the hashes of ``ids``: the same for the same set of ids in any order."""
    acc = int(start, 16)
    for rid in ids:
        acc ^= int.from_bytes(hashlib.sha256(rid.encode()).digest()[:8], "big")
    return f"{acc:016x}"


def is_mine(rid: str, prefix: str) -> bool:
    """Whether candidate ``rid`` belongs to the search of ``prefix`` (one per thread)."""
    return rid.startswith(prefix) if prefix else "." not in rid.split("-", 1)[0]


def slot_of(rid: str, prefix: str) -> int:
    """A candidate's position in its round's proposals (its id is ``{prefix}r{R}c{i}-...``)."""
    local = rid[len(prefix) :]
    return int(local[local.index("c") + 1 : local.index("-")])


@dataclass
class History:
    """One search's history read from the logs, the rounds before ``through``."""

    through: int = 0
    rows: list[dict[str, Any]] = field(default_factory=list)
    keys: set[str] = field(default_factory=set)
    """The payload keys of its evaluated (not rejected) candidates: what was seen."""
    digest: str = NO_DIGEST


class CandidateLogs:
    """A run's two candidate logs, and the history of each search read from them."""

    def __init__(self, run_dir: Path | None) -> None:
        self.evaluated = EvalLog(run_dir, EVALUATIONS)
        self.rejected = EvalLog(run_dir, REJECTED)
        self._histories: dict[str, History] = {}

    def history(self, prefix: str, through: int) -> History:
        """The candidates of search ``prefix`` in the rounds before ``through``, in the
        order they were proposed (a round's rows are read once, when it is finished)."""
        hist = self._histories.get(prefix)
        if hist is None or through < hist.through:
            hist = self._histories[prefix] = History()
        for rnd in range(hist.through, through):
            rows = {
                rid: log.done[rid]
                for log in (self.rejected, self.evaluated)  # an evaluation wins a tie
                for rid in log.round_ids(rnd)
                if is_mine(rid, prefix)
            }
            new = [rows[rid] for rid in sorted(rows, key=lambda rid: slot_of(rid, prefix))]
            hist.rows += new
            hist.keys.update(r["key"] for r in new if not is_invalid(r))
            hist.digest = ids_digest([r["id"] for r in new], hist.digest)
        hist.through = max(hist.through, through)
        return hist

    def checked_history(self, prefix: str, state: SearchState | dict[str, Any]) -> History:
        """The history of the state's finished rounds, checked against its count and digest.

        Raises:
            RunRecordError: the logs do not hold the candidates the state counts.
        """
        hist = self.history(prefix, state.get("history_round", 0))
        n = state.get("n_history", 0)
        if len(hist.rows) != n or hist.digest != state.get("history_digest", NO_DIGEST):
            where = self.evaluated.path.parent if self.evaluated.path else "memory"
            raise RunRecordError(
                f"the candidate logs ({EVALUATIONS}, {REJECTED} in {where}) hold "
                f"{len(hist.rows)} candidates of rounds 0-{hist.through - 1} where the "
                f"search's state records {n} (or other ones): the logs were cut or edited; "
                f"{FORCE_RESTART_HINT}"
            )
        return hist
