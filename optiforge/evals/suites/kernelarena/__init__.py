"""``kernelarena``: 26 Triton kernel tasks (triton2triton and torch2triton) with an anti-cheat harness.

The benchmark and its tasks live in ``benchmark.py``; this file only re-exports them.
"""

from optiforge.evals.suites.kernelarena.benchmark import (
    NOT_MEASURED,
    RUNNER,
    KernelArenaBenchmark,
    KernelTask,
    aggregate,
    clipped_geomean_speedup,
    cost_over_cases,
    cuda_available,
    fast_p,
)

__all__ = [
    "KernelArenaBenchmark",
    "KernelTask",
    "NOT_MEASURED",
    "RUNNER",
    "aggregate",
    "clipped_geomean_speedup",
    "cost_over_cases",
    "cuda_available",
    "fast_p",
]
