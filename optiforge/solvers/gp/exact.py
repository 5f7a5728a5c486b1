"""Exact GP regression with a pluggable ``KernelSpec``; closed-form LOO and Gaussian CRPS.

Model: ``y = m + f(x) + eps``, ``f ~ GP(0, outputscale * k(x, x'))``, ``eps ~ N(0, noise)``.
All computation is float64. Hyperparameters are fitted by maximising the exact log
marginal likelihood with scipy's L-BFGS-B on log-transformed positive values (the box
bounds of each ``HyperSpec`` become log-space bounds), from the declared initial values
plus ``n_restarts`` seeded log-uniform random starts. No hyperpriors are used.

The bounds of ``outputscale``, ``noise`` and ``mean`` scale with the data: the outputscale
lives in ``[1e-3, 1e2] * var(y)``, the noise in ``[noise_floor, 1] * var(y)``
(``noise_floor`` default 1e-6, the floor that keeps ``K_y`` well conditioned), and the
mean in ``[min y, max y]``.

Cost. Each objective evaluation is one Cholesky of ``K_y`` plus ``K_y^-1``
(``cholesky_inverse``), both ``O(n^3)``, and one vector-Jacobian product through the
kernel only: the gradient is ``sum_ij G_ij dK_ij/dtheta`` with
``G = (K_y^-1 - alpha alpha^T) / 2`` (R&W eq. 5.9), not autograd through the Cholesky
(4x slower at n=1000). Above ``dense_max_n`` points (default ``DENSE_MAX_N``) the fit
switches to **subset of data**: the hyperparameters are fitted on ``dense_max_n``
points drawn without replacement (seeded by ``seed``), then refined on all points by
at most ``refine_iter`` L-BFGS-B iterations from that optimum; the model is then
conditioned on all points exactly (predictions, ``log_marginal_likelihood``, LOO are
exact at those hyperparameters). ``fit_mode_`` says which path ran. Only the
hyperparameters are approximate. Measured against the dense fit (``benchmarks/gp_fit.py``,
RBF-ARD, d=25, the smooth test function there): see ``SUBSET_ERROR`` below; the test
``tests/solvers/gp/test_exact.py::test_subset_of_data_fit_error_bound`` pins the bound at
small n with the threshold lowered.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from scipy.optimize import minimize
from torch import Tensor

from optiforge.errors import SolverError
from optiforge.solvers.gp.kernels import KernelSpec

_DT = torch.float64

#: Above this many points the hyperparameters are fitted on a subset (see module docs).
#: Measured (``benchmarks/gp_fit.py``, RBF-ARD, d=25, 1 thread, one start, 2 cores, load
#: 1.5-2.1): the dense fit's time over BoTorch's is 0.75 / 0.40 / 0.82 / 0.90 / 0.35 at
#: n = 100 / 300 / 800 / 1000 / 2000 (before the kernel-only gradient: 0.76 / 0.60 / 1.67
#: / 2.14 / 1.32). Dense never lost in that range, but its margin is thinnest at 800-1000
#: (GPyTorch leaves Cholesky above 800; its CG fit takes 8x as long at 2000
#: as at 1000), so the subset path starts above 1000, where it is faster than dense
#: (n=2000: 34.6 s vs 41.3 s; BoTorch 116.7 s) within ``SUBSET_ERROR``. A subset of 800
#: with 15 refinement iterations was tried at n=1000 and rejected: NLL/pt +0.0038 over
#: dense (and over BoTorch's), predictive variance off by up to 2.5x.
DENSE_MAX_N = 1000
#: Full-data L-BFGS-B iterations after the subset fit (15 left n=2000 at NLL/pt +0.0008,
#: mean 0.067 sd, variance ratio up to e^0.38; 30 gives ``SUBSET_ERROR``).
REFINE_ITER = 30
#: Measured error of the subset-of-data fit (the defaults) against the dense fit,
#: ``benchmarks/gp_fit.py`` n=2000, d=25: exact NLL per point +0.0001 (1.0859 vs 1.0858;
#: BoTorch's fit 1.0854), predictive mean max |difference| 0.024 y-sd and variance max
#: |log ratio| 0.188 (a factor 1.21) over 500 new points. At n=160, d=3 (threshold 60) the
#: test pins NLL/pt <= 1e-4, mean <= 0.005 sd, |log var ratio| <= 0.02 with 15 iterations.
SUBSET_ERROR = (
    "n=2000, d=25 vs dense: NLL/pt +0.0001, mean <= 0.024 sd, variance within a factor 1.21"
)


def gaussian_crps(mu: Tensor, sigma: Tensor, y: Tensor) -> Tensor:
    """Closed-form CRPS of ``N(mu, sigma^2)`` at ``y`` (elementwise; lower is better).

    CRPS = sigma [z (2 Phi(z) - 1) + 2 phi(z) - 1/sqrt(pi)], z = (y - mu) / sigma.
    """
    mu, sigma, y = torch.broadcast_tensors(
        torch.as_tensor(mu, dtype=_DT),
        torch.as_tensor(sigma, dtype=_DT),
        torch.as_tensor(y, dtype=_DT),
    )
    if bool((sigma <= 0).any()):
        raise SolverError("gaussian_crps needs sigma > 0")
    z = (y - mu) / sigma
    normal = torch.distributions.Normal(torch.zeros((), dtype=_DT), torch.ones((), dtype=_DT))
    cdf = normal.cdf(z)
    pdf = torch.exp(normal.log_prob(z))
    return sigma * (z * (2.0 * cdf - 1.0) + 2.0 * pdf - 1.0 / math.sqrt(math.pi))


@dataclass
class GPParams:
    """Fitted (or fixed) GP hyperparameters; kernel tensors are `()` or `d`."""

    kernel: dict[str, Tensor]
    outputscale: float
    noise: float
    mean: float

    def as_floats(self) -> dict[str, float | list[float]]:
        """JSON-friendly copy."""
        out: dict[str, float | list[float]] = {
            k: (v.tolist() if v.ndim else float(v)) for k, v in self.kernel.items()
        }
        out.update(outputscale=self.outputscale, noise=self.noise, mean=self.mean)
        return out


def _as_inputs(X: Tensor, y: Tensor | None = None) -> tuple[Tensor, Tensor | None]:
    X = torch.as_tensor(X, dtype=_DT)
    if X.ndim != 2:
        raise SolverError(f"X must be `n x d`, got shape {tuple(X.shape)}")
    if not bool(torch.isfinite(X).all()):
        raise SolverError("X contains non-finite values")
    if y is None:
        return X, None
    y = torch.as_tensor(y, dtype=_DT).reshape(-1)
    if y.shape[0] != X.shape[0]:
        raise SolverError(f"y has {y.shape[0]} values for {X.shape[0]} inputs")
    if not bool(torch.isfinite(y).all()):
        raise SolverError("y contains non-finite values")
    return X, y


def kernel_diag(spec: KernelSpec, X: Tensor, params: dict[str, Tensor], block: int = 512) -> Tensor:
    """``k(x_i, x_i)`` for `n x d` ``X`` in blocks (a kernel need not provide a diag method)."""
    parts = [
        torch.diagonal(spec.fn(X[i : i + block], X[i : i + block], params))
        for i in range(0, X.shape[0], block)
    ]
    return torch.cat(parts)


class ExactGP:
    """Exact GP with a ``KernelSpec`` kernel, constant mean and Gaussian noise.

    Args:
        kernel: the covariance function (without signal variance; see module docs).
        n_restarts: random restarts of L-BFGS-B in addition to the start at ``init``.
        noise_floor: lower bound of the noise variance as a fraction of ``var(y)``.
        max_iter: L-BFGS-B iterations per start.
        dense_max_n: above this many points, fit the hyperparameters on a seeded subset of
            this size, then refine on all points (``None``: always dense).
        refine_iter: full-data L-BFGS-B iterations after a subset fit (0: none).
    """

    def __init__(
        self,
        kernel: KernelSpec,
        *,
        n_restarts: int = 2,
        noise_floor: float = 1e-6,
        max_iter: int = 200,
        seed: int = 0,
        dense_max_n: int | None = DENSE_MAX_N,
        refine_iter: int = REFINE_ITER,
    ) -> None:
        if n_restarts < 0:
            raise SolverError("n_restarts must be >= 0")
        if dense_max_n is not None and dense_max_n < 2:
            raise SolverError(f"dense_max_n must be >= 2 or None, got {dense_max_n}")
        if refine_iter < 0:
            raise SolverError(f"refine_iter must be >= 0, got {refine_iter}")
        self.dense_max_n = dense_max_n
        self.refine_iter = refine_iter
        #: ``"dense"`` or ``"subset m/n + refine k"``: how the last ``fit`` ran.
        self.fit_mode_ = ""
        self.kernel = kernel
        self.n_restarts = n_restarts
        self.noise_floor = noise_floor
        self.max_iter = max_iter
        self.seed = seed
        self.params: GPParams | None = None
        self.X: Tensor | None = None
        self.y: Tensor | None = None
        self._L: Tensor | None = None
        self._alpha: Tensor | None = None
        self.nll_: float = float("nan")

    # --- parameter vector <-> dict ------------------------------------------------------

    def _layout(
        self, d: int, y: Tensor
    ) -> tuple[list[tuple[str, int]], np.ndarray, np.ndarray, np.ndarray]:
        """Names/sizes of the unconstrained vector plus its init, lower and upper bounds."""
        var_y = max(float(y.var()) if y.numel() > 1 else 1.0, 1e-12)
        layout: list[tuple[str, int]] = []
        init: list[float] = []
        lo: list[float] = []
        hi: list[float] = []
        for name, h in self.kernel.hyperparameters.items():
            k = h.size(d)
            layout.append((name, k))
            init += [math.log(h.init)] * k
            lo += [math.log(h.bounds[0])] * k
            hi += [math.log(h.bounds[1])] * k
        layout += [("__outputscale", 1), ("__noise", 1), ("__mean", 1)]
        init += [
            math.log(var_y),
            math.log(max(1e-2 * var_y, self.noise_floor * var_y)),
            float(y.mean()),
        ]
        lo += [math.log(1e-3 * var_y), math.log(self.noise_floor * var_y), float(y.min())]
        hi += [math.log(1e2 * var_y), math.log(var_y), float(y.max()) + 1e-12]
        return layout, np.array(init), np.array(lo), np.array(hi)

    def _unpack(self, theta: Tensor, layout: list[tuple[str, int]], d: int) -> GPParams:
        out: dict[str, Tensor] = {}
        i = 0
        for name, k in layout:
            seg = theta[i : i + k]
            i += k
            if name == "__mean":
                out[name] = seg[0]
            elif (
                name in self.kernel.hyperparameters
                and self.kernel.hyperparameters[name].shape == "ard"
            ):
                out[name] = seg.exp()
            else:
                out[name] = seg[0].exp()
        kern = {k: v for k, v in out.items() if not k.startswith("__")}
        return GPParams(kern, out["__outputscale"], out["__noise"], out["__mean"])  # type: ignore[arg-type]

    # --- likelihood ---------------------------------------------------------------------

    def _chol(self, X: Tensor, p: GPParams) -> Tensor:
        K = p.outputscale * self.kernel.fn(X, X, p.kernel)
        Ky = K + p.noise * torch.eye(X.shape[0], dtype=_DT)
        L, info = torch.linalg.cholesky_ex(Ky)
        if int(info) != 0:
            raise SolverError("K + noise I is not positive definite (Cholesky failed)")
        return L

    def _nll_and_grad(
        self, X: Tensor, y: Tensor, theta: np.ndarray, layout: list[tuple[str, int]]
    ) -> tuple[float, np.ndarray]:
        """NLL / n and its gradient in ``theta`` without autograd through the Cholesky.

        d NLL / d theta = sum_ij G_ij dK_ij/d theta - [d mean] sum(alpha), with
        ``G = (K_y^-1 - alpha alpha^T) / 2`` and ``alpha = K_y^-1 (y - m)``: one Cholesky,
        one ``cholesky_inverse`` and a vector-Jacobian product through the kernel."""
        n, d = X.shape
        th = torch.tensor(theta, dtype=_DT, requires_grad=True)
        p = self._unpack(th, layout, d)
        Ky = p.outputscale * self.kernel.fn(X, X, p.kernel) + p.noise * torch.eye(n, dtype=_DT)
        with torch.no_grad():
            L, info = torch.linalg.cholesky_ex(Ky)
            if int(info) != 0:
                raise SolverError("K + noise I is not positive definite (Cholesky failed)")
            r = (y - p.mean).unsqueeze(-1)
            alpha = torch.cholesky_solve(r, L)
            nll = (
                0.5 * float((r * alpha).sum())
                + float(torch.log(torch.diagonal(L)).sum())
                + 0.5 * n * math.log(2 * math.pi)
            )
            G = torch.cholesky_inverse(L)
            G -= alpha @ alpha.T
            G *= 0.5
            a_sum = alpha.sum()
        surrogate = (Ky * G).sum() - p.mean * a_sum  # type: ignore[operator]
        (g,) = torch.autograd.grad(surrogate, th)
        return nll / n, g.numpy() / n

    def _nll(self, X: Tensor, y: Tensor, p: GPParams) -> Tensor:
        """Negative log marginal likelihood divided by n."""
        L = self._chol(X, p)
        r = (y - p.mean).unsqueeze(-1)
        a = torch.cholesky_solve(r, L)
        n = X.shape[0]
        nll = (
            0.5 * (r * a).sum()
            + torch.log(torch.diagonal(L)).sum()
            + 0.5 * n * math.log(2 * math.pi)
        )
        return nll / n

    def fit(self, X: Tensor, y: Tensor, *, optimize: bool = True) -> ExactGP:
        """Fit hyperparameters to `n x d` ``X`` and `n` ``y`` (or only condition if not ``optimize``)."""
        X, y_opt = _as_inputs(X, y)
        assert y_opt is not None
        y = y_opt
        n, d = X.shape
        if n < 2:
            raise SolverError("ExactGP.fit needs at least 2 points")
        if not optimize:
            if self.params is None:
                raise SolverError("fit(optimize=False) needs params set via set_params first")
            return self.condition(X, y)
        # The bounds come from all of y, whichever points the objective sees.
        layout, init, lo, hi = self._layout(d, y)
        gen = np.random.default_rng(self.seed)
        starts = [init] + [gen.uniform(lo, hi) for _ in range(self.n_restarts)]
        best_theta, best_f = None, math.inf
        bounds = list(zip(lo, hi, strict=True))
        Xf, yf = X, y
        subset = self.dense_max_n is not None and n > self.dense_max_n
        if subset:
            assert self.dense_max_n is not None
            # A seeded draw of its own, so the starts are those of a dense fit.
            pick = np.random.default_rng([self.seed, n]).choice(n, self.dense_max_n, replace=False)
            idx = torch.as_tensor(np.sort(pick))
            Xf, yf = X[idx], y[idx]

        def objective(Xo: Tensor, yo: Tensor) -> Any:
            def fg(t: np.ndarray) -> tuple[float, np.ndarray]:
                try:
                    fv, gv = self._nll_and_grad(Xo, yo, t, layout)
                except SolverError:
                    # Outside the PD region: a large value makes the line search back off.
                    return 1e10, np.zeros_like(t)
                if not (math.isfinite(fv) and np.isfinite(gv).all()):
                    return 1e10, np.zeros_like(t)
                return fv, gv

            return fg

        fg = objective(Xf, yf)
        for s in starts:
            res = minimize(
                fg, s, jac=True, method="L-BFGS-B", bounds=bounds,
                options={"maxiter": self.max_iter},
            )  # fmt: skip
            if res.fun < best_f:
                best_f, best_theta = float(res.fun), res.x
        if best_theta is None or best_f >= 1e10:
            raise SolverError(f"GP fit failed from every start for kernel {self.kernel.expression}")
        self.fit_mode_ = "dense"
        if subset:
            self.fit_mode_ = f"subset {self.dense_max_n}/{n}"
            if self.refine_iter > 0:
                res = minimize(
                    objective(X, y), best_theta, jac=True, method="L-BFGS-B", bounds=bounds,
                    options={"maxiter": self.refine_iter},
                )  # fmt: skip
                if res.fun < 1e10:
                    best_f, best_theta = float(res.fun), res.x
                self.fit_mode_ += f" + refine {int(res.nit)}"
        with torch.no_grad():
            self.params = self._unpack(torch.tensor(best_theta, dtype=_DT), layout, d)
            self.params = GPParams(
                {k: v.detach().clone() for k, v in self.params.kernel.items()},
                float(self.params.outputscale),
                float(self.params.noise),
                float(self.params.mean),
            )
        self.nll_ = best_f
        return self.condition(X, y)

    def set_params(
        self,
        kernel_params: dict[str, Tensor | float],
        *,
        outputscale: float,
        noise: float,
        mean: float = 0.0,
    ) -> ExactGP:
        """Fix hyperparameters (then call ``condition`` or ``fit(optimize=False)``)."""
        missing = set(self.kernel.hyperparameters) - set(kernel_params)
        if missing:
            raise SolverError(f"missing kernel hyperparameters: {sorted(missing)}")
        kp = {k: torch.as_tensor(v, dtype=_DT) for k, v in kernel_params.items()}
        self.params = GPParams(kp, float(outputscale), float(noise), float(mean))
        return self

    def condition(self, X: Tensor, y: Tensor) -> ExactGP:
        """Condition on data with the current hyperparameters (no fitting)."""
        X, y_opt = _as_inputs(X, y)
        assert y_opt is not None
        y = y_opt
        if self.params is None:
            raise SolverError("condition() needs hyperparameters (fit or set_params first)")
        with torch.no_grad():
            self._L = self._chol(X, self.params)
            self._alpha = torch.cholesky_solve(
                (y - self.params.mean).unsqueeze(-1), self._L
            ).squeeze(-1)
            self.nll_ = float(self._nll(X, y, self.params))
        self.X, self.y = X, y
        return self

    def _require(self) -> tuple[Tensor, Tensor, Tensor, Tensor, GPParams]:
        if (
            self.X is None
            or self.y is None
            or self._L is None
            or self._alpha is None
            or self.params is None
        ):
            raise SolverError("the GP is not fitted/conditioned yet")
        return self.X, self.y, self._L, self._alpha, self.params

    # --- outputs ------------------------------------------------------------------------

    def log_marginal_likelihood(self) -> float:
        """Exact log marginal likelihood at the current hyperparameters."""
        X, y, _, _, p = self._require()
        with torch.no_grad():
            return -float(self._nll(X, y, p)) * X.shape[0]

    def bic(self) -> float:
        """BIC = -2 log ML + p log n, p = kernel hyperparameters + outputscale, noise, mean."""
        X, *_ = self._require()
        n, d = X.shape
        p = self.kernel.n_hyperparameters(d) + 3
        return -2.0 * self.log_marginal_likelihood() + p * math.log(n)

    @torch.no_grad()
    def predict(self, Xs: Tensor, *, include_noise: bool = False) -> tuple[Tensor, Tensor]:
        """Posterior mean and variance (`m` each) at `m x d` ``Xs``; of ``y`` if ``include_noise``."""
        X, _, L, alpha, p = self._require()
        Xs, _ = _as_inputs(Xs)
        Ks = p.outputscale * self.kernel.fn(X, Xs, p.kernel)  # n x m
        mean = p.mean + Ks.transpose(0, 1) @ alpha
        v = torch.linalg.solve_triangular(L, Ks, upper=False)
        var = p.outputscale * kernel_diag(self.kernel, Xs, p.kernel) - (v * v).sum(0)
        var = var.clamp_min(1e-12)
        if include_noise:
            var = var + p.noise
        return mean, var

    @torch.no_grad()
    def loo(self) -> tuple[Tensor, Tensor]:
        """Closed-form leave-one-out predictive mean and variance of each ``y_i`` (`n` each).

        R&W eq. 5.12 with hyperparameters kept at the full-data fit:
        mu_-i = y_i - [K_y^-1 (y - m)]_i / [K_y^-1]_ii, var_-i = 1 / [K_y^-1]_ii.
        """
        _, y, L, alpha, _ = self._require()
        kinv_diag = torch.diagonal(torch.cholesky_inverse(L))
        return y - alpha / kinv_diag, 1.0 / kinv_diag

    def loo_crps(self) -> float:
        """Mean Gaussian CRPS of the LOO predictives (lower is better)."""
        _, y, *_ = self._require()
        mu, var = self.loo()
        return float(gaussian_crps(mu, var.sqrt(), y).mean())
