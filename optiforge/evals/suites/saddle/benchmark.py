"""``saddle``: local, offline, multi-step shell tasks (the inner tasks of AutoSaddler).

A task (terminal-bench-like) is a folder ``tasks/<name>/``: ``task.json`` (instruction,
split, category, difficulty 1-3, ``timeout_s``, ``steps_hint``: the shell commands a
competent agent needs), ``workdir/`` (the agent's starting files; ``.keep`` files are
ignored), ``tests/test.sh`` (the hidden test: run in the final work dir, it writes ``1``
or ``0`` to ``reward.txt``) and ``solution.sh`` (the reference solution: one shell command
a line, ``#`` comments allowed). Tasks use only what a fresh Debian machine has: ``sh``,
coreutils, grep, sed, awk, sort, find, tar, gzip and ``python3`` with its standard library.

An agent works through ``SaddleTask.step`` (one command in a fresh sandbox run over the
files it returns: the state lives in the caller's dict between steps) and hands in its
trajectory ``{"commands": [...]}``; ``evaluate`` never trusts the agent's state, it
replays the trajectory from the initial files and verifies the outcome.

Verification: two sandbox runs, never one
-----------------------------------------
1. **Replay** (``replay_runner.py``, given as ``python -I -c`` source): a fresh run whose
   work dir holds only the task's initial files; the commands run in order through
   ``/bin/sh -c``, each with its own timeout, continuing after a failing one. The hidden
   tests are nowhere in this run: not in its files, argv or environment, and not in its
   view of the disk (an isolating sandbox shows the interpreter and system dirs, never
   the optiforge source). So a command that looks for them (``cat tests/test.sh``,
   ``find / -name test.sh``) finds nothing of this task's tests. The run ends with all its
   processes killed (the sandbox's promise); its regular files are collected.
2. **Verify** (``verify_runner.py``): a second fresh run whose work dir holds the collected
   final files (minus any ``reward.txt`` and the sandbox's ``tmp/`` scratch) plus the
   hidden tests under ``.verify-<16 random hex>/`` with ``checklib.py``. The driver
   removes any ``reward.txt``, checks every hidden file's sha256 against the packaged
   bytes, runs ``test.sh``, and reads ``reward.txt``.

Why this is sound: the candidate never runs while the hidden tests exist anywhere it can
see, and nothing it started survives into the verify run, so it can neither read the
tests nor tamper with them, nor wait for the result and overwrite it; a ``reward.txt`` or a
fake ``tests/test.sh`` it left is dropped or simply never run (the test's folder name is
random, the test is the packaged bytes, hash-checked). Its final state crosses over as
regular files only (the collector skips links, devices, FIFOs and hard links), so nothing
it made can redirect the test's reads or writes. The test runs ``python3 -I`` (the work
dir's files shadow no module, user site-packages are off), from a ``PATH`` without the
work dir. Where a test runs code the agent wrote (a script task), ``checklib.verdict``
first deletes the hidden folder and makes the test non-dumpable, and kills every process
of the run but its own ancestors before writing the result (inside a PID namespace only;
the driver is told by ``sandbox.protections()``), so that code can neither read the
expected answers nor outlive the check to overwrite ``reward.txt``. The driver's report is
its last stdout line, after a random mark it gets in its environment (not argv), and
counts only when the driver exits 0. These properties rest on an isolating sandbox: the
local sandbox's mode ``none`` shows the whole disk (the packaged tests included) and has
no PID namespace; it reports those clauses unmet and ``get_sandbox`` refuses it for
agent code unless ``--unsafe-sandbox`` is given.

What crosses between runs and between steps is the work dir's regular files only: file
modes (an executable bit), symlinks, empty folders and ``tmp/`` (the local sandbox's
``TMPDIR``, scratch) are not carried. Tests call scripts through ``python3``/``sh``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from optiforge.errors import ConfigError, InvalidTask, SandboxError
from optiforge.evals.protocol import Score, SuiteHooks

HERE = Path(__file__).resolve().parent
TASKS_DIR = HERE / "tasks"
SCRATCH = "tmp"
"""The local sandbox's ``TMPDIR`` inside the work dir: its bookkeeping, never carried."""
REWARD = "reward.txt"
COMMAND_TIMEOUT_S = 30.0
"""Each replayed command's own timeout (at most the task's ``timeout_s``)."""
VERIFY_TIMEOUT_S = 60.0
MEMORY_MB = 2048
MAX_COMMANDS = 200
MAX_CANDIDATE_CHARS = 100_000
"""A trajectory travels as one argv string (Linux caps one at 128 KiB)."""
OUTPUT_CLIP = 20_000
ENV = {"OMP_NUM_THREADS": "1", "LC_ALL": "C.UTF-8"}
"""Every run's extra environment (C.UTF-8: ``sort`` orders by code point everywhere)."""
_TASK_KEYS = {"instruction", "split", "category", "difficulty", "timeout_s", "steps_hint"}

