"""The stored suite index (``optiforge/evals/index.json``) that ``list`` reads."""

from __future__ import annotations

import subprocess
import sys

import pytest

from optiforge.evals.index import build_index, load_index

LISTS_WITHOUT_SUITES = """
import sys
from optiforge.cli.main import main
for cmd in (["list", "tasks"], ["list", "benchmarks"], ["list", "tasks", "autoro"]):
    try:
        main(cmd)
    except SystemExit as e:
        assert e.code in (0, None), e.code
heavy = [m for m in sys.modules if m.startswith("optiforge.evals.suites") or m == "cvxpy"]
print("IMPORTED", heavy, file=sys.stderr)
"""


@pytest.mark.slow
def test_index_is_the_registry() -> None:
    """Regenerate with `python -m optiforge.evals.index` when a suite changes."""
    assert load_index() == build_index()


def test_listing_imports_no_suite() -> None:
    proc = subprocess.run([sys.executable, "-c", LISTS_WITHOUT_SUITES], capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "IMPORTED []" in proc.stderr
    assert "autoro/" in proc.stdout and "funcfit/quadratic@dev" in proc.stdout
