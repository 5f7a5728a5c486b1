"""The replay runner: runs a candidate's shell commands in order, inside the sandbox.

Never imported by optiforge at run time: ``SaddleTask`` passes this file's source as
``python -I -c SOURCE COMMANDS_JSON PER_COMMAND_S BUDGET_S`` (``SADDLE_MARK`` in the
environment, kept from the commands; standard library only;
``-I``: the work dir's files cannot shadow a module). Each command runs as
``/bin/sh -c COMMAND`` in the work dir, in its own session, with its own timeout (its
process group is killed at it), stdin from ``/dev/null``; a failing command does not stop
the replay; once the total budget is spent the rest are skipped. When ``python3`` is not
on ``PATH`` a ``python3`` link to this interpreter is put first on it (in ``/tmp``, never
the work dir). The report (per command: returncode, timed_out, skipped, stderr's tail) is
the last stdout line, after the mark.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

STDERR_TAIL = 400


def scratch_dir() -> str | None:
    """``/tmp`` when writable (a private tmpfs in an isolating sandbox), else the default."""
    return "/tmp" if os.access("/tmp", os.W_OK | os.X_OK) else None


def command_env() -> dict[str, str]:
    """The sandbox's environment, with a ``python3`` on ``PATH`` (a link to this one)."""
    env = dict(os.environ)
    if shutil.which("python3", path=env.get("PATH")) is None:
        shim = tempfile.mkdtemp(prefix="saddle-bin-", dir=scratch_dir())
        os.symlink(sys.executable, os.path.join(shim, "python3"))
        env["PATH"] = shim + os.pathsep + env.get("PATH", "/usr/bin:/bin")
    return env


def _nondumpable() -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE = 0
    except Exception:
        pass


def run_one(
    command: str, env: dict[str, str], cwd: str, timeout: float, log: Any
) -> dict[str, Any]:
    log.seek(0)
    log.truncate()
    try:
        proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            start_new_session=True,
        )
    except (OSError, ValueError) as e:
        return {"returncode": None, "timed_out": False, "stderr": f"could not start: {e}"}
    timed_out = False
    try:
        rc = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
        rc = proc.wait()
    log.seek(0, os.SEEK_END)
    size = log.tell()
    log.seek(max(0, size - STDERR_TAIL))
    err = log.read().decode("utf-8", errors="replace")
    return {"returncode": rc, "timed_out": timed_out, "stderr": err}


def main() -> None:
    commands = json.loads(sys.argv[1])
    per_command, budget = float(sys.argv[2]), float(sys.argv[3])
    mark = os.environ.pop("SADDLE_MARK", "")
    _nondumpable()
    env = command_env()
    cwd = os.getcwd()
    report: list[dict[str, Any]] = []
    t0 = time.monotonic()
    with tempfile.TemporaryFile(dir=scratch_dir()) as log:
        for command in commands:
            left = budget - (time.monotonic() - t0)
            if left <= 0:
                report.append({"returncode": None, "timed_out": False, "skipped": True})
                continue
            report.append(run_one(command, env, cwd, min(per_command, left), log))
    sys.stdout.write("\n" + mark + json.dumps(report) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
