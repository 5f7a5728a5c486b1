"""CBO suite: SCM benchmarks for causal Bayesian optimisation (see ``benchmark``)."""

from optiforge.evals.suites.cbo.benchmark import SPLIT_NAMES, CBOBenchmark, CBOTask, Intervention
from optiforge.evals.suites.cbo.metrics import best_at_cost, curve, gap_metric, mean_ci, summarize
from optiforge.evals.suites.cbo.scms import LITERATURE, BenchmarkSpec, build, random_dag

__all__ = [
    "LITERATURE",
    "SPLIT_NAMES",
    "BenchmarkSpec",
    "CBOBenchmark",
    "CBOTask",
    "Intervention",
    "best_at_cost",
    "build",
    "curve",
    "gap_metric",
    "mean_ci",
    "random_dag",
    "summarize",
]
