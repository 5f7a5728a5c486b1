"""Bayesian optimisation with pluggable GP kernels (qLogEI) and the baselines it is compared to."""

from optiforge.solvers.bo.baselines import BASELINES, TurboState, register_baseline, run_baseline
from optiforge.solvers.bo.loop import (
    AcqConfig,
    CountedObjective,
    ExactGPModel,
    KernelProvider,
    ModelFactory,
    Problem,
    Trace,
    exact_gp_factory,
)
from optiforge.solvers.bo.session import BOLoop

__all__ = [
    "BASELINES",
    "AcqConfig",
    "BOLoop",
    "CountedObjective",
    "ExactGPModel",
    "KernelProvider",
    "ModelFactory",
    "Problem",
    "Trace",
    "TurboState",
    "exact_gp_factory",
    "register_baseline",
    "run_baseline",
]
