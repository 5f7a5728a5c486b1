"""Nonlinear parametric BO: a regularized MLP surrogate with kernel-based confidence bounds.

The idea (Bayesian optimization with nonlinear parametric models): replace the GP by a
*parametric* nonlinear surrogate ``f_theta`` (here a small MLP) fitted by regularized
least squares on the adaptively collected data,
``theta_hat = argmin sum_i (f_theta(x_i) - y_i)^2 + lam ||theta - theta_c||^2``, and get
confidence bounds from a kernel over *parameter space*: the gradient features
``g(x) = d f_theta(x) / d theta`` at ``theta_hat`` define ``k(x, x') = g(x)^T g(x')`` and

    sigma(x)^2 = lam g(x)^T (G^T G + lam I)^-1 g(x) = k(x, x) - k_x^T (K + lam I)^-1 k_x,

(``G``: ``n x p`` features of the data, ``K = G G^T``), the NeuralUCB-style width, which is
the posterior standard deviation of the model linearized at ``theta_hat``. The bound is
``f_theta_hat(x) +- beta c sigma(x)``. The policy is the *randomized regularized* one:
each round fit a random model (perturbed regularization centre and perturbed targets) and
evaluate its minimizer; in the linear-Gaussian case that minimizer is a Thompson sample.

Choices the description leaves open (each tested in ``tests/solvers/bandits``):

- Surrogate: MLP ``d -> hidden -> hidden -> 1`` with tanh units, on inputs mapped to
  ``[-1, 1]^d`` and standardized values; weights drawn ``N(0, 1/fan_in)`` with the first
  layer times ``input_scale`` (default 3: the prior functions vary on a scale of about a
  third of the box, like a GP lengthscale), biases 0. Written in numpy with hand-derived
  Jacobians (``p = (d + 1) h + (h + 1) h + h + 1`` parameters; ``p = 1313`` for ``d = 6,
  h = 32``) and fitted with L-BFGS (``maxiter`` 200).
- ``input_scale=None`` picks it from ``input_scales`` after each tell by the evidence of
  the linearized model (the parametric analog of ML-II lengthscale fitting). Measured worse
  on Hartmann-6 (mean regret 1.42 vs 0.79 over 3 seeds at 30 evaluations), so it is not
  the default.
- ``lam`` (``reg``) multiplies the squared distance to the centre, in the standardized
  units of the loss above; default 0.01 (0.1 and 1 fitted Branin's data visibly worse).
- The scale ``c`` of the bound is the maximum-likelihood scale of the linearized model:
  if ``y ~ N(0, c^2 (K + lam I))`` (a Gaussian-prior ridge regression in the features
  ``g``), the ML estimate is ``c^2 = y^T (K + lam I)^-1 y / n``, which equals the minimized
  objective ``(sum_i r_i^2 + lam ||theta_hat - theta_c||^2) / (n lam)``; the network's own
  minimized objective is used (``c = 1`` with fewer than 3 points). Tried and dropped: an
  approximate leave-one-out scale (one Gauss-Newton step per left-out point), which
  overstated the width by ~2.7x on Hartmann-6 and understated it by ~2x on Branin.
- Randomized policy (``policy="randomized"``, default): the centre ``theta_c`` is a fresh
  draw from the initialization distribution every round with the output layer times
  ``prior_scale`` (a random prior function; default 3, chosen from {1, 2, 3} on Branin and
  Hartmann-6: 1 and 2 got stuck in Branin's boundary basin, regret 0.03, where 3 reached
  0.003, in 2 of 3 seeds), and the targets get ``N(0, target_noise^2)`` perturbations (standardized units;
  default 0, the noiseless case; set it to the noise level for noisy ``f``). The model is
  trained from its centre. In the linear-Gaussian case (centre ~ prior, targets ~ noise)
  this minimizer is exactly a Thompson sample. ``policy="lcb"`` instead minimizes
  ``mean - beta c sigma`` of the nominal model over the candidates (centre = the fixed
  seeded draw ``theta0``, unperturbed targets).
- Minimizing a model: ``n_candidates`` Sobol points plus ``n_local`` perturbations of the 3
  best observed points, then L-BFGS-B from the 4 best candidates (randomized policy).
- Start: ``n_init`` scrambled Sobol points (default ``d + 1``). ``recommend()``: the best
  observed point.

Reproducibility: a seeded run repeats exactly on one machine and is independent of the BLAS
thread count, but not of the CPU: OpenBLAS (``DYNAMIC_ARCH``) picks its kernels per CPU, the
MLP's products differ in the last bits, and 30 sequential fit-then-argmin decisions amplify
that into a different run (Branin mean regret over seeds 0-2: 2.6e-3 with the SkylakeX
kernels, 1.18e-2 with ``OPENBLAS_CORETYPE=Haswell``). Compare methods over many seeds
(``tests/solvers/bandits/test_param_bo.py`` uses 12 and paired intervals). More BLAS
threads only cost CPU here (10x at 2 threads for these small products).

Shapes: ``ask()`` returns ``(batch, d)``; ``predict(X)`` takes ``(m, d)`` and returns the
mean and ``c sigma`` (``(m,)`` each, in the units of ``y``).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.optimize import minimize as sp_minimize
from scipy.stats import qmc

from optiforge.errors import ConfigError
from optiforge.solvers.asktell import Array, AskTellOptimizer, Bounds, Feedback, register


class TanhMLP:
    """``d -> h -> h -> 1`` tanh MLP on a flat parameter vector ``theta`` (``p,``), numpy."""

    def __init__(self, dim: int, hidden: int, input_scale: float = 1.0) -> None:
        self.dim, self.hidden, self.input_scale = dim, hidden, input_scale
        d, h = dim, hidden
        self.shapes: list[tuple[int, ...]] = [(d, h), (h,), (h, h), (h,), (h,), ()]
        self.sizes = [int(np.prod(s)) for s in self.shapes]
        self.n_params = sum(self.sizes)

    def init(self, rng: np.random.Generator, out_scale: float = 1.0) -> Array:
        """A draw of ``theta`` (``p,``): weights ``N(0, 1/fan_in)`` (first layer times
        ``input_scale``), biases 0."""
        d, h = self.dim, self.hidden
        parts = [
            self.input_scale * rng.standard_normal(d * h) / math.sqrt(d),
            np.zeros(h),
            rng.standard_normal(h * h) / math.sqrt(h),
            np.zeros(h),
            out_scale * rng.standard_normal(h) / math.sqrt(h),
            np.zeros(1),
        ]
        return np.concatenate(parts)

    def _unpack(self, theta: Array) -> list[Array]:
        out, i = [], 0
        for shape, size in zip(self.shapes, self.sizes, strict=True):
            out.append(theta[i : i + size].reshape(shape))
            i += size
        return out

    def _forward(self, theta: Array, Z: Array) -> tuple[Array, Array, Array]:
        W1, b1, W2, b2, w3, b3 = self._unpack(theta)
        h1 = np.tanh(Z @ W1 + b1)
        h2 = np.tanh(h1 @ W2 + b2)
        return h2 @ w3 + b3, h1, h2

    def __call__(self, theta: Array, Z: Array) -> Array:
        """Outputs ``(m,)`` at inputs ``Z`` (``m x d``)."""
        return self._forward(theta, Z)[0]

    def _deltas(self, theta: Array, h1: Array, h2: Array) -> tuple[Array, Array]:
        _, _, W2, _, w3, _ = self._unpack(theta)
        d2 = w3 * (1.0 - h2 * h2)  # m x h: d out / d pre2
        d1 = (d2 @ W2.T) * (1.0 - h1 * h1)  # m x h: d out / d pre1
        return d1, d2

    def jacobian(self, theta: Array, Z: Array) -> Array:
        """``d out / d theta`` at each row of ``Z``: ``m x p``."""
        _, h1, h2 = self._forward(theta, Z)
        d1, d2 = self._deltas(theta, h1, h2)
        m = Z.shape[0]
        return np.concatenate(
            [
                (Z[:, :, None] * d1[:, None, :]).reshape(m, -1),
                d1,
                (h1[:, :, None] * d2[:, None, :]).reshape(m, -1),
                d2,
                h2,
                np.ones((m, 1)),
            ],
            axis=1,
        )

    def value_and_vjp(self, theta: Array, Z: Array, v: Array) -> tuple[Array, Array]:
        """Outputs ``(m,)`` and ``J^T v`` (``p,``) for weights ``v`` (``m,``)."""
        out, h1, h2 = self._forward(theta, Z)
        return out, self._vjp(theta, Z, h1, h2, v)

    def squared_loss(self, theta: Array, Z: Array, t: Array) -> tuple[float, Array]:
        """``sum (out - t)^2`` and its gradient (``p,``), one forward and one backward pass."""
        out, h1, h2 = self._forward(theta, Z)
        r = out - t
        return float(r @ r), self._vjp(theta, Z, h1, h2, 2.0 * r)

    def _vjp(self, theta: Array, Z: Array, h1: Array, h2: Array, v: Array) -> Array:
        d1, d2 = self._deltas(theta, h1, h2)
        d1v, d2v = d1 * v[:, None], d2 * v[:, None]
        return np.concatenate(
            [
                (Z.T @ d1v).reshape(-1),
                d1v.sum(axis=0),
                (h1.T @ d2v).reshape(-1),
                d2v.sum(axis=0),
                h2.T @ v,
                np.array([v.sum()]),
            ]
        )

    def input_grad(self, theta: Array, Z: Array) -> tuple[Array, Array]:
        """Outputs ``(m,)`` and ``d out / d Z`` (``m x d``)."""
        out, h1, h2 = self._forward(theta, Z)
        d1, _ = self._deltas(theta, h1, h2)
        W1 = self._unpack(theta)[0]
        return out, d1 @ W1.T


def fit_regularized(
    net: TanhMLP, Z: Array, t: Array, centre: Array, reg: float, start: Array, maxiter: int
) -> Array:
    """``argmin_theta sum (net(theta, Z) - t)^2 + reg ||theta - centre||^2`` by L-BFGS."""

    def loss(theta: Array) -> tuple[float, Array]:
        sq, g = net.squared_loss(theta, Z, t)
        diff = theta - centre
        return sq + reg * float(diff @ diff), g + 2.0 * reg * diff

    res = sp_minimize(
        loss, start, jac=True, method="L-BFGS-B", options={"maxiter": maxiter, "gtol": 1e-9}
    )
    return np.asarray(res.x)


@register
class NeuralParametricBO(AskTellOptimizer):
    """BO with a regularized MLP surrogate, gradient-kernel bounds and a randomized policy.

    Args:
        batch: points per ask (each one from its own random model).
        hidden: width of both hidden layers.
        reg: ``lam``, the regularization weight (standardized units).
        policy: ``"randomized"`` (minimize a trained random model) or ``"lcb"``.
        beta: bound multiplier for ``policy="lcb"``.
        target_noise: standard deviation of the target perturbations (standardized).
        n_init: Sobol points before the model is used (default ``d + 1``).
        n_candidates, n_local: candidate set for minimizing a model.
        maxiter: L-BFGS iterations per fit.
        input_scale: first-layer weight scale, or None to pick one of ``input_scales`` by
            the linearized model's evidence after each tell.
        prior_scale: output-layer scale of the random centres (randomized policy).
    """

    name = "param_bo"
    box = True
    summary = (
        "nonlinear parametric BO: regularized MLP surrogate, confidence bounds from the "
        "gradient (parameter-space) kernel, randomized regularized policy"
    )

    def __init__(
        self,
        dim: int,
        *,
        bounds: Bounds | None = None,
        seed: int = 0,
        batch: int = 1,
        hidden: int = 32,
        reg: float = 0.01,
        policy: str = "randomized",
        beta: float = 2.0,
        target_noise: float = 0.0,
        n_init: int | None = None,
        n_candidates: int = 1024,
        n_local: int = 256,
        maxiter: int = 200,
        input_scale: float | None = 3.0,
        input_scales: tuple[float, ...] = (1.0, 2.0, 3.0, 5.0),
        prior_scale: float = 3.0,
    ) -> None:
        super().__init__(dim, bounds=bounds, seed=seed)
        if batch < 1 or hidden < 1 or reg <= 0 or beta < 0 or target_noise < 0:
            raise ConfigError(
                "param_bo: need batch >= 1, hidden >= 1, reg > 0, beta >= 0, target_noise >= 0"
            )
        if policy not in ("randomized", "lcb"):
            raise ConfigError(f"param_bo: policy must be 'randomized' or 'lcb', got {policy!r}")
        if n_candidates < 1 or n_local < 0 or maxiter < 1:
            raise ConfigError("param_bo: n_candidates >= 1, n_local >= 0, maxiter >= 1 required")
        self.batch, self.reg, self.policy, self.beta = int(batch), float(reg), policy, float(beta)
        self.target_noise = float(target_noise)
        self.n_init = dim + 1 if n_init is None else int(n_init)
        if self.n_init < 1:
            raise ConfigError("param_bo: n_init must be >= 1")
        self.n_candidates, self.n_local, self.maxiter = int(n_candidates), int(n_local), maxiter
        scales = (input_scale,) if input_scale is not None else tuple(input_scales)
        if not scales or min(scales) <= 0 or prior_scale <= 0:
            raise ConfigError("param_bo: input scales and prior_scale must be > 0")
        self.input_scales = tuple(float(v) for v in scales)
        self.net = TanhMLP(dim, hidden, self.input_scales[min(2, len(scales) - 1)])
        self.prior_scale = float(prior_scale)
        self._theta0_unit = TanhMLP(dim, hidden, 1.0).init(self.rng)
        self._nominal: tuple[int, Array, float] | None = None  # (n told, theta_hat, c)
        self._y_mean, self._y_std = 0.0, 1.0
        sob = qmc.Sobol(dim, scramble=True, seed=self.rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._init_design = sob.random(self.n_init)

    # -- maps ----------------------------------------------------------------------------
    def _to_unit(self, X: Array) -> Array:
        assert self.lower is not None and self.upper is not None
        return (X - self.lower) / (self.upper - self.lower)

    def _from_unit(self, U: Array) -> Array:
        assert self.lower is not None and self.upper is not None
        return self.lower + np.clip(U, 0.0, 1.0) * (self.upper - self.lower)

    def _data(self) -> tuple[Array, Array]:
        """Network inputs ``Z`` (``n x d`` in ``[-1, 1]``) and standardized targets (``n,``)."""
        return 2.0 * self._to_unit(self.X) - 1.0, (self.y - self._y_mean) / self._y_std

    # -- the nominal model and its bound -------------------------------------------------
    @property
    def theta0(self) -> Array:
        """The nominal centre: the seeded initial draw at the current input scale (``p,``)."""
        return self._with_input_scale(self._theta0_unit, self.net.input_scale)

    def _with_input_scale(self, theta_unit: Array, scale: float) -> Array:
        theta = theta_unit.copy()
        theta[: self.net.sizes[0]] *= scale
        return theta

    def log_evidence(self, scale: float) -> float:
        """Log marginal likelihood of the data under the linearized model at the centre drawn
        with first-layer scale ``scale``: ``y ~ N(0, c^2 (K + lam I))``, ``c`` profiled out."""
        Z, t = self._data()
        n = t.size
        G = self.net.jacobian(self._with_input_scale(self._theta0_unit, scale), Z)
        L = np.linalg.cholesky(G @ G.T + self.reg * np.eye(n))
        w = np.linalg.solve(L, t)
        return -0.5 * n * math.log(max(float(w @ w) / n, 1e-300)) - float(
            np.sum(np.log(np.diag(L)))
        )

    def nominal(self) -> tuple[Array, float]:
        """``theta_hat`` of the nominal fit (centre ``theta0``) and the bound scale ``c``."""
        n = self.y.size
        if self._nominal is not None and self._nominal[0] == n:
            return self._nominal[1], self._nominal[2]
        if n == 0:
            return self.theta0, 1.0
        Z, t = self._data()
        start = self._nominal[1] if self._nominal is not None else self.theta0
        theta = fit_regularized(self.net, Z, t, self.theta0, self.reg, start, self.maxiter)
        r = self.net(theta, Z) - t
        diff = theta - self.theta0
        objective = float(r @ r) + self.reg * float(diff @ diff)
        c = float(np.clip(math.sqrt(objective / (n * self.reg)), 1e-3, 1e3)) if n >= 3 else 1.0
        self._nominal = (n, theta, c)
        return theta, c

    def _sigma(self, theta: Array, Zq: Array) -> Array:
        """``sigma(x)`` (``m,``) of the linearized model at ``theta``, standardized units."""
        Z, _ = self._data()
        Gq = self.net.jacobian(theta, Zq)
        kqq = np.sum(Gq * Gq, axis=1)
        if Z.shape[0] == 0:
            return np.sqrt(kqq)
        G = self.net.jacobian(theta, Z)
        K = G @ G.T
        Kq = G @ Gq.T  # n x m
        L = np.linalg.cholesky(K + self.reg * np.eye(K.shape[0]))
        W = np.linalg.solve(L, Kq)
        return np.sqrt(np.maximum(kqq - np.sum(W * W, axis=0), 1e-12))

    def predict(self, X: Array) -> tuple[Array, Array]:
        """Mean and ``c sigma`` of the nominal model at ``X`` (``m x d``), each ``(m,)``.

        The confidence band is ``mean +- beta * (c sigma)``.
        """
        X = np.asarray(X, dtype=np.float64).reshape(-1, self.dim)
        theta, c = self.nominal()
        Zq = 2.0 * self._to_unit(X) - 1.0
        mean = self.net(theta, Zq)
        sd = c * self._sigma(theta, Zq)
        return self._y_mean + self._y_std * mean, self._y_std * sd

    # -- ask / tell ----------------------------------------------------------------------
    def _candidates(self) -> Array:
        sob = qmc.Sobol(self.dim, scramble=True, seed=self.rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            C = sob.random(self.n_candidates)
        if self.n_local:
            centres = self._to_unit(self.X[np.argsort(self.y)[:3]])
            idx = self.rng.integers(0, len(centres), size=self.n_local)
            sd = np.where(np.arange(self.n_local) % 2 == 0, 0.1, 0.02)[:, None]
            local = centres[idx] + sd * self.rng.standard_normal((self.n_local, self.dim))
            C = np.vstack([C, np.clip(local, 0.0, 1.0)])
        return C

    def _random_model(self) -> Array:
        """A trained random model: fresh centre, perturbed targets, trained from its centre."""
        Z, t = self._data()
        centre = self.net.init(self.rng, self.prior_scale)
        if self.target_noise > 0:
            t = t + self.target_noise * self.rng.standard_normal(t.size)
        return fit_regularized(self.net, Z, t, centre, self.reg, centre, self.maxiter)

    def _minimize_model(self, theta: Array) -> Array:
        """Unit-cube minimizer (``d,``) of the network ``theta`` over the box."""
        C = self._candidates()
        vals = self.net(theta, 2.0 * C - 1.0)
        best_u, best_v = C[int(np.argmin(vals))], float(np.min(vals))

        def obj(u: Array) -> tuple[float, Array]:
            out, gz = self.net.input_grad(theta, (2.0 * u - 1.0)[None, :])
            return float(out[0]), 2.0 * gz[0]

        for u0 in C[np.argsort(vals)[:4]]:
            res = sp_minimize(
                obj, u0, jac=True, method="L-BFGS-B", bounds=[(0.0, 1.0)] * self.dim,
                options={"maxiter": 50},
            )  # fmt: skip
            if float(res.fun) < best_v:
                best_u, best_v = np.asarray(res.x), float(res.fun)
        return np.clip(best_u, 0.0, 1.0)

    def _ask(self) -> Array:
        n = self.y.size
        if n < self.n_init:
            return self._from_unit(self._init_design[n : n + self.batch])
        if self.policy == "lcb":
            theta, c = self.nominal()
            C = self._candidates()
            Zc = 2.0 * C - 1.0
            score = self.net(theta, Zc) - self.beta * c * self._sigma(theta, Zc)
            return self._from_unit(C[np.argsort(score)[: self.batch]])
        return self._from_unit(
            np.vstack([self._minimize_model(self._random_model()) for _ in range(self.batch)])
        )

    def _tell(self, X: Array, y: Array, feedback: Feedback) -> None:
        self._y_mean = float(np.mean(self.y))
        std = float(np.std(self.y))
        self._y_std = std if std > 1e-12 else 1.0
        if len(self.input_scales) > 1 and self.y.size >= 3:
            best = max(self.input_scales, key=self.log_evidence)
            if best != self.net.input_scale:
                self.net.input_scale = best
                self._nominal = None  # the nominal centre moved


__all__ = ["NeuralParametricBO", "TanhMLP", "fit_regularized"]
