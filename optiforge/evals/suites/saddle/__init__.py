"""``saddle``: local, offline, multi-step shell tasks (the inner tasks of AutoSaddler).

The benchmark and its tasks live in ``benchmark.py``; this file only re-exports them.
"""

from optiforge.evals.suites.saddle.benchmark import (
    COMMAND_TIMEOUT_S,
    ENV,
    HERE,
    MAX_CANDIDATE_CHARS,
    MAX_COMMANDS,
    MEMORY_MB,
    OUTPUT_CLIP,
    REWARD,
    SCRATCH,
    TASKS_DIR,
    VERIFY_TIMEOUT_S,
    SaddleBenchmark,
    SaddleTask,
    parse_candidate,
    solution_commands,
)

__all__ = [
    "COMMAND_TIMEOUT_S",
    "ENV",
    "HERE",
    "MAX_CANDIDATE_CHARS",
    "MAX_COMMANDS",
    "MEMORY_MB",
    "OUTPUT_CLIP",
    "REWARD",
    "SCRATCH",
    "SaddleBenchmark",
    "SaddleTask",
    "TASKS_DIR",
    "VERIFY_TIMEOUT_S",
    "parse_candidate",
    "solution_commands",
]
