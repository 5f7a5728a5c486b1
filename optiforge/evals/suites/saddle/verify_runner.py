"""The verifier driver: runs a task's hidden test in the final work dir, inside the sandbox.

Never imported by optiforge at run time: ``SaddleTask`` passes this file's source as
``python -I -c SOURCE CONFIG_JSON`` (``SADDLE_MARK`` in the environment) in a fresh
sandbox run whose work dir holds the candidate's final files plus the hidden tests in
``CONFIG["dir"]`` (``.verify-<random>``).
It removes any ``reward.txt``, checks every hidden file's sha256 against the packaged one
(right before running it), imports ``checklib`` from there, makes itself non-dumpable,
runs the test (``/bin/sh test.sh``, or ``python -I test.py``) with a timeout, then kills
whatever the test left running (``checklib.contain``: only inside a PID namespace), reads
``reward.txt`` (a regular file, no link) and prints its report as the last stdout line,
after the mark: ``{"returncode", "reward", "stderr"}`` or ``{"error"}``. The mark comes in
the environment, not argv (``/proc/PID/cmdline`` is readable by the candidate's code that a
test runs; ``environ`` is not, once this process is non-dumpable), and is kept from the test.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from typing import Any

REWARD = "reward.txt"


def report(mark: str, **fields: Any) -> None:
    sys.stdout.write("\n" + mark + json.dumps(fields) + "\n")
    sys.stdout.flush()


def remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    elif os.path.lexists(path):
        os.remove(path)


def sha256(path: str) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return "unreadable"
    with os.fdopen(fd, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def read_reward() -> str | None:
    try:
        fd = os.open(REWARD, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        return f.read(64).decode("utf-8", errors="replace")


def main() -> None:
    cfg = json.loads(sys.argv[1])
    mark = os.environ.pop("SADDLE_MARK", "")
    folder: str = cfg["dir"]
    remove(REWARD)
    for rel, want in sorted(cfg["sha256"].items()):
        if sha256(os.path.join(folder, rel)) != want:
            report(mark, error=f"hidden test file {rel} does not match its packaged sha256")
            return
    sys.path.append(os.path.abspath(folder))
    import checklib  # type: ignore[import-not-found]

    checklib._nondumpable()
    if cfg.get("contain"):
        os.environ["SADDLE_CONTAIN"] = "1"  # for the test and for our own contain() below
    env = dict(os.environ)
    if shutil.which("python3", path=env.get("PATH")) is None:
        import tempfile

        shim = tempfile.mkdtemp(prefix="saddle-bin-", dir="/tmp" if os.access("/tmp", 3) else None)
        os.symlink(sys.executable, os.path.join(shim, "python3"))
        env["PATH"] = shim + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    entry = os.path.join(folder, cfg["entry"])
    argv = [sys.executable, "-I", entry] if entry.endswith(".py") else ["/bin/sh", entry]
    try:
        proc = subprocess.run(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=float(cfg["timeout"]),
        )
    except subprocess.TimeoutExpired:
        checklib.contain()
        report(mark, error=f"the test script ran past {cfg['timeout']} s")
        return
    if not checklib.contain():
        report(mark, error="processes the test started could not be stopped")
        return
    stderr = proc.stderr[-1500:].decode("utf-8", errors="replace")
    report(mark, returncode=proc.returncode, reward=read_reward(), stderr=stderr)


if __name__ == "__main__":
    main()
