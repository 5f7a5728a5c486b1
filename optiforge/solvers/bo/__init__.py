"""Bayesian optimisation with pluggable GP kernels (qLogEI) and the baselines it is compared to."""

from optiforge.solvers.bo.baselines import BASELINES, TurboState, register_baseline, run_baseline
from optiforge.solvers.bo.loop import (
    AcqConfig,
    BOLoop,
    CountedObjective,
    ExactGPModel,
    KernelProvider,
    ModelFactory,
    Problem,
    Trace,
    exact_gp_factory,
)

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
