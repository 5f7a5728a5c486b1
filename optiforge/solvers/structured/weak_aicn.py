"""Weak-AICN boosting: affine-invariant cubic Newton (AICN) with weak learners.

Boosting minimizes ``f(F) = mean_i l(y_i, F_i)`` over the vector of scores ``F`` (`n`), one
weak learner at a time. At round ``k`` let ``g_i = l'(y_i, F_i)`` and ``H_i = l''(y_i, F_i)``
(the Hessian of ``f`` in function space is diagonal, ``diag(H) / n``). Every step rule here
shares the direction and differs in the step:

1. **Direction (weak Newton).** Fit a weak learner ``h_k`` to the Newton direction
   ``-g / H`` by weighted least squares with weights ``H``. For a regression tree the leaf
   values are the weighted means ``-sum_leaf g / sum_leaf H``, so ``h_k`` is the
   ``H``-orthogonal projection of the Newton direction onto the span of the tree's leaf
   indicators.
2. **Cubic model along h_k.** With the local norm ``||d||_H^2 = mean_i H_i d_i^2`` write
   ``a = -mean_i g_i h_i`` (the decrease rate) and ``b = ||h_k||_H^2``. The AICN model is
   ``phi(t) = -t a + t^2 b / 2 + L t^3 b^{3/2} / 6`` (``L``: the semi-strong
   self-concordance constant of AICN). Its minimizer over ``t >= 0`` is
   ``t* = (-b + sqrt(b^2 + 2 L a b^{3/2})) / (L b^{3/2})``.
3. **Reduction.** For the projection of step 1, ``a = b``. With the directional improvement
   ``delta_k = ||h_k||_H = sqrt(b)`` the step becomes the AICN damping
   ``alpha_k = (-1 + sqrt(1 + 2 L delta_k)) / (L delta_k)`` (``alpha_k -> 1`` as
   ``delta_k -> 0``: the plain Newton step near the optimum; ``alpha_k ~ sqrt(2 / (L
   delta_k))`` for large steps). With the exact Newton direction (a learner that can
   represent ``-g/H``) ``delta_k`` is the Newton decrement and this is AICN itself. The
   code uses the general ``t*`` formula, so learners that are not exact projections work too.
4. **Update** ``F <- F + eta * alpha_k h_k`` (``eta`` = ``learning_rate``, default 1: no
   shrinkage; ``eta < 1`` is the usual shrinkage on top of the damping).

Step rules (``step=``):

- ``"aicn"``: the damped step above. Default ``adaptive=True``: starting from ``L``, ``L`` is
  doubled until ``f(F + t h) <= f(F) + phi(t)`` (the cubic model is then an upper bound
  along ``h``, and ``phi(t) < 0``, so the loss cannot increase) and halved after each
  accepted round. Why adaptive is the default: the logistic loss has no global
  semi-strong self-concordance constant in the ``H``-norm (a point whose curvature
  ``p(1-p)`` has underflowed makes ``||.||_H`` blind to it), so a fixed ``L`` is a guess;
  on the oscillating construction of the tests a fixed ``L = 1`` oscillates like plain
  Newton (damped, but not enough) while ``L = 10`` and the adaptive rule decrease
  monotonically. ``adaptive=False`` keeps ``L`` fixed.
- ``"newton"``: plain Newton boosting (``alpha_k = 1``, the undamped weak-Newton step,
  as XGBoost/LightGBM with ``lambda = 0``, no shrinkage and no min-child-weight).
- ``"gradreg"``: gradient-regularized Newton boosting (Mishchenko 2021; Doikov-Nesterov):
  the Newton direction of ``H + lambda_k`` with ``lambda_k = sqrt(L ||g||)`` where
  ``||g||^2 = mean_i g_i^2``: the learner is fit to ``-g / (H + lambda_k)`` with weights
  ``H + lambda_k`` (leaf values ``-sum g / sum (H + lambda_k)``), step 1. Not affine
  invariant (``lambda_k`` mixes the Euclidean and Hessian geometries).

Newton coordinate descent is the special case where the weak learners are the coordinates:
:func:`newton_coordinate_descent` fits linear scores ``F = X w``; the learner for
coordinate ``j`` is ``c x_j`` with ``c = -x_j^T g / x_j^T diag(H) x_j`` (the weighted
least-squares fit of ``-g/H`` on column ``j``), the coordinate is picked greedily by the
largest ``delta_j`` (Gauss-Southwell in the local norm) or cyclically, and the same AICN
step is taken.

What is scikit-learn's: the weak learners are ``sklearn.tree.DecisionTreeRegressor``
(CART split search and the weighted-mean leaf values). Ours: the losses and their
derivatives, the direction targets and weights, the AICN / Newton / gradient-regularized
step rules, the adaptive ``L`` search, the coordinate-descent special case and the
ensemble bookkeeping.

Losses: ``"logistic"`` (``y`` in {0, 1}, ``F`` the log-odds) and ``"squared"``
(``l = (y - F)^2 / 2``). ``H`` is floored at ``hessian_floor`` so that ``-g/H`` stays
finite where the logistic curvature underflows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray
from sklearn.tree import DecisionTreeRegressor

from optiforge.errors import SolverError

Loss = Literal["logistic", "squared"]
StepRule = Literal["aicn", "newton", "gradreg"]
FloatArray = NDArray[np.float64]

__all__ = [
    "WeakAICNBooster",
    "CoordinateResult",
    "aicn_step",
    "loss_value",
    "loss_derivatives",
    "newton_coordinate_descent",
    "newton_trap_dataset",
]


def loss_value(loss: Loss, y: FloatArray, F: FloatArray) -> float:
    """Mean loss ``mean_i l(y_i, F_i)``; ``y``, ``F``: `n`."""
    if loss == "logistic":
        return float(np.mean(np.logaddexp(0.0, F) - y * F))
    if loss == "squared":
        return float(0.5 * np.mean((y - F) ** 2))
    raise SolverError(f"unknown loss {loss!r}")


def loss_derivatives(
    loss: Loss, y: FloatArray, F: FloatArray, hessian_floor: float = 1e-12
) -> tuple[FloatArray, FloatArray]:
    """Per-sample first and second derivatives ``(g, H)`` of ``l`` in ``F`` (each `n`)."""
    if loss == "logistic":
        p = 0.5 * (1.0 + np.tanh(0.5 * F))  # stable sigmoid
        g = p - y
        H = p * (1.0 - p)
    elif loss == "squared":
        g = F - y
        H = np.ones_like(F)
    else:
        raise SolverError(f"unknown loss {loss!r}")
    return g, np.maximum(H, hessian_floor)


def aicn_step(a: float, b: float, L: float) -> float:
    """Minimizer over ``t >= 0`` of ``-t a + t^2 b / 2 + L t^3 b^{3/2} / 6``.

    ``a = -<g, h>``, ``b = ||h||_H^2``; with ``a = b = delta^2`` it is the AICN damping
    ``(-1 + sqrt(1 + 2 L delta)) / (L delta)``. Returns 0 when ``h`` is not a descent
    direction (``a <= 0``) or vanishes.
    """
    if L <= 0:
        raise SolverError(f"L must be positive, got {L}")
    if a <= 0.0 or b <= 0.0:
        return 0.0
    s = b**1.5
    c = L * s
    # t* = (-b + sqrt(b^2 + 2 c a)) / c, written without cancellation:
    return float(2.0 * a / (b + math.sqrt(b * b + 2.0 * c * a)))


def _cubic_model(t: float, a: float, b: float, L: float) -> float:
    return -t * a + 0.5 * t * t * b + L * t**3 * b**1.5 / 6.0


def _aicn_search(
    loss: Loss,
    y: FloatArray,
    F: FloatArray,
    h: FloatArray,
    a: float,
    b: float,
    L: float,
    f0: float,
    adaptive: bool,
    eta: float = 1.0,
) -> tuple[float, float]:
    """The AICN step along ``h`` and the ``L`` it used; adaptive: double ``L`` until
    ``f(F + eta t h) <= f0 + phi(eta t)`` (at most 60 doublings)."""
    t = aicn_step(a, b, L)
    if adaptive:
        for _ in range(60):
            if loss_value(loss, y, F + eta * t * h) <= f0 + _cubic_model(eta * t, a, b, L) + 1e-15:
                break
            L *= 2.0
            t = aicn_step(a, b, L)
    return t, L


def _init_score(loss: Loss, y: FloatArray) -> float:
    if loss == "logistic":
        p = float(np.clip(np.mean(y), 1e-12, 1 - 1e-12))
        return math.log(p / (1.0 - p))
    return float(np.mean(y))


@dataclass
class WeakAICNBooster:
    """Boosted regression trees with AICN-damped, plain Newton, or gradient-regularized steps.

    Attributes after :meth:`fit`: ``loss_history_`` (`n_rounds + 1`, train loss from the
    initial constant on), ``steps_`` / ``deltas_`` / ``L_history_`` (`n_rounds` each: the
    step ``alpha_k``, ``delta_k = ||h_k||_H``, the ``L`` used).
    """

    loss: Loss = "logistic"
    step: StepRule = "aicn"
    n_rounds: int = 100
    L: float = 1.0
    """AICN: the self-concordance constant; gradreg: the ``L`` of ``lambda = sqrt(L ||g||)``."""
    adaptive: bool = True
    """AICN only: double ``L`` until the cubic model bounds the loss; halve it after success."""
    learning_rate: float = 1.0
    max_depth: int | None = 3
    min_samples_leaf: int = 1
    hessian_floor: float = 1e-12
    random_state: int | None = 0
    init_: float = field(default=0.0, init=False)
    trees_: list[DecisionTreeRegressor] = field(default_factory=list, init=False)
    weights_: list[float] = field(default_factory=list, init=False)
    loss_history_: list[float] = field(default_factory=list, init=False)
    steps_: list[float] = field(default_factory=list, init=False)
    deltas_: list[float] = field(default_factory=list, init=False)
    L_history_: list[float] = field(default_factory=list, init=False)

    def fit(self, X: FloatArray, y: FloatArray) -> WeakAICNBooster:
        """Fit on ``X`` (`n x d`), ``y`` (`n`; {0, 1} for the logistic loss)."""
        X = np.asarray(X, dtype=np.float64)
        y = np.asarray(y, dtype=np.float64)
        if X.ndim != 2 or y.shape != (X.shape[0],):
            raise SolverError(f"X must be n x d and y n, got {X.shape} and {y.shape}")
        if self.loss == "logistic" and not np.all((y == 0) | (y == 1)):
            raise SolverError("the logistic loss needs labels in {0, 1}")
        if self.step not in ("aicn", "newton", "gradreg"):
            raise SolverError(f"unknown step rule {self.step!r}")
        rng = np.random.default_rng(self.random_state)
        self.init_ = _init_score(self.loss, y)
        F = np.full(X.shape[0], self.init_)
        self.trees_, self.weights_ = [], []
        self.loss_history_ = [loss_value(self.loss, y, F)]
        self.steps_, self.deltas_, self.L_history_ = [], [], []
        L = self.L
        for _ in range(self.n_rounds):
            g, H = loss_derivatives(self.loss, y, F, self.hessian_floor)
            if self.step == "gradreg":
                lam = math.sqrt(self.L * math.sqrt(float(np.mean(g * g))))
                Hd = H + lam
            else:
                Hd = H
            tree = DecisionTreeRegressor(
                max_depth=self.max_depth,
                min_samples_leaf=self.min_samples_leaf,
                random_state=int(rng.integers(2**31 - 1)),
            )
            tree.fit(X, -g / Hd, sample_weight=Hd)
            h = tree.predict(X)
            a = float(-np.mean(g * h))
            b = float(np.mean(H * h * h))
            f0 = self.loss_history_[-1]
            if self.step == "aicn":
                t, L = _aicn_search(
                    self.loss, y, F, h, a, b, L, f0, self.adaptive, self.learning_rate
                )
            else:
                t = 1.0
            self.L_history_.append(L)
            alpha = self.learning_rate * t
            F = F + alpha * h
            self.trees_.append(tree)
            self.weights_.append(alpha)
            self.steps_.append(t)
            self.deltas_.append(math.sqrt(max(b, 0.0)))
            self.loss_history_.append(loss_value(self.loss, y, F))
            if self.step == "aicn" and self.adaptive:
                L = max(L / 2.0, 1e-12)
        return self

    def decision_function(self, X: FloatArray) -> FloatArray:
        """Scores ``F(X)`` (`m`)."""
        X = np.asarray(X, dtype=np.float64)
        F = np.full(X.shape[0], self.init_)
        for w, tree in zip(self.weights_, self.trees_, strict=True):
            F = F + w * tree.predict(X)
        return F

    def predict_proba(self, X: FloatArray) -> FloatArray:
        """Class-1 probabilities (`m`); logistic loss only."""
        if self.loss != "logistic":
            raise SolverError("predict_proba needs the logistic loss")
        return 0.5 * (1.0 + np.tanh(0.5 * self.decision_function(X)))

    def predict(self, X: FloatArray) -> FloatArray:
        """Labels in {0, 1} (logistic) or regression values (squared), `m`."""
        F = self.decision_function(X)
        return (F > 0).astype(np.float64) if self.loss == "logistic" else F


@dataclass
class CoordinateResult:
    """Newton coordinate descent output: weights `d`, loss per iteration `iters + 1`."""

    w: FloatArray
    loss_history: list[float]
    coords: list[int]
    steps: list[float]


def newton_coordinate_descent(
    X: FloatArray,
    y: FloatArray,
    *,
    loss: Loss = "logistic",
    step: Literal["aicn", "newton"] = "aicn",
    L: float = 1.0,
    adaptive: bool = True,
    iters: int = 200,
    rule: Literal["greedy", "cyclic"] = "greedy",
    hessian_floor: float = 1e-12,
) -> CoordinateResult:
    """Weak-AICN with coordinates as weak learners: ``F = X w`` (``X``: `n x d`).

    The weak learner for coordinate ``j`` is ``c_j x_j`` with
    ``c_j = -x_j^T g / x_j^T (H * x_j)``; its ``delta_j^2 = (x_j^T g)^2 / (n x_j^T (H * x_j))``.
    ``rule="greedy"`` picks the largest ``delta_j``; ``"cyclic"`` goes round. The step is
    the AICN damping (``step="aicn"``, ``L`` adapted as in :class:`WeakAICNBooster` unless
    ``adaptive=False``) or 1 (``"newton"``, plain Newton coordinate descent).
    No intercept: append a column of ones to ``X`` for one.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, d = X.shape
    w = np.zeros(d)
    F = np.zeros(n)
    hist = [loss_value(loss, y, F)]
    coords: list[int] = []
    steps: list[float] = []
    for k in range(iters):
        g, H = loss_derivatives(loss, y, F, hessian_floor)
        xg = X.T @ g / n  # `d`
        xhx = np.maximum((X * X).T @ H / n, 1e-300)  # `d`
        j = int(np.argmax(xg * xg / xhx)) if rule == "greedy" else k % d
        c = -xg[j] / xhx[j]
        a = float(-xg[j] * c)  # = delta_j^2 = b for this exact projection
        b = float(c * c * xhx[j])
        if step == "aicn":
            t, L = _aicn_search(loss, y, F, c * X[:, j], a, b, L, hist[-1], adaptive)
            if adaptive:
                L = max(L / 2.0, 1e-12)
        else:
            t = 1.0
        w[j] += t * c
        F = F + t * c * X[:, j]
        hist.append(loss_value(loss, y, F))
        coords.append(j)
        steps.append(t)
    return CoordinateResult(w=w, loss_history=hist, coords=coords, steps=steps)


