"""``protein``: rank candidate variants of a protein for a property, offline.

The benchmark and its tasks live in ``benchmark.py``; this file only re-exports them.
"""

from optiforge.evals.suites.protein.benchmark import (
    CHUNK,
    POOL,
    ProteinBenchmark,
    ProteinTask,
    drawn_seed,
    heldout_task,
)

__all__ = [
    "CHUNK",
    "POOL",
    "ProteinBenchmark",
    "ProteinTask",
    "drawn_seed",
    "heldout_task",
]
