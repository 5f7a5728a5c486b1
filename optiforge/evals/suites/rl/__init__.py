"""rl: control problems described in words where a candidate is a control plan (the posed
problem: kind, limits or objective; a catalogue RL method and its hyperparameters), scored
on held-out episodes of the true problem.

The benchmark and its tasks live in ``benchmark.py``; this file only re-exports them.
"""

from optiforge.evals.suites.rl.benchmark import (
    InvalidPlan,
    RLBenchmark,
    RLTask,
    parse_objective,
    validate_plan,
)

__all__ = ["InvalidPlan", "RLBenchmark", "RLTask", "parse_objective", "validate_plan"]