def newton_trap_dataset(
    seed: int = 0, n_per_class: int = 100, n_pairs: int = 1
) -> tuple[FloatArray, FloatArray]:
    """A nearly separable 2-D set on which plain Newton boosting with stumps oscillates.

    Positives ``C`` (x0 in [1, 2]) and negatives ``B`` (x0 in [-2, -1]), both with x1 in
    [0, 1], are separable; ``n_pairs`` conflicting pairs (one positive, one negative at the
    same point, x0 ~ 1.5, x1 = 3) make the set not separable. Stumps on x0 push the pairs'
    score up with ``C`` (the optimum of ``C`` with the pairs is ~ log(|C| / n_pairs) > 2.4);
    once a stump on x1 isolates the pairs (whose optimum is 0) the undamped Newton step
    starts beyond logistic Newton's convergence radius and jumps to ~ -1/(4 p (1 - p)).
    Returns ``X`` (`n x 2`), ``y`` (`n`, in {0, 1}).
    """
    r = np.random.default_rng(seed)
    m = n_per_class
    C = np.c_[r.uniform(1, 2, m), r.uniform(0, 1, m)]
    B = np.c_[r.uniform(-2, -1, m), r.uniform(0, 1, m)]
    A = np.c_[np.full(2 * n_pairs, 1.5 + 0.2 * r.uniform(-1, 1)), np.full(2 * n_pairs, 3.0)]
    X = np.r_[C, B, A]
    y = np.r_[np.ones(m), np.zeros(m), np.ones(n_pairs), np.zeros(n_pairs)]
    return X, y
