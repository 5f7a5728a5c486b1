"""CBO suite: SCM benchmarks for causal Bayesian optimisation (see ``suite``)."""

from optiforge.evals.suites.cbo.metrics import best_at_cost, curve, gap_metric, mean_ci, summarize
from optiforge.evals.suites.cbo.scms import LITERATURE, BenchmarkSpec, build, random_dag
from optiforge.evals.suites.cbo.suite import SPLIT_NAMES, CBOBenchmark, CBOTask, Intervention

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
