"""GP-BTS: parallel GP bandit optimization by batched Thompson sampling, no warm-up phase.

The idea (batched Thompson sampling for GP bandits): every batch draws ``Q`` independent
samples of ``f`` from the current GP posterior and evaluates each sample's minimizer; the
posterior is updated only once per batch. Earlier analyses of parallel GP bandits (GP-BUCB,
hallucinated batches) needed an initial *uncertainty-sampling* phase that spends
evaluations on pure variance reduction before the batched rule is safe; the batched-TS
analysis shows the randomness of independent posterior samples already diversifies a batch,
so that phase can be dropped and the regret over ``T`` evaluations grows by a factor much
smaller than ``Q`` over sequential TS. This module implements exactly that rule; the very
first batch is ``Q`` samples of the GP *prior* (no design, no uncertainty sampling).

Choices the description leaves open (each tested in ``tests/solvers/bandits``):

- Model: exact GP, Matern-5/2 kernel with one lengthscale per input (ARD), on inputs
  mapped to the unit cube and values standardized (mean 0, standard deviation 1); zero
  prior mean in standardized units. Noise: ``noise=None`` (default) fits the noise
  variance; ``noise=0.0`` is the noiseless model (a ``1e-6`` jitter); ``noise > 0`` is a
  known noise variance in the caller's units of ``y``.
- Hyperparameters: MAP estimate (ML-II plus a weak log-normal prior ``log l ~ N(log 0.3, 1)``
  on each unit-cube lengthscale, which keeps fits sane with a handful of points), refitted
  after every batch by L-BFGS-B from the previous optimum and one default start; with
  fewer than 3 points the defaults are used (``l = 0.3``, outputscale 1, noise 1e-3).
  ``lengthscale=<float>`` fixes an isotropic lengthscale instead (outputscale 1).
- Where the samples are drawn: a candidate set of ``n_candidates`` scrambled Sobol points
  (fresh scramble each batch, from the optimizer's seeded generator) plus ``n_local``
  Gaussian perturbations (scales 0.1 and 0.02 of the box) of the 3 observed points with the
  lowest posterior mean. The ``Q`` samples are joint draws of the latent ``f`` over that set
  (one Cholesky factor, ``Q`` normal vectors); each sample's argmin is one batch member.
  Two samples may pick the same point; that is the rule, not an error.
- ``recommend()``: the observed point with the lowest posterior mean (the best observed
  value in the noiseless case, a denoised choice in the noisy one).

Shapes: ``ask()`` returns ``(batch, d)``; ``tell`` takes ``(batch, d)`` and ``(batch,)``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.linalg import cho_solve, cholesky, solve_triangular
from scipy.optimize import minimize as sp_minimize
from scipy.stats import qmc

from optiforge.errors import ConfigError
from optiforge.solvers.asktell import Array, AskTellOptimizer, Bounds, Feedback, register

_SQRT5 = math.sqrt(5.0)
_LS_PRIOR_MEAN = math.log(0.3)
_LS_PRIOR_SD = 1.0


def matern52(A: Array, B: Array, lengthscale: Array) -> Array:
    """Matern-5/2 correlation between rows of ``A`` (``n x d``) and ``B`` (``m x d``): ``n x m``."""
    a, b = A / lengthscale, B / lengthscale
    r2 = np.sum(a * a, axis=1)[:, None] + np.sum(b * b, axis=1)[None, :] - 2.0 * (a @ b.T)
    s = _SQRT5 * np.sqrt(np.maximum(r2, 0.0))
    return (1.0 + s + s * s / 3.0) * np.exp(-s)


class MaternGP:
    """Exact zero-mean GP on unit-cube inputs and standardized targets (numpy, float64).

    Args:
        fixed_noise: noise variance in standardized units, or None to fit it.
        fixed_lengthscale: an isotropic lengthscale to keep (outputscale 1), or None to fit.
    """

    def __init__(
        self, dim: int, *, fixed_noise: float | None, fixed_lengthscale: float | None
    ) -> None:
        self.dim = dim
        self.fixed_noise = fixed_noise
        self.fixed_lengthscale = fixed_lengthscale
        ls0 = 0.3 if fixed_lengthscale is None else fixed_lengthscale
        self.lengthscale = np.full(dim, ls0)
        self.outputscale = 1.0
        self.noise = 1e-3 if fixed_noise is None else fixed_noise
        self.U = np.zeros((0, dim))
        self.z = np.zeros(0)
        self._chol: Array | None = None
        self._sqdiff = np.zeros((dim, 0, 0))
        self._alpha: Array | None = None

    # -- fitting -------------------------------------------------------------------------
    def _unpack(self, theta: Array) -> tuple[Array, float, float]:
        ls = np.exp(theta[: self.dim])
        os_ = float(np.exp(theta[self.dim]))
        noise = float(np.exp(theta[self.dim + 1])) if self.fixed_noise is None else self.fixed_noise
        return ls, os_, noise

    def _neg_log_posterior(self, theta: Array) -> tuple[float, Array]:
        """Negative log marginal likelihood plus the lengthscale prior, and its gradient."""
        ls, os_, noise = self._unpack(theta)
        n = self.z.size
        D = self._sqdiff  # d x n x n squared coordinate differences
        w = 1.0 / ls**2
        r2 = np.tensordot(w, D, axes=1)
        s = _SQRT5 * np.sqrt(np.maximum(r2, 0.0))
        e = np.exp(-s)
        Kf = os_ * (1.0 + s + s * s / 3.0) * e
        K = Kf + (noise + 1e-8) * np.eye(n)
        try:
            L = cholesky(K, lower=True)
        except np.linalg.LinAlgError:
            return 1e10, np.zeros_like(theta)
        a = cho_solve((L, True), self.z)
        dlp = theta[: self.dim] - _LS_PRIOR_MEAN
        value = (
            0.5 * float(self.z @ a)
            + float(np.sum(np.log(np.diag(L))))
            + 0.5 * float(np.sum((dlp / _LS_PRIOR_SD) ** 2))
        )
        # d nll / d theta_j = 0.5 tr((K^-1 - a a^T) dK/dtheta_j)
        M = cho_solve((L, True), np.eye(n)) - np.outer(a, a)
        dk_ds = os_ * (5.0 / 3.0) * (1.0 + s) * e  # times D_k / l_k^2 gives dK/dlog l_k
        grad = np.empty_like(theta)
        grad[: self.dim] = 0.5 * np.einsum("ij,kij->k", M * dk_ds, D) * w
        grad[: self.dim] += dlp / _LS_PRIOR_SD**2
        grad[self.dim] = 0.5 * float(np.sum(M * Kf))
        if self.fixed_noise is None:
            grad[self.dim + 1] = 0.5 * noise * float(np.trace(M))
        return value, grad

    def fit(self, U: Array, z: Array) -> None:
        """Condition on ``U`` (``n x d`` in the unit cube) and ``z`` (``n``, standardized)."""
        self.U, self.z = U, z
        if self.fixed_lengthscale is None and z.size >= 3:
            self._sqdiff = np.moveaxis((U[:, None, :] - U[None, :, :]) ** 2, -1, 0)
            lo = [math.log(0.01)] * self.dim + [math.log(0.05)]
            hi = [math.log(5.0)] * self.dim + [math.log(20.0)]
            if self.fixed_noise is None:
                lo.append(math.log(1e-6))
                hi.append(math.log(1.0))
            box = list(zip(lo, hi, strict=True))
            starts = [self._theta(), self._theta(default=True)]
            best: tuple[float, Array] | None = None
            for t0 in starts:
                t0 = np.clip(t0, lo, hi)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    res = sp_minimize(
                        self._neg_log_posterior,
                        t0,
                        jac=True,
                        method="L-BFGS-B",
                        bounds=box,
                        options={"maxiter": 60},
                    )
                if best is None or res.fun < best[0]:
                    best = (float(res.fun), res.x)
            assert best is not None
            self.lengthscale, self.outputscale, self.noise = self._unpack(best[1])
        K = self._train_cov()
        jitter = 0.0
        for _ in range(6):
            try:
                self._chol = cholesky(K + jitter * np.eye(z.size), lower=True)
                break
            except np.linalg.LinAlgError:
                jitter = max(1e-8, 10 * jitter)
        else:  # pragma: no cover - a 1e-3 jitter on a unit-scale kernel always factors
            raise np.linalg.LinAlgError("GP covariance is not positive definite")
        self._alpha = cho_solve((self._chol, True), z)

    def _theta(self, default: bool = False) -> Array:
        if default:
            parts = [np.full(self.dim, math.log(0.3)), [0.0]]
            if self.fixed_noise is None:
                parts.append([math.log(1e-3)])
        else:
            parts = [np.log(self.lengthscale), [math.log(self.outputscale)]]
            if self.fixed_noise is None:
                parts.append([math.log(self.noise)])
        return np.concatenate([np.asarray(p, dtype=np.float64) for p in parts])

    def _train_cov(self) -> Array:
        n = self.z.size
        return self.outputscale * matern52(self.U, self.U, self.lengthscale) + (
            self.noise + 1e-8
        ) * np.eye(n)

    # -- prediction ----------------------------------------------------------------------
    def posterior(self, V: Array, full_cov: bool = False) -> tuple[Array, Array]:
        """Mean (``m``) and covariance (``m x m``) or variance (``m``) of latent ``f`` at ``V``."""
        kvv_diag = np.full(V.shape[0], self.outputscale)
        if self.z.size == 0:
            mean = np.zeros(V.shape[0])
            if full_cov:
                return mean, self.outputscale * matern52(V, V, self.lengthscale)
            return mean, kvv_diag
        assert self._chol is not None and self._alpha is not None
        Kuv = self.outputscale * matern52(self.U, V, self.lengthscale)
        mean = Kuv.T @ self._alpha
        W = solve_triangular(self._chol, Kuv, lower=True)
        if full_cov:
            return mean, self.outputscale * matern52(V, V, self.lengthscale) - W.T @ W
        return mean, np.maximum(kvv_diag - np.sum(W * W, axis=0), 1e-12)


def joint_samples(mean: Array, cov: Array, n: int, rng: np.random.Generator) -> Array:
    """``n`` joint Gaussian draws (``m x n``) from ``N(mean, cov)``; jitter grows until PD."""
    m = mean.size
    scale = max(float(np.mean(np.diag(cov))), 1e-12)
    jitter = 1e-10 * scale
    for _ in range(8):
        try:
            L = cholesky(cov + jitter * np.eye(m), lower=True)
            return mean[:, None] + L @ rng.standard_normal((m, n))
        except np.linalg.LinAlgError:
            jitter *= 10
    # Last resort: eigen-decomposition with negative eigenvalues clipped.
    w, Q = np.linalg.eigh(cov)
    return mean[:, None] + (Q * np.sqrt(np.maximum(w, 0.0))) @ rng.standard_normal((m, n))


@register
class GPBatchedThompson(AskTellOptimizer):
    """GP-BTS: ``batch`` independent GP posterior samples per round, each sample's argmin.

    Args:
        batch: ``Q``, points per ask (``ask()`` is ``(Q, d)``).
        noise: ``None`` to fit the noise variance, ``0.0`` for noiseless, or a known
            variance in the units of ``y``.
        lengthscale: fix an isotropic unit-cube lengthscale instead of refitting.
        n_candidates: Sobol candidates per batch (the sample paths are drawn there).
        n_local: local perturbations of the best 3 points added to the candidates.
    """

    name = "gp_bts"
    box = True
    summary = (
        "GP-BTS: batched Thompson sampling for GP bandits (Q joint posterior samples per "
        "batch, argmin of each), no initial uncertainty-sampling phase"
    )

    def __init__(
        self,
        dim: int,
        *,
        bounds: Bounds | None = None,
        seed: int = 0,
        batch: int = 1,
        noise: float | None = None,
        lengthscale: float | None = None,
        n_candidates: int = 512,
        n_local: int = 128,
    ) -> None:
        super().__init__(dim, bounds=bounds, seed=seed)
        if batch < 1:
            raise ConfigError(f"gp_bts: batch must be >= 1, got {batch}")
        if noise is not None and noise < 0:
            raise ConfigError(f"gp_bts: noise variance must be >= 0, got {noise}")
        if lengthscale is not None and lengthscale <= 0:
            raise ConfigError(f"gp_bts: lengthscale must be > 0, got {lengthscale}")
        if n_candidates < 1 or n_local < 0:
            raise ConfigError("gp_bts: n_candidates >= 1 and n_local >= 0 required")
        self.batch = int(batch)
        self.noise = noise
        self.n_candidates = int(n_candidates)
        self.n_local = int(n_local)
        self.gp = MaternGP(
            dim,
            fixed_noise=None if noise is None else max(noise, 1e-6),
            fixed_lengthscale=lengthscale,
        )
        self._y_mean, self._y_std = 0.0, 1.0

    # -- unit-cube maps ------------------------------------------------------------------
    def _to_unit(self, X: Array) -> Array:
        assert self.lower is not None and self.upper is not None
        return (X - self.lower) / (self.upper - self.lower)

    def _from_unit(self, U: Array) -> Array:
        assert self.lower is not None and self.upper is not None
        return self.lower + U * (self.upper - self.lower)

    def _candidates(self) -> Array:
        """``n_candidates + n_local`` unit-cube points (``m x d``)."""
        sob = qmc.Sobol(self.dim, scramble=True, seed=self.rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # balance warning for non powers of two
            C = sob.random(self.n_candidates)
        if self.y.size and self.n_local:
            U = self._to_unit(self.X)
            mean, _ = self.gp.posterior(U)
            centers = U[np.argsort(mean)[:3]]
            per = self.n_local // 2
            local = []
            for sd, k in ((0.1, per), (0.02, self.n_local - per)):
                idx = self.rng.integers(0, len(centers), size=k)
                local.append(centers[idx] + sd * self.rng.standard_normal((k, self.dim)))
            C = np.vstack([C, np.clip(np.vstack(local), 0.0, 1.0)])
        return C

    # -- ask / tell ----------------------------------------------------------------------
    def _ask(self) -> Array:
        C = self._candidates()
        mean, cov = self.gp.posterior(C, full_cov=True)
        S = joint_samples(mean, cov, self.batch, self.rng)  # m x Q
        return self._from_unit(C[np.argmin(S, axis=0)])

    def _tell(self, X: Array, y: Array, feedback: Feedback) -> None:
        self._y_mean = float(np.mean(self.y))
        std = float(np.std(self.y))
        self._y_std = std if std > 1e-12 else 1.0
        if self.noise is not None:
            self.gp.fixed_noise = max(self.noise / self._y_std**2, 1e-6)
            self.gp.noise = self.gp.fixed_noise
        self.gp.fit(self._to_unit(self.X), (self.y - self._y_mean) / self._y_std)

    # -- answers -------------------------------------------------------------------------
    def predict(self, X: Array) -> tuple[Array, Array]:
        """Posterior mean and standard deviation of ``f`` at ``X`` (``m x d``), each ``(m,)``."""
        X = np.asarray(X, dtype=np.float64).reshape(-1, self.dim)
        mean, var = self.gp.posterior(self._to_unit(X))
        return self._y_mean + self._y_std * mean, self._y_std * np.sqrt(var)

    def recommend(self) -> Array:
        """The observed point with the lowest posterior mean, ``(d,)``."""
        if self.y.size == 0:
            raise RuntimeError("gp_bts: nothing told yet")
        mean, _ = self.predict(self.X)
        return self.X[int(np.argmin(mean))].copy()


__all__ = ["GPBatchedThompson", "MaternGP", "joint_samples", "matern52"]
