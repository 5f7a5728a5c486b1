"""1-D stochastic convex bandit: localize the minimizer by sequential-test bisection.

The idea (instance-dependent complexity of 1-D stochastic convex optimization with
zeroth-order noisy feedback): the instance quantity is ``Delta_eps(f)``, the *width of the
eps-sublevel set* ``{x : f(x) - f* <= eps}``. It says how far from ``x*`` a point can be
and still be eps-optimal, so it sets how hard ``f`` is: to certify that an interval of
width ``~ Delta_eps`` holds ``x*``, a procedure must resolve value gaps of size ``~ eps``
at the edges of that interval, ``~ sigma^2 / eps^2`` samples (up to log factors), whatever
the shape of ``f``; measured against the width instead, the cost depends on the shape
(``~ Delta_eps^{-2p}`` for ``f = |x - x*|^p``), which is the point: a flat ``f`` (wide
sublevel sets) is cheap to optimize to ``eps`` but expensive to localize.

Definitions and choices (documented here, tested in ``tests/solvers/bandits``):

- ``delta_eps(f, eps, lower, upper)``: ``Delta_eps(f) = |{x in [lower, upper] : f(x) - f*
  <= eps}|``; by convexity the set is an interval ``[x_L, x_R]`` around ``x*``, whose ends
  are the roots of ``f(x) - f* - eps`` on each side of ``x*`` (Brent's method), or the
  domain's ends where ``f`` stays below ``f* + eps``. ``x*`` and ``f*`` come from a bounded
  scalar minimization (or the caller's ``x_star``).
- ``gap_at_radius(f, x_star, r, lower, upper)``: the dual quantity, the smallest gap
  ``f(x) - f*`` over points at distance ``>= r`` from ``x*`` (convexity: at ``x* +- r``).
  ``gap_at_radius(r) = eps`` exactly when the eps-sublevel set reaches radius ``r`` on its
  narrower side, so localizing ``x*`` within ``r`` means resolving gaps ``~ eps``. (Before
  issue 40 this module called the gap ``Delta_eps``, a value, not the paper's width.)
- The algorithm (``goal="localize"``): keep a bracket ``[l, r]`` known to contain ``x*``
  and sample the quarter points ``a < m < b`` (``l + L/4, l + L/2, l + 3L/4``) equally
  often, in growing batches (each ask adds ``ceil((growth - 1) n)`` samples per point,
  at least one, for ``n`` samples so far). After each batch, with ``dL = f(a) - f(m)``
  and ``dR = f(b) - f(m)`` estimated by sample means and ``w`` the confidence half-width
  of a difference: ``dL > w`` discards ``[l, a)`` and ``dR > w`` discards ``(b, r]`` (by
  convexity ``x*`` cannot lie beyond a point whose value exceeds an inner point's).
  Why three points and not the classical two (trisection): with two points, a minimizer
  half-way between them gives equal values and the test never ends; with three, wherever
  ``x*`` lies one of the two gaps is at least ``Delta_{L/4}(f) / 3``, so every round ends.
  Stop when ``L <= 2 eps`` and answer the midpoint (``|x_hat - x*| <= eps``); ``eps`` is a
  radius here (to localize within the eps-sublevel set of a symmetric ``f`` pass
  ``delta_eps(f, eps) / 2``).
- ``goal="simple_regret"``: the same discards, and stop when
  ``max(|dL|, |dR|) + w <= eps / 2``; convexity then certifies
  ``f(m) - f(x*) <= 2 max(|dL|, |dR|) <= eps`` (the secant through two sampled points
  bounds ``f`` from below beyond them, and ``x*`` is at most ``L/4`` beyond one of them).
- Confidence width for ``n`` samples per point in round ``k`` (counting from 0), noise
  sub-Gaussian with scale ``sigma``: ``w = 2 sigma sqrt(log(4 (k + 1)^2 n^2 / delta) / n)``
  (a union bound over rounds and sample counts; each difference has scale
  ``sigma sqrt(2 / n)``). The bracket holds ``x*`` with probability ``>= 1 - delta``.
- After stopping, ``ask()`` returns the answer ``(1, 1)`` (a bandit keeps playing);
  ``samples_to_stop`` records the evaluation count at the stop. A function with a flat
  bottom wider than ``2 eps`` has ``gap_at_radius(eps) = 0`` and localization never stops.

Shapes: ``ask()`` returns ``(3 k, 1)`` (``k`` repeats of ``a``, then of ``m``, then of
``b``) before the stop and ``(1, 1)`` after; ``tell`` takes the same ``X`` and ``(q,)``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.optimize import brentq, minimize_scalar

from optiforge.errors import ConfigError
from optiforge.solvers.asktell import Array, AskTellOptimizer, Bounds, Feedback, register


def gap_at_radius(
    f: Callable[[Array], Array], x_star: float, r: float, lower: float, upper: float
) -> float:
    """The smallest gap ``f(x) - f(x*)`` over ``[lower, upper]`` at distance ``>= r`` from ``x*``.

    ``f`` maps an array of points to an array of values; ``inf`` when no point of
    ``[lower, upper]`` is ``r`` away from ``x*``.
    """
    pts = [x for x in (x_star - r, x_star + r) if lower <= x <= upper]
    if not pts:
        return math.inf
    vals = np.asarray(f(np.asarray(pts, dtype=np.float64)), dtype=np.float64)
    f_star = float(np.asarray(f(np.asarray([x_star], dtype=np.float64)))[0])
    return float(np.min(vals) - f_star)


def delta_eps(
    f: Callable[[Array], Array],
    eps: float,
    lower: float,
    upper: float,
    *,
    x_star: float | None = None,
    xtol: float = 1e-12,
) -> float:
    """``Delta_eps(f)``: the width of the eps-sublevel set ``{x in [lower, upper]: f(x) - f*
    <= eps}`` of a convex ``f`` (maps an array of points to an array of values).

    ``x_star``: the minimizer if known (else found by bounded Brent minimization, so ``f``
    must be convex for the answer to be the width of one interval).
    """
    if eps <= 0 or not lower < upper:
        raise ConfigError("delta_eps: need eps > 0 and lower < upper")

    def f1(x: float) -> float:
        return float(np.asarray(f(np.asarray([x], dtype=np.float64)))[0])

    if x_star is None:
        res = minimize_scalar(f1, bounds=(lower, upper), method="bounded",
                              options={"xatol": xtol})  # fmt: skip
        x_star = float(res.x)
        # the bounded search never returns an end exactly: a minimum at an end counts
        for end in (lower, upper):
            if f1(end) < f1(x_star):
                x_star = end
    f_star = f1(x_star)

    def g(x: float) -> float:
        return f1(x) - f_star - eps

    left = lower if g(lower) <= 0 else brentq(g, lower, x_star, xtol=xtol)
    right = upper if g(upper) <= 0 else brentq(g, x_star, upper, xtol=xtol)
    return float(right - left)


@register
class ConvexBisection(AskTellOptimizer):
    """Trisection with sequential confidence tests for a noisy convex ``f`` on an interval.

    Args:
        eps: localization radius (``goal="localize"``) or simple-regret target
            (``goal="simple_regret"``).
        goal: ``"localize"`` or ``"simple_regret"``.
        sigma: sub-Gaussian scale of the observation noise (an upper bound is fine).
        delta: failure probability of the confidence tests.
        growth: factor by which the per-point sample count grows between tests.
    """

    name = "convex1d"
    max_dim = 1
    box = True
    summary = (
        "1-D stochastic convex bandit: trisection with sequential confidence tests; "
        "localizes x* within the eps-sublevel set in ~eps^-2 samples"
    )

    def __init__(
        self,
        dim: int,
        *,
        bounds: Bounds | None = None,
        seed: int = 0,
        eps: float = 0.05,
        goal: str = "localize",
        sigma: float = 1.0,
        delta: float = 0.05,
        growth: float = 1.25,
    ) -> None:
        super().__init__(dim, bounds=bounds, seed=seed)
        if dim != 1:
            raise ConfigError(f"convex1d: works on one dimension, got dim={dim}")
        if goal not in ("localize", "simple_regret"):
            raise ConfigError(f"convex1d: goal must be 'localize' or 'simple_regret', got {goal!r}")
        if eps <= 0 or sigma <= 0 or not 0 < delta < 1 or growth <= 1:
            raise ConfigError("convex1d: need eps > 0, sigma > 0, 0 < delta < 1, growth > 1")
        assert self.lower is not None and self.upper is not None
        self.eps, self.goal = float(eps), goal
        self.sigma, self.delta, self.growth = float(sigma), float(delta), float(growth)
        self.l, self.r = float(self.lower[0]), float(self.upper[0])
        self.round = 0
        self.samples_to_stop: int | None = None
        self.history: list[tuple[float, float, int]] = []
        """``(l, r, samples per point)`` of each finished round."""
        self._reset_round()
        if self.goal == "localize" and self.r - self.l <= 2 * self.eps:
            self.samples_to_stop = 0

    @property
    def done(self) -> bool:
        """True once the stopping rule of ``goal`` has fired."""
        return self.samples_to_stop is not None

    def _reset_round(self) -> None:
        self._n = 0
        self._sums = np.zeros(3)

    def points(self) -> Array:
        """The quarter points ``a, m, b`` of the current bracket, ``(3,)``."""
        L = self.r - self.l
        return self.l + L * np.array([0.25, 0.5, 0.75])

    def width(self, n: int) -> float:
        """Confidence half-width of a difference of two ``n``-sample means, this round."""
        k = self.round + 1
        return 2.0 * self.sigma * math.sqrt(math.log(4.0 * k * k * n * n / self.delta) / n)

    def _ask(self) -> Array:
        if self.done:
            return self.recommend().reshape(1, 1)
        k = max(1, math.ceil((self.growth - 1.0) * self._n))
        return np.repeat(self.points(), k).reshape(-1, 1)

    def _tell(self, X: Array, y: Array, feedback: Feedback) -> None:
        if self.done:
            return
        k = y.size // 3
        self._sums += y.reshape(3, k).sum(axis=1)
        self._n += k
        mean = self._sums / self._n
        dL, dR = mean[0] - mean[1], mean[2] - mean[1]
        w = self.width(self._n)
        a, m, b = self.points()
        if self.goal == "simple_regret" and max(abs(dL), abs(dR)) + w <= self.eps / 2:
            self.l, self.r = a, b  # centered on m, so recommend() answers m
            self.samples_to_stop = int(self.y.size)
            return
        cut_left, cut_right = dL > w, dR > w
        if not (cut_left or cut_right):
            return
        self.history.append((self.l, self.r, self._n))
        if cut_left:
            self.l = float(a)
        if cut_right:
            self.r = float(b)
        self.round += 1
        self._reset_round()
        if self.goal == "localize" and self.r - self.l <= 2 * self.eps:
            self.samples_to_stop = int(self.y.size)

    def recommend(self) -> Array:
        """The midpoint of the current bracket, ``(1,)`` (available before any tell)."""
        return np.array([0.5 * (self.l + self.r)])


__all__ = ["ConvexBisection", "delta_eps", "gap_at_radius"]
