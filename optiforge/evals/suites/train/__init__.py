"""train: small training problems where a candidate is a training plan (a catalogue
optimizer and its hyperparameters), scored on held-out data.

The benchmark and its tasks live in ``benchmark.py``, the problems in ``problems.py``;
this file only re-exports them.
"""

from optiforge.evals.suites.train.benchmark import (
    InvalidPlan,
    TrainBenchmark,
    TrainTask,
    validate_plan,
)

__all__ = ["InvalidPlan", "TrainBenchmark", "TrainTask", "validate_plan"]
