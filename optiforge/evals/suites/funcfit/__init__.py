"""``funcfit``: evolve a small Python function ``f(x)`` to match a target curve.

The benchmark and its tasks live in ``benchmark.py``; this file only re-exports them.
"""

from optiforge.evals.suites.funcfit.benchmark import (
    FuncFitBenchmark,
    FuncFitTask,
)

__all__ = [
    "FuncFitBenchmark",
    "FuncFitTask",
]
