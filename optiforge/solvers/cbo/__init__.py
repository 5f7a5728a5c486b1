"""Causal Bayesian optimisation back end: SCMs, exploration sets, do-priors, CBO and BO."""

from optiforge.solvers.cbo.cbo import (
    CBOConfig,
    CBOTrace,
    GroundTruth,
    SetOptimum,
    TrialRecord,
    candidate_grid,
    run_bo,
    run_cbo,
    true_optimum,
)
from optiforge.solvers.cbo.do_prior import (
    BackdoorDoPrior,
    DoPrior,
    GFormulaDoPrior,
    backdoor_adjustment_set,
    fit_do_prior,
    fit_do_priors,
    prior_spec,
    routing_signature,
)
from optiforge.solvers.cbo.exploration import (
    ExplorationSet,
    latent_projection,
    minimal_intervention_sets,
    pomis,
)
from optiforge.solvers.cbo.scm import SCM, InterventionDomain, NoiseSpec, StructuralEquation

__all__ = [
    "SCM",
    "CBOConfig",
    "CBOTrace",
    "BackdoorDoPrior",
    "DoPrior",
    "GFormulaDoPrior",
    "ExplorationSet",
    "GroundTruth",
    "InterventionDomain",
    "NoiseSpec",
    "SetOptimum",
    "StructuralEquation",
    "TrialRecord",
    "backdoor_adjustment_set",
    "candidate_grid",
    "fit_do_prior",
    "fit_do_priors",
    "latent_projection",
    "minimal_intervention_sets",
    "pomis",
    "prior_spec",
    "routing_signature",
    "run_bo",
    "run_cbo",
    "true_optimum",
]
