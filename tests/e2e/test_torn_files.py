"""Torn or damaged run records stop a resume with one line naming the file.

A run is killed mid-way (SIGKILL), one of its files is damaged the way a crash, a full
disk or a bad copy would, and ``--resume`` must either refuse (exit 2, one line naming
the file, a ``--force-restart`` hint) or, for a torn last line, continue exactly. Never a
silently different result.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from test_cli import CLI, optiforge

BUDGET = 16


def _killed_run(tmp_path: Path, after: int = 9) -> Path:
    out_dir = tmp_path / "run"
    proc = subprocess.Popen(
        [*CLI, "run", "evolve", "--bench", "funcfit/sine", "--budget", str(BUDGET)]
        + ["--out", str(out_dir), "--memory", "none"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "200"},
    )
    evals = out_dir / "evaluations.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and not (
        evals.exists() and len(evals.read_text().splitlines()) >= after
    ):
        time.sleep(0.02)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    n = len(evals.read_text().splitlines())
    assert after <= n < BUDGET, n
    return out_dir


def _one_line_error(out: subprocess.CompletedProcess[str], names: str) -> str:
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr, out.stderr
    errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, out.stderr  # one line, however long the path
    assert names in errors[0] and "--force-restart" in errors[0], errors[0]
    return errors[0]


def test_garbled_log_line_stops_resume_and_force_restart_starts_over(tmp_path: Path) -> None:
    run = _killed_run(tmp_path)
    log = run / "evaluations.jsonl"
    lines = log.read_text().splitlines(keepends=True)
    lines[2] = lines[2][: len(lines[2]) // 2] + "\n"  # a record cut in the middle of the file
    log.write_text("".join(lines))
    _one_line_error(optiforge("run", "evolve", "--resume", str(run)), "evaluations.jsonl")
    out = optiforge("run", "evolve", "--resume", str(run), "--force-restart")
    assert out.returncode == 0, out.stderr
    aside = [p for p in run.parent.iterdir() if p.name.startswith("run.damaged-")]
    assert len(aside) == 1 and (aside[0] / "evaluations.jsonl").exists()  # kept, not deleted
    summary = json.loads((run / "summary.json").read_text())
    assert summary["n_evaluations"] == BUDGET


def test_cut_wal_stops_resume(tmp_path: Path) -> None:
    run = _killed_run(tmp_path)
    wal = run / "checkpoints.sqlite-wal"
    if not wal.exists() or wal.stat().st_size <= 32:
        pytest.fail("the killed run left no checkpoint WAL to damage")
    with wal.open("r+b") as f:
        f.truncate(32)  # the header only: every commit in it is gone
    _one_line_error(optiforge("run", "evolve", "--resume", str(run)), "checkpoints.sqlite")


def test_garbage_checkpoint_db_stops_resume(tmp_path: Path) -> None:
    run = _killed_run(tmp_path)
    db = run / "checkpoints.sqlite"
    data = bytearray(db.read_bytes())
    data[100:4096] = os.urandom(3996)  # the schema page
    db.write_bytes(bytes(data))
    (run / "checkpoints.sqlite-wal").unlink(missing_ok=True)
    _one_line_error(optiforge("run", "evolve", "--resume", str(run)), "checkpoints.sqlite")


def test_torn_last_line_is_dropped_and_the_resume_finishes(tmp_path: Path) -> None:
    run = _killed_run(tmp_path)
    log = run / "evaluations.jsonl"
    with log.open("a") as f:
        f.write('{"id": "r9c9-0-torn", "sco')  # a kill mid-append
    out = optiforge("run", "evolve", "--resume", str(run))
    assert out.returncode == 0, out.stderr
    text = log.read_text()
    assert "torn" not in text and text.endswith("\n")
    assert all(json.loads(line) for line in text.splitlines())
    assert json.loads((run / "summary.json").read_text())["n_evaluations"] == BUDGET
