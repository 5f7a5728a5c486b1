"""Standard test functions on the unit cube (numpy, ``m x d`` in, ``(m,)`` out) for the bandit
optimizers' claim tests and benchmarks."""

from __future__ import annotations

from typing import Any

import numpy as np

BRANIN_MIN = (0.397887 - 54.3) / 51.9
"""Minimum of ``branin01`` (standardized Branin)."""

HARTMANN6_MIN = -3.32237

_A6 = np.array(
    [[10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
     [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14]]
)  # fmt: skip
_P6 = 1e-4 * np.array(
    [[1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
     [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381]]
)  # fmt: skip
_ALPHA6 = np.array([1.0, 1.2, 3.0, 3.2])


def branin01(U: np.ndarray) -> np.ndarray:
    """Branin on ``[0, 1]^2`` standardized as ``(b - 54.3) / 51.9``: ``(m,)`` from ``m x 2``."""
    U = np.atleast_2d(U)
    x1, x2 = 15.0 * U[:, 0] - 5.0, 15.0 * U[:, 1]
    b = (x2 - 5.1 / (4 * np.pi**2) * x1**2 + 5 / np.pi * x1 - 6) ** 2
    b = b + 10 * (1 - 1 / (8 * np.pi)) * np.cos(x1) + 10
    return (b - 54.3) / 51.9


def hartmann6(U: np.ndarray) -> np.ndarray:
    """Hartmann-6 on ``[0, 1]^6``: ``(m,)`` from ``m x 6``; minimum ``HARTMANN6_MIN``."""
    U = np.atleast_2d(U)
    return -np.sum(_ALPHA6 * np.exp(-np.sum(_A6 * (U[:, None, :] - _P6) ** 2, axis=-1)), axis=-1)


def noisy_run(opt: Any, f: Any, budget: int, noise_sd: float, seed: int) -> np.ndarray:
    """Run the ask/tell ``opt`` on ``f`` (``m x d -> (m,)``) for ``budget`` evaluations,
    telling it ``f`` plus Gaussian noise of sd ``noise_sd`` (seeded by ``1000 + seed``);
    returns the true values ``f(x_t)``, shape ``(budget,)``, for regret."""
    rng = np.random.default_rng(1000 + seed)
    fx: list[float] = []
    while len(fx) < budget:
        X = opt.ask()
        v = f(X)
        fx.extend(v.tolist())
        opt.tell(X, v + noise_sd * rng.standard_normal(len(v)))
    return np.asarray(fx[:budget])
