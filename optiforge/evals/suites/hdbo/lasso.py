"""Synthetic LassoBench-style problem: tune per-feature weighted-Lasso penalties (d = features).

Definition: data from ``sklearn.datasets.make_regression`` (``n_train + n_val`` samples, ``d``
features, ``n_informative = max(2, d // 10)`` -> a seeded sparse true coefficient vector,
then Gaussian noise of std ``noise_ratio * std(X b_true)`` added (default SNR 1), features standardised on the training split. A point ``x in [0,1]^d``
sets penalties ``lambda_j = lambda_max * 10^(-3 + 3 x_j)`` with
``lambda_max = ||X^T y||_inf / n_train`` (the smallest penalty that zeroes every
coefficient). The weighted Lasso ``min ||y - X b||^2 / (2 n) + sum_j lambda_j |b_j|`` is
solved as a plain ``Lasso(alpha=1)`` on rescaled columns ``X_j / lambda_j`` (then
``b_j = b'_j / lambda_j``). Objective (minimise): validation MSE / var(y_val).
This mirrors LassoBench's synthetic benchmarks (Šehić et al. 2022) but is not their
exact data or scaling.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch
from sklearn.datasets import make_regression
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso
from torch import Tensor


class SyntheticLasso:
    """Weighted-Lasso validation loss as a function of `n x d` unit-cube penalty settings."""

    def __init__(
        self,
        d: int,
        *,
        seed: int = 0,
        n_train: int = 100,
        n_val: int = 100,
        noise_ratio: float = 1.0,
    ) -> None:
        X, y, coef = make_regression(
            n_samples=n_train + n_val,
            n_features=d,
            n_informative=max(2, d // 10),
            noise=0.0,
            coef=True,
            random_state=seed,
        )
        rng = np.random.default_rng(seed + 1)
        y = y + noise_ratio * float(np.std(y)) * rng.standard_normal(y.shape)
        mu, sd = X[:n_train].mean(0), X[:n_train].std(0) + 1e-12
        X = (X - mu) / sd
        self.d, self.coef = d, coef
        self.Xtr, self.ytr = X[:n_train], y[:n_train] - y[:n_train].mean()
        self.Xva, self.yva = X[n_train:], y[n_train:] - y[:n_train].mean()
        self.lambda_max = float(np.abs(self.Xtr.T @ self.ytr).max() / n_train)

    def penalties(self, x: np.ndarray) -> np.ndarray:
        """`d` penalties for one unit-cube point."""
        return self.lambda_max * 10.0 ** (-3.0 + 3.0 * np.clip(x, 0.0, 1.0))

    def fit_coef(self, x: np.ndarray) -> np.ndarray:
        """Weighted-Lasso coefficients (`d`) at unit-cube penalties ``x``."""
        lam = self.penalties(x)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            m = Lasso(alpha=1.0, fit_intercept=False, max_iter=2000, tol=1e-4).fit(
                self.Xtr / lam, self.ytr
            )
        return m.coef_ / lam

    def loss(self, x: np.ndarray) -> float:
        """Validation MSE / var(y_val) at unit-cube penalties ``x``."""
        r = self.yva - self.Xva @ self.fit_coef(x)
        return float(np.mean(r**2) / np.var(self.yva))

    def __call__(self, X: Tensor) -> Tensor:
        Xn = X.detach().cpu().double().numpy()
        return torch.tensor([self.loss(r) for r in Xn], dtype=torch.float64)
