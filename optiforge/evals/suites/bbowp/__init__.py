"""BBOWP: black-box optimization word problems (23 instances in four domains).

The benchmark and its tasks live in ``benchmark.py``; this file only re-exports them.
"""

from optiforge.evals.suites.bbowp.benchmark import (
    FORMULATION_KEYS,
    PILOT_KEYS,
    BBOWPBenchmark,
    BBOWPTask,
    reference,
    regrets,
    space_quality,
)

__all__ = [
    "BBOWPBenchmark",
    "BBOWPTask",
    "FORMULATION_KEYS",
    "PILOT_KEYS",
    "reference",
    "regrets",
    "space_quality",
]
