"""What a hidden saddle test imports inside the verifier run (standard library only).

Never imported by optiforge at run time: the parent reads this file as data and ships it
next to the task's test script (``.verify-<random>/checklib.py``, hash-checked like the
test). A test script is ``exec python3 -I - "$(dirname "$0")" <<'PY' ... PY``: Python
reads the whole test from the heredoc, appends its own folder to ``sys.path`` (appended,
so a planted ``json.py`` there could never shadow the standard library) and calls
``verdict(check)``, which:

1. makes the test process non-dumpable (no other process of the run's uid can open its
   ``/proc`` files or memory: the candidate's code that a test runs cannot read the
   expected answers or flip the result in memory);
2. deletes the hidden test folder from disk (the test is in memory by then), so candidate
   code the test runs (a script the agent wrote) cannot read the expected answers;
3. runs ``check()`` (an exception counts as a failed check);
4. ``contain()``: when the run has its own PID namespace and ``/proc`` (the driver sets
   ``SADDLE_CONTAIN=1`` only then), kills every other process of the run but the test's
   ancestors, so nothing the candidate started can overwrite the result;
5. writes ``1`` or ``0`` to ``reward.txt`` (an old one or a planted link is removed
   first) and exits 0.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REWARD = "reward.txt"
IGNORED = ("tmp", REWARD)
"""Top-level work-dir entries a test never counts: the sandbox's scratch dir, the result."""


def _nondumpable() -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    except Exception:  # no libc/ctypes: the run's uid can read our memory, nothing else
        pass


def _hide_tests() -> None:
    here = Path(__file__).resolve().parent
    if here.name.startswith(".verify-"):
        shutil.rmtree(here, ignore_errors=True)


def ignored(rel: str) -> bool:
    """Is a work-dir-relative path the sandbox's, the verifier's or the result?"""
    top = rel.split("/", 1)[0]
    return top in IGNORED or top.startswith(".verify-")


def read_bytes(path: str) -> bytes | None:
    """A regular file's bytes (a link, a folder or a missing file: None)."""
    try:
        if os.path.islink(path) or not os.path.isfile(path):
            return None
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def read_text(path: str) -> str | None:
    """A regular file as text (UTF-8; CRLF read as LF), or None."""
    data = read_bytes(path)
    if data is None:
        return None
    try:
        return data.decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError:
        return None


def lines(path: str) -> list[str] | None:
    """A file's lines without trailing spaces, trailing blank lines dropped (None: no file)."""
    text = read_text(path)
    if text is None:
        return None
    out = [line.rstrip() for line in text.split("\n")]
    while out and not out[-1]:
        out.pop()
    return out


def read_csv(path: str) -> list[list[str]] | None:
    """A CSV file's rows (cells stripped, blank rows dropped), or None."""
    text = read_text(path)
    if text is None:
        return None
    rows = [[c.strip() for c in row] for row in csv.reader(io.StringIO(text))]
    return [r for r in rows if any(r)]


def read_json(path: str) -> Any:
    """A JSON file's value (raises on a bad file: the check then fails)."""
    text = read_text(path)
    if text is None:
        raise FileNotFoundError(path)
    return json.loads(text)


def files(root: str = ".") -> dict[str, bytes]:
    """Every regular file under ``root`` (relative paths; ignored entries left out)."""
    out: dict[str, bytes] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames):
            path = os.path.join(dirpath, name)
            rel = os.path.relpath(path, root).replace(os.sep, "/")
            if root == "." and ignored(rel):
                continue
            data = read_bytes(path)
            if data is not None:
                out[rel] = data
    return out


def num(text: str) -> float | None:
    """``text`` as a number, or None."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def close(a: str, b: float, tol: float = 1e-6) -> bool:
    """Does the text ``a`` hold a number within ``tol`` of ``b``?"""
    x = num(a)
    return x is not None and abs(x - b) <= tol


def run(argv: list[str], stdin: str = "", timeout: float = 10.0) -> tuple[int, str, str] | None:
    """Run candidate code (returncode, stdout, stderr), or None when it timed out."""
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError:
        return None
    try:
        out, err = proc.communicate(stdin.encode(), timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.kill()
        proc.communicate()
        return None
    return proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")


def _ancestors() -> set[int]:
    out = {os.getpid()}
    pid = os.getpid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                data = f.read()
            pid = int(data[data.rindex(b")") + 2 :].split()[1])
        except (OSError, ValueError, IndexError):
            break
        out.add(pid)
    return out


def _others(keep: set[int]) -> list[int]:
    """Live processes of our uid outside ``keep`` (zombies skipped)."""
    me = os.getuid()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) in keep:
            continue
        try:  # status, not the dir's owner: a non-dumpable process's /proc dir is root's
            with open(f"/proc/{entry}/status") as f:
                status = dict(line.split(":", 1) for line in f if ":" in line)
            if int(status["Uid"].split()[0]) != me or status["State"].split()[0] in "ZX":
                continue
        except (OSError, ValueError, KeyError, IndexError):
            continue
        found.append(int(entry))
    return found


def contain(rounds: int = 50) -> bool:
    """Kill every process of the run but our ancestors (only inside a PID namespace with a
    private ``/proc``: the driver says so with ``SADDLE_CONTAIN=1``). True when none is left
    (or containment is off)."""
    if os.environ.get("SADDLE_CONTAIN") != "1":
        return True
    keep = _ancestors()
    for _ in range(rounds):
        pids = _others(keep)
        if not pids:
            return True
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
    return not _others(keep)


def _write_reward(ok: bool) -> None:
    if os.path.isdir(REWARD) and not os.path.islink(REWARD):
        shutil.rmtree(REWARD, ignore_errors=True)
    elif os.path.lexists(REWARD):
        os.remove(REWARD)
    fd = os.open(REWARD, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "w") as f:
        f.write("1\n" if ok else "0\n")


def verdict(check: Callable[[], object]) -> None:
    """Run ``check`` and write its outcome to ``reward.txt`` (see the module doc); exits 0."""
    _nondumpable()
    _hide_tests()
    try:
        ok = bool(check())
    except Exception:
        ok = False
    if not contain():
        ok = False
    _write_reward(ok)
    sys.stdout.flush()
    sys.exit(0)
