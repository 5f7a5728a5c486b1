"""AutoRO-Bench: generated robust-optimization instances and an application set."""

from optiforge.evals.suites.autoro.applications import APP_OPTIMA, app_instances, app_problems
from optiforge.evals.suites.autoro.benchmark import AUTORO_SPLITS, AutoROBenchmark, AutoROTask
from optiforge.evals.suites.autoro.instances import GENERATED_SPLITS, generate, make_instance

__all__ = [
    "APP_OPTIMA",
    "AUTORO_SPLITS",
    "GENERATED_SPLITS",
    "AutoROBenchmark",
    "AutoROTask",
    "app_instances",
    "app_problems",
    "generate",
    "make_instance",
]
