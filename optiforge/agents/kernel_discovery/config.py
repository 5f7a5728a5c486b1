"""Kernel Discovery's options (``KernelDiscoveryConfig``, the agent's ``config_model``)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class KernelDiscoveryConfig(BaseModel):
    """Options of the ``kernel-discovery`` agent."""

    model_config = ConfigDict(extra="forbid")

    refresh_every: int = Field(default=5, ge=1)
    """BO rounds between kernel refreshes (the kernel's hyperparameters are refitted every round)."""
    kernel_evals_per_refresh: int = Field(default=6, ge=1)
    """Kernel fits (LOO-CRPS scorings) per refresh, seeds included."""
    proposals_per_round: int = Field(default=3, ge=1)
    population_size: int = Field(default=6, ge=1)
    carry_over: int = Field(default=3, ge=0)
    """Best distinct kernels of a refresh re-scored as seeds of the next one."""
    seed_kernels: list[str] = Field(default_factory=lambda: ["RBF_ARD", "Matern52_ARD"])
    """Expressions every refresh starts from (RBF_ARD is always added: it is the reference)."""
    seed_from_memory: bool = False
    """Also start the first refresh from the kernels earlier Kernel Discovery runs ended on
    where they beat RBF-ARD on their final data (trusted lessons of tasks with the same
    input dimension, recalled from memory; a pipeline's later nodes read the earlier
    nodes'), scored like any seed on evaluations of their own; later refreshes keep one
    only if it was carried. Needs memory. Off by default: before issue 40 every refresh
    re-injected every final kernel (winners or not) and the later tasks of
    ``configs/pipelines/kd-sequence.yaml`` got worse (1 seed); see the README."""
    bases: list[str] = Field(
        default_factory=lambda: [
            "RBF",
            "RBF_ARD",
            "Matern12_ARD",
            "Matern32_ARD",
            "Matern52",
            "Matern52_ARD",
            "RQ",
            "RQ_ARD",
            "Periodic",
            "Linear",
        ]
    )
    """Base kernels the compositional search may use."""
    max_complexity: int = Field(default=3, ge=1)
    """Most base-kernel occurrences in one expression."""
    gp_restarts: int = Field(default=1, ge=1)
    """Random restarts of each kernel's marginal-likelihood fit."""
    max_code_reasks: int = Field(default=2, ge=0)
    """Re-asks when LLM kernel code fails validation."""
    dedup_tol: float = Field(default=2e-2, gt=0)
    """Max |difference| of normalised fitted Gram matrices for two kernels to be duplicates."""
    acquisition: Literal["qLogEI", "qLogNEI"] = "qLogEI"
    """BO acquisition: qLogEI, or qLogNEI (noise-aware: improvement over the posterior at
    the observed points). Its GP-BO baselines use the same one (paired)."""
    acq_restarts: int = Field(default=2, ge=1)
    acq_raw_samples: int = Field(default=64, ge=8)
    selection_score: Literal["kfold", "loo"] = "kfold"
    """How a refresh scores its candidates. ``kfold``: mean held-out CRPS over
    ``selection_folds`` folds of the BO data, each fold's points predicted by a GP whose
    hyperparameters (kernel's, signal variance, noise, mean) were fitted on the other folds
    only. ``loo``: closed-form leave-one-out CRPS with the hyperparameters at the full-data
    fit (the rule before issue 23; optimistic on 10-25 points in 20-100 dims, since the
    hyperparameters saw the point they predict)."""
    selection_folds: int = Field(default=5, ge=2)
    """Folds of ``kfold`` scoring (a seeded split, the same for every candidate of a refresh,
    so two kernels are compared on the same points); at least the number of points is LOO
    with a refit per point."""
    complexity_penalty: float = Field(default=0.01, ge=0.0, le=1.0)
    """Relative score penalty per hyperparameter group beyond the first (a group: one named
    hyperparameter, a scalar or a per-dimension vector; RBF-ARD has one, ``RBF_ARD + Linear``
    five): the score is multiplied by ``1 + complexity_penalty * (groups - 1)``."""
    selection_margin: float = Field(default=0.02, ge=0.0)
    """Relative score improvement over the incumbent kernel (the previous refresh's choice,
    RBF-ARD at first) a challenger needs to replace it (0.0 before issue 23)."""
    selection_se: float = Field(default=1.0, ge=0.0)
    """With ``kfold``: the challenger must also beat the incumbent by this many standard
    errors of the paired per-point held-out CRPS differences (both kernels scored on the
    same points); 0 turns the paired test off. Ignored with ``loo``."""
