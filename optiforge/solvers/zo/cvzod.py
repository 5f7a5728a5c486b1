"""CV-ZOD: zeroth-order descent with a control variate set from directional hints.

The idea (control-variate zeroth-order descent): a plain zeroth-order (ZO) method
estimates the gradient from finite differences along random directions, so its estimate
has variance of order ``d / m`` times ``|g|^2`` and it needs ``~d`` times more steps than
gradient descent. Often cheap *directional hints* are available -- a surrogate model's
gradient, the previous step, a low-rank guess -- that span a subspace which may or may
not contain the gradient. A *guided* method that searches only the hint subspace is
fast when the hints are right and stalls when they are wrong (it cannot move where the
hints do not point). CV-ZOD uses the hints as a **control variate** instead: the
directional derivatives measured along the hint subspace predict what every random
direction's finite difference should be; the random-direction estimate is corrected by
that prediction, whose expectation is known exactly. The estimator stays unbiased for
any hints (so it never stalls), its variance shrinks to zero when the hints contain the
gradient, and the practical variant estimates the control-variate coefficient, the
remaining variance and the probe allocation online, so it adapts without being told the
hint quality: first-order behaviour with exact hints, zeroth-order behaviour with
random ones, in between otherwise.

One step at the iterate ``x`` (``d`` the dimension):

- **Hints.** ``H`` (``d x k``) from ``hint_fn(x)`` or, without it, from the feedback of
  the step's base point (``tell(..., feedback=[{"hint": H}])``: the step is then two
  asks, ``[x]`` then the probes). ``H`` is orthonormalized (SVD; columns below ``1e-10``
  of the largest singular value are dropped) to ``Q`` (``d x k'``).
- **Probes** (forward differences, one shared base value ``f(x)``): ``x + mu q_j`` for
  the ``k'`` columns of ``Q`` give ``s = Q^T g`` (``k'``); ``x + mu u_i`` for ``m``
  Gaussian directions ``u_i ~ N(0, I_d)`` give ``a_i = u_i^T g``. ``1 + k' + m`` values
  per step.
- **Control variate.** ``b_i = u_i^T Q s`` is the hint-predicted value of ``a_i``; its
  vector mean ``(1/m) sum b_i u_i`` has the known expectation ``Q s``. The estimate is
  ``g_hat = c Q s + (1/m) sum_i (a_i - c b_i) u_i``, unbiased for every ``c``. Its error
  is ``E|g_hat - g|^2 = (d + 1)/m * |g - c Q s|^2``, minimized by the regression
  coefficient ``c = E[a b] / E[b^2]``: ``c`` is the ratio of exponentially averaged
  (``beta``) sums of ``a_i b_i`` and ``b_i^2`` over the steps so far, clipped to
  ``[0, 1]`` (``c = 1`` is optimal for noiseless measurements; measurement noise on
  ``s`` pulls it below 1). The step uses the coefficient from *before* its own samples
  (starting at 1), so ``g_hat`` stays exactly unbiased given the past.
- **Step size** (adapts to the hint quality). For an ``L``-smooth ``f`` and an unbiased
  estimate the best step is ``(1/L) |g|^2 / E|g_hat|^2``. The residual variance
  ``V = (d + 1)/m * mean_i (a_i - c b_i)^2`` estimates ``E|g_hat - g|^2``; the signal
  fraction ``psi = 1 - V / |g_hat|^2`` is averaged (``beta``), clipped to
  ``[1 / (2 (d + 1)), 1]``, and the step is ``x <- x - lr * psi * g_hat``. ``lr`` plays
  ``1/L``: exact hints give ``V = 0``, ``psi = 1`` (a gradient-descent step); random
  hints give ``psi ~ m / (m + d + 1)`` (the zeroth-order step).
- **Probe allocation** (adapts too). The hint-explained fraction ``R^2 = 1 -
  E(a - c b)^2 / E a^2`` is averaged (``beta``); progress per evaluation
  ``m / ((m + eps)(1 + k' + m))`` with ``eps = (d + 1)(1 - R^2)`` is largest at
  ``m* = sqrt(eps (1 + k'))``, so the next step draws ``m = clip(round(m*), m_min,
  n_random)`` random directions: few when the hints explain the gradient, up to
  ``n_random`` when they do not. ``m_min >= 1`` keeps measuring the residual, so a hint
  that goes bad is noticed.

``mode`` picks the estimator, everything else equal (the baselines of the claim):
``"cv"`` (CV-ZOD), ``"zo"`` (no hints: Gaussian-smoothing ZO with ``n_random``
directions per step, the same step-size rule) and ``"guided"`` (only the hint subspace:
``g_hat = Q s``, ``psi = 1``; it stalls where the hints miss the gradient). Without any
hint (no ``hint_fn``, no feedback hint) ``"cv"`` is ``"zo"``.

``recommend()`` is the current iterate (not the best point seen: probes are
perturbations, not candidates). The optimizer is unbounded (``box = False``); with
bounds, the iterate is kept inside them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from optiforge.errors import ConfigError
from optiforge.solvers.asktell import Array, AskTellOptimizer, Bounds, Feedback, register

HintFn = Callable[[Array], Array]
"""``hint_fn(x) -> H``: ``(d,)`` or ``(d, k)`` hint directions at ``x`` (magnitudes ignored)."""

MODES = ("cv", "zo", "guided")


def orthonormal_hints(H: Array, dim: int) -> Array:
    """Orthonormal basis ``(d, k')`` of the span of the hint columns ``H`` (``(d,)``/``(d, k)``).

    Columns whose singular value is below ``1e-10`` of the largest (or all, for a zero or
    non-finite hint) are dropped, so ``k'`` may be 0.
    """
    H = np.asarray(H, dtype=np.float64)
    if H.ndim == 1:
        H = H[:, None]
    if H.ndim != 2 or H.shape[0] != dim:
        raise ValueError(f"cvzod: a hint must have shape ({dim},) or ({dim}, k), got {H.shape}")
    if H.shape[1] == 0 or not np.all(np.isfinite(H)) or not np.any(H):
        return np.zeros((dim, 0))
    U, S, _ = np.linalg.svd(H, full_matrices=False)
    keep = S / S[0] > 1e-10
    return np.ascontiguousarray(U[:, keep])


@register
class CVZOD(AskTellOptimizer):
    """Control-variate zeroth-order descent with online-adapted coefficient and step.

    Args:
        x0: start point ``(d,)`` (zeros by default).
        lr: base step, the role of ``1/L`` (a gradient-descent step with exact hints).
        mu: finite-difference step (probes at ``x + mu q`` with ``|q| = 1`` and at
            ``x + mu u`` with ``u ~ N(0, I)``).
        n_random: random directions per step (the most in ``"cv"``; always in ``"zo"``).
        m_min: fewest random directions per step in ``"cv"`` (>= 1).
        hint_fn: ``hint_fn(x) -> (d,) or (d, k)`` hint directions; without it, hints come
            from ``feedback[0]["hint"]`` of the step's base point.
        mode: ``"cv"`` | ``"zo"`` | ``"guided"`` (see the module docstring).
        beta: averaging factor of the running statistics (coefficient, variance, R^2).
    """

    name = "cvzod"
    box = False
    summary = (
        "CV-ZOD: zeroth-order descent whose random-direction estimate is corrected by a "
        "control variate from (possibly wrong) directional hints; coefficient, step and "
        "probe count adapt online to the hint quality"
    )

    def __init__(
        self,
        dim: int,
        *,
        bounds: Bounds | None = None,
        seed: int = 0,
        x0: Array | None = None,
        lr: float = 0.1,
        mu: float = 1e-6,
        n_random: int = 8,
        m_min: int = 2,
        hint_fn: HintFn | None = None,
        mode: str = "cv",
        beta: float = 0.8,
    ) -> None:
        super().__init__(dim, bounds=bounds, seed=seed)
        if mode not in MODES:
            raise ConfigError(f"cvzod: mode must be one of {MODES}, got {mode!r}")
        if not lr > 0 or not mu > 0:
            raise ConfigError("cvzod: lr and mu must be > 0")
        if n_random < 1 or not 1 <= m_min <= n_random:
            raise ConfigError("cvzod: need 1 <= m_min <= n_random")
        if not 0 <= beta < 1:
            raise ConfigError("cvzod: beta must be in [0, 1)")
        x = np.zeros(dim) if x0 is None else np.asarray(x0, dtype=np.float64).reshape(-1)
        if x.shape != (dim,):
            raise ConfigError(f"cvzod: x0 must have shape ({dim},), got {x.shape}")
        self.x = self._inside(x)
        self.lr, self.mu, self.beta = float(lr), float(mu), float(beta)
        self.n_random, self.m_min = int(n_random), int(m_min)
        self.hint_fn, self.mode = hint_fn, mode
        self.uses_hints = mode != "zo"
        # running statistics (exponential averages) of the online adaptation
        self._s_ab = 0.0
        self._s_bb = 0.0
        self._s_res = 0.0
        self._s_aa = 0.0
        self._ratio: float | None = None
        self.c = 1.0
        """Control-variate coefficient used by the next step."""
        self.psi = 1.0
        """Signal fraction ``|g|^2 / E|g_hat|^2`` (the step multiplier) of the last step."""
        self.r2 = 0.0
        """Running hint-explained fraction ``R^2`` of the directional derivatives."""
        self.m = n_random
        """Random directions in the next step."""
        self.last_grad: Array | None = None
        """The last gradient estimate ``g_hat`` (``(d,)``)."""
        self.steps = 0
        # the step in progress
        self._f0: float | None = None
        self._Q = np.zeros((dim, 0))
        self._U = np.zeros((0, dim))

    # -- ask/tell ------------------------------------------------------------------------
    def _ask(self) -> Array:
        needs_feedback_hint = self.uses_hints and self.hint_fn is None
        if needs_feedback_hint and self._f0 is None:
            return self.x[None, :].copy()  # phase 1: the base point; its feedback has the hint
        if self.uses_hints and self.hint_fn is not None:
            self._Q = orthonormal_hints(self.hint_fn(self.x.copy()), self.dim)
        if not self.uses_hints:
            self._Q = np.zeros((self.dim, 0))
        m = 0 if self.mode == "guided" else (self.n_random if self.mode == "zo" else self.m)
        self._U = self.rng.standard_normal((m, self.dim))
        probes = [self.x + self.mu * self._Q.T, self.x + self.mu * self._U]
        # one batch: the base point first; "guided" with an empty hint: a null step at x
        if self._f0 is None or m + self._Q.shape[1] == 0:
            probes.insert(0, self.x[None, :])
        return np.vstack(probes)

    def _tell(self, X: Array, y: Array, feedback: Feedback) -> None:
        if self._f0 is None and X.shape[0] == 1 and self.uses_hints and self.hint_fn is None:
            self._f0 = float(y[0])
            hint = None if feedback is None else feedback[0].get("hint")
            if hint is None:
                raise ValueError(
                    "cvzod: without hint_fn, tell() of the base point needs "
                    "feedback=[{'hint': H}] with H of shape (d,) or (d, k)"
                )
            self._Q = orthonormal_hints(hint, self.dim)
            return
        k = self._Q.shape[1]
        if self._f0 is None:
            f0, vals = float(y[0]), y[1:]
        else:
            f0, vals = self._f0, y
            if k + self._U.shape[0] == 0:  # the null step's re-evaluation of x
                vals = y[:0]
        s = (vals[:k] - f0) / self.mu
        a = (vals[k:] - f0) / self.mu
        self._update(s, a)
        self._f0 = None

    def _update(self, s: Array, a: Array) -> None:
        """One descent step from the hint derivatives ``s`` (``k'``) and random ones ``a`` (``m``)."""
        Q, U, d = self._Q, self._U, self.dim
        m = U.shape[0]
        if m + Q.shape[1] == 0:  # nothing was probed ("guided" without a hint): no move
            self.last_grad = np.zeros(d)
            self.steps += 1
            return
        Qs = Q @ s
        if self.mode == "guided":
            g_hat, psi = Qs, 1.0
        else:
            b = U @ Qs if Q.shape[1] else np.zeros(m)
            c = self.c if self.mode == "cv" else 0.0
            res = a - c * b
            g_hat = c * Qs + (res @ U) / m
            V = (d + 1) / m * float(np.mean(res**2))
            g2 = float(g_hat @ g_hat)
            ratio = V / g2 if g2 > 0 else 1.0
            self._ratio = ratio if self._ratio is None else self._avg(self._ratio, ratio)
            psi = float(np.clip(1.0 - self._ratio, 1.0 / (2 * (d + 1)), 1.0))
            if self.mode == "cv":
                self._adapt(a, b)
        self.psi = psi
        self.last_grad = g_hat
        self.x = self._inside(self.x - self.lr * psi * g_hat)
        self.steps += 1

    def _adapt(self, a: Array, b: Array) -> None:
        """Update the coefficient ``c``, ``R^2`` and the next step's probe count ``m``."""
        first = self.steps == 0
        self._s_ab = self._avg(self._s_ab, float(np.mean(a * b)), first)
        self._s_bb = self._avg(self._s_bb, float(np.mean(b * b)), first)
        if self._s_bb > 0:
            self.c = float(np.clip(self._s_ab / self._s_bb, 0.0, 1.0))
        self._s_res = self._avg(self._s_res, float(np.mean((a - self.c * b) ** 2)), first)
        self._s_aa = self._avg(self._s_aa, float(np.mean(a * a)), first)
        self.r2 = float(np.clip(1.0 - self._s_res / self._s_aa, 0.0, 1.0)) if self._s_aa else 0.0
        eps = (self.dim + 1) * (1.0 - self.r2)
        m_star = np.sqrt(eps * (1 + self._Q.shape[1]))
        self.m = int(np.clip(round(m_star), self.m_min, self.n_random))

    # -- helpers -------------------------------------------------------------------------
    def _avg(self, old: float, new: float, first: bool = False) -> float:
        return new if first else self.beta * old + (1 - self.beta) * new

    def _inside(self, x: Array) -> Array:
        if self.lower is not None and self.upper is not None:
            return np.clip(x, self.lower, self.upper)
        return x

    def recommend(self) -> Array:
        """The current iterate ``x`` (``(d,)``)."""
        return self.x.copy()

    def state(self) -> dict[str, Any]:
        """The adaptation's current numbers (for logs and tests)."""
        return {"c": self.c, "psi": self.psi, "r2": self.r2, "m": self.m, "steps": self.steps}


__all__ = ["CVZOD", "HintFn", "orthonormal_hints"]
