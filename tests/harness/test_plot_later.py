"""The run's convergence plot is drawn off the run's critical path (``plot_later``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from optiforge.harness.plot_later import PLOT_NAME, draw, plot_expected, spawn_run_plot
from optiforge.harness.summary import RunSummary


def _wait_for(path: Path, guard_s: float = 300.0) -> bool:
    """Poll for ``path`` (a hang guard, not a timing assertion)."""
    end = time.monotonic() + guard_s
    while time.monotonic() < end:
        if path.is_file() and path.stat().st_size > 0:
            return True
        time.sleep(0.2)
    return False


def _fake_run(tmp_path: Path) -> Path:
    d = tmp_path / "run"
    d.mkdir()
    summary = {
        "trace": [5.0, 3.0, 3.0, 1.0],
        "n_evaluations": 4,
        "higher_is_better": False,
        "metric": "mse",
        "benchmark": "funcfit",
        "task": "quadratic",
        "method": "evolve",
        "baseline_score": 5.0,
    }
    (d / "summary.json").write_text(json.dumps(summary))
    return d


def test_draw_writes_the_plot_and_leaves_no_partial_file(tmp_path: Path) -> None:
    d = _fake_run(tmp_path)
    p = draw(d)
    assert p == d / PLOT_NAME and p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(x.name for x in d.iterdir()) == [PLOT_NAME, "summary.json"]


def test_nothing_to_plot_spawns_nothing(tmp_path: Path) -> None:
    d = tmp_path / "run"
    d.mkdir()
    (d / "summary.json").write_text("{}")
    assert not plot_expected(RunSummary(), d)
    assert spawn_run_plot(RunSummary(), d) is None


def test_spawned_plot_appears(tmp_path: Path) -> None:
    d = _fake_run(tmp_path)
    p = spawn_run_plot(RunSummary.load(d), d)
    assert p == d / PLOT_NAME
    assert _wait_for(p)


@pytest.mark.slow
def test_cli_run_never_imports_matplotlib_and_the_plot_appears(tmp_path: Path) -> None:
    """The run's own process exits without matplotlib; the detached child draws the plot."""
    out = tmp_path / "run"
    code = (
        "import sys\n"
        "from optiforge.cli import main\n"
        f"argv = ['run', 'evolve', '--bench', 'funcfit/quadratic', '--budget', '3',"
        f" '--memory', 'none', '--out', {str(out)!r}]\n"
        "try:\n    main(argv)\nexcept SystemExit as e:\n    rc = e.code\n"
        "print('MATPLOTLIB', 'matplotlib' in sys.modules, 'RC', rc)\n"
    )
    env = {**os.environ, "COLUMNS": "200"}
    p = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600
    )
    assert "MATPLOTLIB False RC 0" in p.stdout, p.stdout + p.stderr
    assert "convergence.png" in p.stdout
    assert _wait_for(out / PLOT_NAME)
    # a plot the background process never drew: the report draws it
    from optiforge.harness.report import render_report

    (out / PLOT_NAME).unlink()
    page = render_report(out).read_text()
    assert (out / PLOT_NAME).is_file() and 'alt="convergence"' in page
