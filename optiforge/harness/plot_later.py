"""A run's convergence plot, drawn in a detached process after the run has ended.

Importing matplotlib and laying the figure out took 2.8 s on a quiet 2-core machine and
18.5 s under load: a fifth of a short run, spent after its last evaluation with the user
waiting for the prompt. ``spawn_run_plot`` starts ``python -m optiforge.harness.plot_later
RUN_DIR`` in a session of its own (Ctrl-C in the terminal does not reach it) and returns at
once; the child reads ``summary.json`` and writes ``convergence.png`` through a temporary
file and a rename, so a reader never sees half a PNG. ``optiforge report`` draws the same
plot itself (``write_run_plot``), so a plot the child has not finished, or never drew
(killed, no matplotlib), is still in the report.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from optiforge.harness.summary import RunSummary

PLOT_NAME = "convergence.png"


def plot_expected(summary: RunSummary, run_dir: Path) -> bool:
    """Whether ``write_run_plot`` would draw anything for this run (a curve or evaluations)."""
    trace = summary.trace
    return (
        any(isinstance(v, int | float) for v in trace) or (run_dir / "evaluations.jsonl").is_file()
    )


def spawn_run_plot(summary: RunSummary, run_dir: Path) -> Path | None:
    """Start drawing ``run_dir``'s convergence plot in a detached process; returns the path
    the plot will have (None when there is nothing to plot or the process could not start,
    in which case ``optiforge report`` still draws it)."""
    if not plot_expected(summary, run_dir) or not (run_dir / "summary.json").is_file():
        return None
    try:
        subprocess.Popen(
            [sys.executable, "-m", "optiforge.harness.plot_later", str(run_dir)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            start_new_session=True,  # outlives the run; the terminal's Ctrl-C is not its
        )
    except OSError:
        return None
    return run_dir / PLOT_NAME


def draw(run_dir: Path) -> Path | None:
    """Draw ``run_dir``'s plot from its ``summary.json`` (replacing the file atomically)."""
    from optiforge.harness.report import write_run_plot

    summary = RunSummary.load(run_dir)
    part = f".{PLOT_NAME}.{os.getpid()}.png"  # savefig picks the format from the suffix
    try:
        drawn = write_run_plot(summary, run_dir, name=part)
        if drawn is None:
            return None
        final = run_dir / PLOT_NAME
        os.replace(drawn, final)
        return final
    finally:
        (run_dir / part).unlink(missing_ok=True)


if __name__ == "__main__":
    os.nice(5)  # the user's next command comes first
    draw(Path(sys.argv[1]))
