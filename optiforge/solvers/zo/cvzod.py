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
  asks, ``[x]`` then the probes; a missing hint counts as none, with a warning, so a
  generic loop without feedback still runs, as plain ZO). ``H`` is orthonormalized (SVD; columns below ``1e-10``
  of the largest singular value are dropped) to ``Q`` (``d x k'``).
- **Probes** (forward differences, one shared base value ``f(x)``): ``x + mu q_j`` for
  the ``k'`` columns of ``Q`` give ``s = Q^T g`` (``k'``); ``x + mu u_i`` for ``m``
  Gaussian directions ``u_i ~ N(0, I_d)`` give ``a_i = u_i^T g``. ``1 + k' + m`` values
  per step.
- **Control variate.** ``b_i = u_i^T Q s`` is the hint-predicted value of ``a_i``. The
  estimate is ``g_hat = Q s + r_hat`` with the residual estimate ``r_hat = (I - Q Q^T)
  (1/m) sum_i (a_i - c b_i) u_i``: ``Q s`` is the gradient's part in the hint subspace,
  measured exactly, and ``r_hat`` is unbiased for the part ``r = (I - Q Q^T) g`` outside
  it for every ``c`` (so ``g_hat`` is unbiased whatever the hints are worth). Subtracting
  ``c b_i`` is the control variate: the random differences then carry only what the hints
  do not predict, and the variance ``~ (d - k' + 1)/m * |g - c Q s|^2`` is smallest at the
  regression coefficient ``c = E[a b] / E[b^2]``: ``c`` is the ratio of exponentially
  averaged (``beta``) sums of ``a_i b_i`` and ``b_i^2`` over the steps so far, clipped to
  ``[0, 1]`` (``c = 1`` is optimal for noiseless measurements; measurement noise on ``s``
  pulls it below 1). A step uses the coefficient from *before* its own samples (starting
  at 1), so ``g_hat`` is unbiased given the past.
- **Step sizes** (adapt to the hint quality). The two parts are orthogonal, so each gets
  its own step: ``x <- x - lr * (Q s + psi * r_hat)``. The hint part is exact and takes
  the full step ``lr`` (the role of ``1/L``, a gradient-descent step); the residual part
  is noisy and takes the signal fraction ``psi = |r|^2 / E|r_hat|^2``, the best step for
  an unbiased estimate of an ``L``-smooth ``f``: the residual variance ``V = (d - k' +
  1)/m * mean_i (a_i - c b_i)^2`` estimates ``E|r_hat - r|^2``, ``psi = 1 - V / |r_hat|^2``
  is averaged (``beta``) and clipped to ``[1 / (2 (d + 1)), 1]``. Exact hints: a
  gradient-descent step; random hints: ``psi ~ m / (m + d + 1)``, the zeroth-order step.
  So a CV-ZOD step makes at least the guided method's progress, plus the residual's.
- **Probe allocation** (adapts too). The hint-explained fraction ``R^2 = 1 - E(a - c b)^2 /
  E a^2`` is averaged (``beta``); the expected progress per evaluation of a step with ``m``
  random directions is ``(R^2 + (1 - R^2) m / (m + d - k' + 1)) / (1 + k' + m)``, and the
  next step takes the ``m`` in ``[m_min, n_random]`` that maximizes it: ``m_min`` when the
  hints explain the gradient, up to ``~sqrt(d)`` when they do not. ``m_min >= 1`` keeps
  measuring the residual, so a hint that goes bad is noticed.

``mode`` picks the estimator, everything else equal (the baselines of the claim):
``"cv"`` (CV-ZOD), ``"zo"`` (no hints: Gaussian-smoothing ZO with ``n_random``
directions per step, the same ``psi`` step rule) and ``"guided"`` (only the hint
subspace: ``g_hat = Q s`` with the full step; it stalls where the hints miss the
gradient). Forward differences are used throughout (one shared base value; the bias is
``O(mu)``, below the noise floor at the default ``mu``); evaluations are assumed
noiseless or nearly so. Without any
hint (no ``hint_fn``, no feedback hint) ``"cv"`` is ``"zo"``.

``recommend()`` is the current iterate (not the best point seen: probes are
perturbations, not candidates). The optimizer is unbounded (``box = False``); given
bounds, the iterate is kept inside them (``ask`` clips the probes, so the differences
next to a bound are approximate).
"""

from __future__ import annotations

import warnings
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

    @classmethod
    def example(cls, seed: int = 0) -> CVZOD:
        """2-D, unbounded, with a fixed (uninformed) hint: the first coordinate axis."""
        return cls(2, seed=seed, hint_fn=lambda x: np.array([1.0, 0.0]))

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
        m_min: int = 1,
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
        """Step multiplier of the residual part (its signal fraction) in the last step."""
        self.r2 = 0.0
        """Running hint-explained fraction ``R^2`` of the directional derivatives."""
        self.m = n_random
        """Random directions in the next step."""
        self.last_grad: Array | None = None
        """The last gradient estimate ``g_hat`` (``(d,)``)."""
        self.steps = 0
        # the step in progress
        self._f0: float | None = None
        self._warned = False
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

    def _awaits_hint(self) -> bool:
        """True while the pending ask is the base point whose feedback carries the hint."""
        return self._f0 is None and self.uses_hints and self.hint_fn is None

    def tell(self, X: Array, y: Array, feedback: Feedback = None) -> None:
        """``AskTellOptimizer.tell``; the hint in the base point's feedback is read first
        (a bad shape is refused before any state changes, so a corrected ``tell`` can
        follow; a missing hint counts as none, with one warning)."""
        if self._pending is not None and self._awaits_hint():
            hint = None if not feedback else feedback[0].get("hint")
            if hint is None:
                if not self._warned:
                    warnings.warn(
                        "cvzod: no hint_fn and no feedback=[{'hint': H}] at the base point: "
                        "steps run without hints (plain zeroth-order steps)",
                        RuntimeWarning,
                        stacklevel=2,
                    )
                    self._warned = True
                hint = np.zeros(self.dim)
            self._Q = orthonormal_hints(hint, self.dim)  # ValueError on a bad shape
        super().tell(X, y, feedback)

    def _tell(self, X: Array, y: Array, feedback: Feedback) -> None:
        if self._awaits_hint():  # phase 1 done: the hint (checked in tell) and f(x)
            self._f0 = float(y[0])
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
        k = Q.shape[1]
        Qs = Q @ s  # the gradient's projection on the hint subspace, measured exactly
        if self.mode == "guided":
            g_hat, step, psi = Qs, Qs, 1.0
        else:
            b = U @ Qs if k else np.zeros(m)
            c = self.c if self.mode == "cv" else 0.0
            res = a - c * b
            r_hat = (res @ U) / m
            if k:
                r_hat -= Q @ (Q.T @ r_hat)  # the residual lives in the hints' complement
            V = (d - k + 1) / m * float(np.mean(res**2))
            r2 = float(r_hat @ r_hat)
            ratio = V / r2 if r2 > 0 else 1.0
            self._ratio = ratio if self._ratio is None else self._avg(self._ratio, ratio)
            psi = float(np.clip(1.0 - self._ratio, 1.0 / (2 * (d + 1)), 1.0))
            g_hat, step = Qs + r_hat, Qs + psi * r_hat
            if self.mode == "cv":
                self._adapt(a, b)
        self.psi = psi
        self.last_grad = g_hat
        self.x = self._inside(self.x - self.lr * step)
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
        k = self._Q.shape[1]
        ms = np.arange(self.m_min, self.n_random + 1)
        gain = (self.r2 + (1 - self.r2) * ms / (ms + self.dim - k + 1)) / (1 + k + ms)
        self.m = int(ms[int(np.argmax(gain))])

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
