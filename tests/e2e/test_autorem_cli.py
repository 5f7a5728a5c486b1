"""The ``optiforge autorem`` sub-app: adapt (offline), solve, table; bad input is one line."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from optiforge.agents.autorem.cli import app
from optiforge.errors import InvalidTask


def test_offline_adapt_writes_no_entries_and_says_why(tmp_path: Path) -> None:
    mem = f"sqlite:///{tmp_path / 'm.db'}"
    out = tmp_path / "report.json"
    res = CliRunner().invoke(
        app,
        [
            "adapt",
            "--split",
            "dev",
            "--n",
            "1",
            "--n-per-split",
            "1",
            "--memory",
            mem,
            "--no-embed",
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    assert "1 instances, 1 solved, 0 with failures, 0 entries written" in res.output
    assert "writes no entries" in res.output
    rep = json.loads(out.read_text())
    assert rep["model"] == "offline" and rep["n_entries_written"] == 0


def test_solve_rejects_bad_input_with_invalid_task(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"n": 1, "objective": {"c": [1.0]}, "constraints": [{"a": [1.0], "b": 1.0, "uncertainty": {"type": "star"}}]}'
    )
    res = CliRunner().invoke(app, ["solve", str(bad), "--memory", "none"])
    assert res.exit_code != 0
    assert isinstance(res.exception, InvalidTask)
    assert "unknown uncertainty set type 'star'" in str(res.exception)


def test_table_reads_results_jsonl(tmp_path: Path) -> None:
    row = {
        "split": "app",
        "method": "autorem",
        "model": "offline",
        "verified": True,
        "llm_calls": 0,
        "tokens": 0,
        "extra": {"attempts": 1, "memory_used": False},
        "verification": {"details": {"tolerance": "rel_tol=1e-06 abs_tol=1e-06 feas_tol=1e-06"}},
    }
    (tmp_path / "results.jsonl").write_text(json.dumps(row) + "\n{torn")
    res = CliRunner().invoke(app, ["table", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert (
        "rel_tol=1e-06" in res.output
        and "| app | autorem | without | offline | 1 | 1 | 1.000 |" in res.output
    )
