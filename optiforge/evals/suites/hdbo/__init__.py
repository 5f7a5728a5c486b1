"""hdbo: high-dimensional BO benchmark (embedded synthetic functions, rover, synthetic LassoBench)."""

from optiforge.evals.suites.hdbo.benchmark import FAILED_VALUE, PROTOCOLS, HDBOBenchmark, HDBOTask
from optiforge.evals.suites.hdbo.lasso import SyntheticLasso
from optiforge.evals.suites.hdbo.problems import HDBOProblem, embedded, lasso, rover

__all__ = [
    "FAILED_VALUE",
    "PROTOCOLS",
    "HDBOBenchmark",
    "HDBOProblem",
    "HDBOTask",
    "SyntheticLasso",
    "embedded",
    "lasso",
    "rover",
]
