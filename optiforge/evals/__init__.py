"""Benchmarks, the eval runner, scoring and reports."""

from optiforge.evals.protocol import SPLITS, Benchmark, Score, Task

__all__ = ["SPLITS", "Benchmark", "Score", "Task"]
