"""``procedural``: build tools from examples, then use them (SMITH), with exact verifiers.

The benchmark and its tasks live in ``benchmark.py``; this file only re-exports them.
"""

from optiforge.evals.suites.procedural.benchmark import (
    AXES,
    K_EXAMPLES,
    N_CHECK,
    N_USE,
    N_VALIDATE,
    PASS_K,
    ProceduralBenchmark,
    ProceduralTask,
)

__all__ = [
    "AXES",
    "K_EXAMPLES",
    "N_CHECK",
    "N_USE",
    "N_VALIDATE",
    "PASS_K",
    "ProceduralBenchmark",
    "ProceduralTask",
]