_STEP_WRAPPER = (
    # $1: the command, $2: the sandbox's python; a python3 link goes first on PATH only
    # when there is none (in /tmp, never the work dir)
    'if ! command -v python3 >/dev/null 2>&1 && [ -x "$2" ]; then '
    'd=$(mktemp -d /tmp/saddle-bin.XXXXXX 2>/dev/null || mktemp -d) && ln -s "$2" "$d/python3" '
    '&& PATH="$d:$PATH" && export PATH; fi; exec /bin/sh -c "$1"'
)


@functools.cache
def _source(name: str) -> str:
    return (HERE / name).read_text()


def _python(sandbox: Any) -> str:
    return str(getattr(sandbox, "python", None) or "python3")


def _default_sandbox() -> Any:
    from optiforge.sandboxes import get_sandbox

    return get_sandbox("local")


def _contains(sandbox: Any) -> bool:
    """Does a run of ``sandbox`` have its own PID namespace and ``/proc`` (so the verifier
    may kill every process of the run but its own)?"""
    try:
        prot = sandbox.protections()
    except Exception:
        return False
    return bool(getattr(prot, "pid_namespace", False) and getattr(prot, "proc_private", False))


def _as_bytes(data: bytes | str) -> bytes:
    return data.encode() if isinstance(data, str) else bytes(data)


def _work_files(collected: dict[str, bytes | str]) -> dict[str, bytes]:
    """The work dir's files from a collect, without the sandbox's scratch dir."""
    return {
        rel: _as_bytes(data)
        for rel, data in sorted(collected.items())
        if rel.split("/", 1)[0] != SCRATCH
    }


def _clip(text: str, limit: int = OUTPUT_CLIP) -> str:
    if len(text) <= limit:
        return text
    note = f"\n[... {len(text) - limit} characters clipped ...]\n"
    head = (limit - len(note)) // 2
    return text[:head] + note + text[len(text) - (limit - len(note) - head) :]


def _last_report(stdout: str, mark: str) -> Any:
    """The JSON after the last ``mark`` line of a runner's stdout (None when absent)."""
    for line in reversed(stdout.splitlines()):
        if line.startswith(mark):
            try:
                return json.loads(line[len(mark) :])
            except ValueError:
                return None
    return None


def parse_candidate(candidate: Any) -> tuple[list[str] | None, str | None]:
    """``({"commands": [...]} or its JSON)`` -> (commands, None) or (None, why not)."""
    if isinstance(candidate, str | bytes):
        try:
            candidate = json.loads(candidate)
        except ValueError:
            return None, 'a candidate is {"commands": [str, ...]} (got text that is not JSON)'
    if not isinstance(candidate, dict) or "commands" not in candidate:
        return None, f'a candidate is {{"commands": [str, ...]}}, got {type(candidate).__name__}'
    cmds = candidate["commands"]
    if not isinstance(cmds, list) or not all(isinstance(c, str) for c in cmds):
        return None, "candidate['commands'] must be a list of str"
    if len(cmds) > MAX_COMMANDS:
        return None, f"too many commands: {len(cmds)} > {MAX_COMMANDS}"
    if any("\x00" in c for c in cmds):
        return None, "a command holds a NUL byte"
    if len(json.dumps(cmds)) > MAX_CANDIDATE_CHARS:
        return None, f"the commands exceed {MAX_CANDIDATE_CHARS} characters"
    return list(cmds), None


