"""``nco``: distill a black-box neural TSP policy into a readable program portfolio (EPB).

The benchmark and its tasks live in ``benchmark.py``; this file only re-exports them.
"""

from optiforge.evals.suites.nco.benchmark import (
    STAGES,
    TRAIN_N,
    NCOBenchmark,
    NCOTask,
    family,
)

__all__ = [
    "NCOBenchmark",
    "NCOTask",
    "STAGES",
    "TRAIN_N",
    "family",
]