def solution_commands(text: str) -> list[str]:
    """``solution.sh`` -> its commands (one a line; blank and ``#`` lines skipped)."""
    return [ln for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


@dataclass
class SaddleTask:
    """One shell task (see the module doc)."""

    name: str
    split: str
    category: str
    difficulty: int
    instruction: str
    timeout_s: float
    steps_hint: int
    suite: str = "saddle"
    metric: str = "reward"
    higher_is_better: bool = True
    budget: int | None = None

    @property
    def description(self) -> str:
        """The instruction, as told to an agent."""
        return self.instruction

    @property
    def folder(self) -> Path:
        return TASKS_DIR / self.name

    def initial_files(self) -> dict[str, bytes]:
        """The work dir's starting files (relative paths; ``.keep`` files left out)."""
        root = self.folder / "workdir"
        return {
            p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != ".keep"
        }

    def test_files(self) -> dict[str, bytes]:
        """The hidden test folder's files plus ``checklib.py`` (name -> bytes)."""
        root = self.folder / "tests"
        out = {
            p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*"))
            if p.is_file()
        }
        out["checklib.py"] = (HERE / "checklib.py").read_bytes()
        return out

    def solution(self) -> list[str]:
        """The reference solution's commands."""
        return solution_commands((self.folder / "solution.sh").read_text())

    # -- one agent step ---------------------------------------------------------------

    def step(
        self,
        files: dict[str, bytes],
        command: str,
        sandbox: Any | None = None,
        timeout_s: float = 30.0,
    ) -> tuple[dict[str, bytes], dict[str, Any]]:
        """Run ONE shell command (``/bin/sh -c``) in a fresh sandbox run whose work dir
        holds ``files``; returns the work dir's files afterwards (all regular files,
        recursively, but the sandbox's ``tmp/``) and ``{"returncode", "stdout", "stderr",
        "timed_out", "seconds"}`` (outputs clipped to 20000 characters each). On a timeout
        the files are those at the kill (a back end that collects nothing after a timeout,
        Docker: the files before the command)."""
        if not isinstance(command, str) or "\x00" in command:
            raise ConfigError("a step's command must be a str without NUL bytes")
        sandbox = sandbox or _default_sandbox()
        argv = ["/bin/sh", "-c", _STEP_WRAPPER, "saddle-step", command, _python(sandbox)]
        res = sandbox.run(
            argv,
            files=dict(files),
            timeout_s=timeout_s,
            memory_mb=MEMORY_MB,
            env=dict(ENV),
            collect=["**"],
        )
        out = _work_files(res.files)
        if res.timed_out and not out and files and getattr(sandbox, "backend", "") == "docker":
            out = {k: _as_bytes(v) for k, v in files.items()}
        return out, {
            "returncode": res.returncode,
            "stdout": _clip(res.stdout),
            "stderr": _clip(res.stderr),
            "timed_out": bool(res.timed_out),
            "seconds": float(res.duration_s),
        }

    # -- scoring ----------------------------------------------------------------------

    def evaluate(self, candidate: Any, sandbox: Any | None = None) -> Score:
        """Replay ``candidate["commands"]`` from the initial files, then run the hidden
        test on the final work dir (see the module doc). value: the reward (0 or 1);
        passed: the verifier ran (False with ``details["reason"]`` for a malformed
        candidate or a verifier crash)."""
        return self.run_candidate(candidate, sandbox)[0]

    def run_candidate(
        self, candidate: Any, sandbox: Any | None = None
    ) -> tuple[Score, dict[str, bytes]]:
        """``evaluate``, plus the final work dir the verifier saw (empty when malformed)."""
        cmds, why = parse_candidate(candidate)
        if cmds is None:
            return _failed(why or "malformed candidate", 0, 0), {}
        sandbox = sandbox or _default_sandbox()
        files = self.initial_files()
        details: dict[str, Any] = {}
        failures = 0
        if cmds:
            try:
                files, report, seconds = self._replay(cmds, files, sandbox)
            except SandboxError as e:
                return _failed(f"replay failed: {e}", len(cmds), 0), {}
            details["replay_seconds"] = round(seconds, 3)
            if isinstance(report, str):  # no report: verify the files as they were left
                failures = len(cmds)
                details["replay_note"] = report
            else:
                bad = [
                    {"index": i, **r}
                    for i, r in enumerate(report)
                    if r.get("returncode") != 0 or r.get("timed_out")
                ]
                failures = len(bad)
                if bad:
                    details["failed_commands"] = bad[:10]
        try:
            verdict, seconds = self._verify(files, sandbox)
        except SandboxError as e:
            return _failed(f"verifier failed: {e}", len(cmds), failures, details), files
        details["verify_seconds"] = round(seconds, 3)
        reason = _verdict_problem(verdict)
        if reason is not None:
            return _failed(reason, len(cmds), failures, details), files
        reward = float(str(verdict["reward"]).strip())
        metrics = {
            "reward": reward,
            "commands": float(len(cmds)),
            "replay_failures": float(failures),
        }
        return Score(value=reward, passed=True, metrics=metrics, details=details), files

    def _replay(
        self, cmds: list[str], files: dict[str, bytes], sandbox: Any
    ) -> tuple[dict[str, bytes], list[dict[str, Any]] | str, float]:
        """The final files, the per-command report (or why there is none), the seconds."""
        mark = "@@saddle-replay-" + secrets.token_hex(8) + "@@"
        per = min(COMMAND_TIMEOUT_S, float(self.timeout_s))
        argv = [_python(sandbox), "-I", "-c", _source("replay_runner.py"), json.dumps(cmds)]
        argv += [str(per), str(float(self.timeout_s))]
        t0 = time.perf_counter()
        res = sandbox.run(
            argv,
            files=dict(files),
            timeout_s=float(self.timeout_s) + 15.0,
            memory_mb=MEMORY_MB,
            env={**ENV, "SADDLE_MARK": mark},
            collect=["**"],
        )
        report = _last_report(res.stdout, mark)
        if not isinstance(report, list) or len(report) != len(cmds):
            # killed at the run's timeout, or by a command (the runner is the candidate's
            # uid): the commands' effects so far still count
            why = "timed out" if res.timed_out else f"exit {res.returncode}"
            tail = res.stderr.strip()[-300:]
            report = f"the replay runner did not report ({why}){': ' + tail if tail else ''}"
        return _work_files(res.files), report, time.perf_counter() - t0

    def _verify(self, files: dict[str, bytes], sandbox: Any) -> tuple[Any, float]:
        folder = ".verify-" + secrets.token_hex(8)
        tests = self.test_files()
        run_files: dict[str, str | bytes] = {
            rel: data
            for rel, data in files.items()
            if rel.split("/", 1)[0] not in (REWARD, folder, SCRATCH)
        }
        for rel, data in tests.items():
            run_files[f"{folder}/{rel}"] = data
        entry = "test.sh" if "test.sh" in tests else "test.py"
        cfg = {
            "dir": folder,
            "entry": entry,
            "sha256": {rel: hashlib.sha256(data).hexdigest() for rel, data in tests.items()},
            "timeout": VERIFY_TIMEOUT_S,
            "contain": _contains(sandbox),
        }
        mark = "@@saddle-verify-" + secrets.token_hex(8) + "@@"
        argv = [_python(sandbox), "-I", "-c", _source("verify_runner.py"), json.dumps(cfg)]
        t0 = time.perf_counter()
        res = sandbox.run(
            argv,
            files=run_files,
            timeout_s=VERIFY_TIMEOUT_S + 15.0,
            memory_mb=MEMORY_MB,
            env={**ENV, "SADDLE_MARK": mark},
        )
        verdict = _last_report(res.stdout, mark)
        if not isinstance(verdict, dict) or res.returncode != 0 or res.timed_out:
            # the driver's report is its last act before exit 0: a driver that was killed
            # (by code the test ran) has no report that counts
            why = "timed out" if res.timed_out else f"exit {res.returncode}"
            verdict = {"error": f"the verifier did not report ({why}): {res.stderr.strip()[-400:]}"}
        return verdict, time.perf_counter() - t0

    def check_reference(self, sandbox: Any | None = None) -> tuple[float, float]:
        """(reward of the reference solution, reward of a no-op), both through ``evaluate``."""
        sandbox = sandbox or _default_sandbox()
        ref = self.evaluate({"commands": self.solution()}, sandbox)
        noop = self.evaluate({"commands": []}, sandbox)
        return ref.value, noop.value


def _verdict_problem(verdict: dict[str, Any]) -> str | None:
    """Why a verifier report is not a reward (None: it is one)."""
    if "error" in verdict:
        return f"verifier: {verdict['error']}"
    if verdict.get("returncode") != 0:
        tail = str(verdict.get("stderr", "")).strip()[-400:]
        return f"the test script crashed (exit {verdict.get('returncode')}): {tail}"
    reward = verdict.get("reward")
    if reward is None:
        return "the test script wrote no reward.txt"
    if str(reward).strip() not in ("0", "1", "0.0", "1.0"):
        return f"reward.txt holds {str(reward)[:20]!r}, not 0 or 1"
    return None


def _failed(
    reason: str, commands: int, failures: int, details: dict[str, Any] | None = None
) -> Score:
    metrics = {"reward": 0.0, "commands": float(commands), "replay_failures": float(failures)}
    return Score(
        value=0.0, passed=False, metrics=metrics, details={**(details or {}), "reason": reason}
    )


@functools.cache
def _load_specs() -> tuple[tuple[str, dict[str, Any]], ...]:
    specs = []
    for folder in sorted(p for p in TASKS_DIR.iterdir() if p.is_dir()):
        meta_path = folder / "task.json"
        if not meta_path.is_file():
            continue
        meta = json.loads(meta_path.read_text())
        if set(meta) != _TASK_KEYS:
            raise InvalidTask(f"saddle/{folder.name}: task.json keys must be {sorted(_TASK_KEYS)}")
        if meta["split"] not in SaddleBenchmark.splits or meta["difficulty"] not in (1, 2, 3):
            raise InvalidTask(f"saddle/{folder.name}: bad split or difficulty in task.json")
        specs.append((folder.name, meta))
    return tuple(specs)


class SaddleBenchmark(SuiteHooks):
    """The ``saddle`` suite (see the module doc)."""

    name = "saddle"
    description = "Local offline multi-step shell tasks with hidden tests (terminal-bench-like)"
    splits = ("dev", "heldout", "long-dev", "long-heldout")
    """``dev``/``heldout``: 2-8 commands a task; ``long-dev``/``long-heldout``: 10-14 commands
    that carry state across steps (values read early and used later, several files edited,
    build-then-test; ``benchmarks/make_saddle_long.py`` writes them)."""

    def tasks(self, split: str = "dev") -> list[SaddleTask]:
        self.check_split(split)
        return [
            SaddleTask(
                name=name,
                split=meta["split"],
                category=str(meta["category"]),
                difficulty=int(meta["difficulty"]),
                instruction=str(meta["instruction"]),
                timeout_s=float(meta["timeout_s"]),
                steps_hint=int(meta["steps_hint"]),
            )
            for name, meta in _load_specs()
            if meta["split"] == split
        ]


__all__ = ["SaddleBenchmark", "SaddleTask", "parse_candidate", "solution_commands"]
