"""Rank-one tensor recovery on the Segre manifold: Riemannian gradient descent (RGD) and
Riemannian Gauss-Newton (RGN), with ALS and projected-gradient baselines.

The Segre manifold ``S = {lam * u1 (x) u2 (x) u3 : lam > 0, |u_k| = 1}`` (third order,
shape ``(n1, n2, n3)``; any order >= 2 works) is the smooth manifold of nonzero rank-one
tensors. Two problems, one least-squares objective ``f(X) = 0.5 |A(X) - y|^2``:

* tensor PCA: ``T = lam* u1* (x) u2* (x) u3* + sigma * Z`` observed in full; ``A`` is the
  identity (pass ``A=None`` and ``y = T``, shape ``(n1, n2, n3)``);
* scalar-on-tensor regression: ``y_i = <A_i, X*> + sigma * eps_i``, ``i < m``; ``A`` has
  shape ``(m, n1, n2, n3)``, ``y`` shape ``(m,)``.

Every iterate is a point of ``S`` (:class:`RankOne`: ``lam`` and unit factors), so the
methods are feasible at every step.

Geometry (ours). At ``X = lam U``, ``U = u1 (x) u2 (x) u3``, the tangent space is
``T_X = {a U + sum_k (v_k in mode k, u_j elsewhere) : v_k perpendicular to u_k}``, of
dimension ``d = 1 + sum_k (n_k - 1)``. :func:`tangent_basis` builds an orthonormal basis
``B`` (shape ``(N, d)``, ``N = n1 n2 n3``): ``vec U`` and, per mode, an orthonormal basis
``Q_k`` of ``u_k``'s complement (a Householder-free QR of ``I - u_k u_k^T``) put in mode
``k``. The projection is ``P_T = B B^T``.

Retractions (the issue leaves the choice open; both are implemented and tested):

* ``"hosvd"`` (default): the rank-one truncated HOSVD of ``X + xi``: ``u_k`` = the top left
  singular vector of the mode-``k`` unfolding, ``lam = <X + xi, u1 (x) u2 (x) u3>``
  (sign folded into ``u1``). Quasi-optimal, hence a retraction.
* ``"factor"``: normalized factors. With ``xi = a U + lam sum_k v_k-terms`` it returns
  ``(lam + a) prod_k |u_k + v_k|`` and ``u_k' = (u_k + v_k) / |u_k + v_k|``; it agrees
  with ``X + xi`` to first order.

Methods (all ours, except the tensor-PCA ALS, which is tensorly's ``parafac``):

* ``"rgd"``: ``X+ = R_X(-eta grad f)``, ``grad f = P_T A^*(A X - y)``. ``step="cauchy"``
  (default) is the exact line search of the quadratic ``f`` along the Riemannian
  gradient in the ambient space, ``eta = |g|^2 / |A g|^2``; a float is a fixed step.
  On tensor PCA (``A = I``) the Cauchy step is exactly 1 and RGD coincides with RGN
  (``X+ = R(P_T T)``); use a fixed ``eta < 1`` there to see RGD's linear rate ``~ 1 - eta``.
* ``"rgn"``: the Gauss-Newton step ``xi = argmin_{xi in T_X} |A(X + xi) - y|^2`` (an
  ``m x d`` least squares with ``A B``), then ``X+ = R_X(xi)``. Noise free, the residual
  vanishes at ``X*`` and the rate is quadratic; with noise it is linear with a factor
  of the order of the noise, down to the statistical floor.
* ``"pgd"``: projected gradient (iterative hard thresholding): an ambient gradient step
  ``Z = X - eta A^*(A X - y)`` with the ambient Cauchy step ``eta = |g|^2/|A g|^2`` (or a
  fixed float), then the rank-one projection, taken as the rank-one truncated HOSVD
  (the exact best rank-one approximation is NP-hard; HOSVD is quasi-optimal).
* ``"als"``: alternating least squares over the factors. Tensor PCA: tensorly's
  ``parafac(rank=1)`` warm-started at ``x0``, one sweep per iteration recorded through its
  ``callback``. Regression: ours, each factor the exact least squares of
  ``m`` equations in ``n_k`` unknowns with the other factors fixed.

What is tensorly's: unfolding (``tl.unfold``), mode products (``tl.tenalg.multi_mode_dot``),
the rank-one tensor from factors (``tl.cp_to_tensor``) and the PCA ALS baseline
(``tensorly.decomposition.parafac``). Everything else (tangent spaces, retractions, RGD,
RGN, projected gradient, regression ALS, spectral initialization, rate fits) is ours.

Initialization (``x0=None``): the spectral estimate, rank-one HOSVD of ``A^*(y)`` (of ``T``
for PCA). The convergence claims are local; tests and benchmarks also start from the truth
perturbed by a given relative error (:func:`perturb`).

Rate fits (:func:`fit_linear_rate`, :func:`fit_order`): a least-squares slope of
``log e_t`` against ``t`` over a window (the linear rate ``rho``, ``e_{t+1} ~ rho e_t``), and
of ``log e_{t+1}`` against ``log e_t`` (the order ``p``, ``e_{t+1} ~ C e_t^p``: ``p ~ 2``
in a quadratic phase, ``p ~ 1`` in a linear one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import tensorly as tl
from numpy.typing import NDArray
from tensorly.decomposition import parafac

from optiforge.errors import SolverError

Array = NDArray[np.float64]
Method = Literal["rgd", "rgn", "pgd", "als"]
Retraction = Literal["hosvd", "factor"]

__all__ = [
    "RankOne",
    "SegreResult",
    "fit_linear_rate",
    "fit_order",
    "gaussian_measurements",
    "hosvd_rank_one",
    "perturb",
    "random_rank_one",
    "riemannian_gradient",
    "solve_rank_one",
    "spectral_init",
    "tangent_basis",
    "tangent_project",
]


@dataclass(frozen=True)
class RankOne:
    """A point ``lam * u1 (x) ... (x) uK`` of the Segre manifold.

    ``lam`` > 0 (a zero tensor is not on the manifold); ``factors[k]`` has shape ``(n_k,)``
    and unit norm.
    """

    lam: float
    factors: tuple[Array, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(int(f.shape[0]) for f in self.factors)

    def full(self) -> Array:
        """The dense tensor, shape ``(n1, ..., nK)`` (tensorly's ``cp_to_tensor``)."""
        weights = np.array([self.lam])
        return np.asarray(tl.cp_to_tensor((weights, [f[:, None] for f in self.factors])))


@dataclass
class SegreResult:
    """What a solve returns.

    ``x``: the last iterate. ``losses``: ``f(X_t)`` for ``t = 0..n_iter`` (shape
    ``(n_iter+1,)``). ``errors``: ``|X_t - X*|_F / |X*|_F`` when ``truth`` was given, else
    empty. ``steps``: the step sizes used (RGD/PGD), else empty.
    """

    x: RankOne
    method: str
    losses: Array
    errors: Array = field(default_factory=lambda: np.zeros(0))
    steps: Array = field(default_factory=lambda: np.zeros(0))


# ---------------------------------------------------------------- problem helpers


def random_rank_one(shape: Sequence[int], lam: float, rng: np.random.Generator) -> RankOne:
    """A rank-one tensor with uniformly random unit factors and weight ``lam``."""
    if lam <= 0 or any(n < 2 for n in shape) or len(shape) < 2:
        raise SolverError("random_rank_one needs lam > 0, order >= 2 and every n_k >= 2")
    facs = []
    for n in shape:
        v = rng.standard_normal(n)
        facs.append(v / np.linalg.norm(v))
    return RankOne(float(lam), tuple(facs))


def gaussian_measurements(
    x: RankOne, m: int, sigma: float, rng: np.random.Generator
) -> tuple[Array, Array]:
    """``A`` with iid ``N(0, 1/m)`` entries (shape ``(m, *x.shape)``, so ``E A^*A = I``) and
    ``y = A(X) + sigma * eps`` (shape ``(m,)``)."""
    if m < 1 or sigma < 0:
        raise SolverError("gaussian_measurements needs m >= 1 and sigma >= 0")
    a = rng.standard_normal((m, *x.shape)) / np.sqrt(m)
    y = a.reshape(m, -1) @ x.full().ravel() + sigma * rng.standard_normal(m)
    return a, y


def perturb(x: RankOne, rel: float, rng: np.random.Generator) -> RankOne:
    """``x`` moved by a random direction of relative Frobenius size ``rel``, then retracted
    to the manifold (rank-one HOSVD): a local start for the convergence claims."""
    full = x.full()
    d = rng.standard_normal(full.shape)
    d *= rel * np.linalg.norm(full) / np.linalg.norm(d)
    return hosvd_rank_one(full + d)


# ---------------------------------------------------------------- geometry


def hosvd_rank_one(z: Array) -> RankOne:
    """Rank-one truncated HOSVD of ``z`` (shape ``(n1, ..., nK)``): top left singular
    vector of each unfolding, ``lam = <z, u1 (x) ... (x) uK>``, a negative sign folded
    into ``u1``. Raises :class:`SolverError` when the core is zero."""
    facs: list[Array] = []
    for k in range(z.ndim):
        unf = np.asarray(tl.unfold(z, k))
        w, v = np.linalg.eigh(unf @ unf.T)
        facs.append(v[:, -1].copy())
    lam = float(np.asarray(tl.tenalg.multi_mode_dot(z, facs, transpose=True)))
    if lam == 0.0 or not np.isfinite(lam):
        raise SolverError("rank-one projection of a tensor with zero (or non-finite) core")
    if lam < 0:
        facs[0] = -facs[0]
        lam = -lam
    return RankOne(lam, tuple(facs))


def _complement(u: Array) -> Array:
    """Orthonormal basis of ``u``'s orthogonal complement, shape ``(n, n-1)``."""
    n = u.shape[0]
    # QR of [u, I]: the first column spans u, the next n-1 the complement.
    q, _ = np.linalg.qr(np.column_stack([u, np.eye(n)]))
    return q[:, 1:n]


def _mode_term(factors: Sequence[Array], k: int, vk: Array) -> Array:
    """The tensor with ``vk`` (shape ``(n_k, r)``) in mode ``k`` and ``u_j`` elsewhere,
    shape ``(n1, ..., nK, r)``."""
    mats = [f[:, None] for f in factors]
    mats[k] = vk
    r = vk.shape[1]
    out = np.ones((1,) * len(factors) + (r,))
    for j, mat in enumerate(mats):
        shp = [1] * len(factors) + [mat.shape[1]]
        shp[j] = mat.shape[0]
        out = out * mat.reshape(shp)
    return out


def tangent_basis(x: RankOne) -> Array:
    """Orthonormal basis of ``T_X S`` as columns, shape ``(N, d)``, ``N = prod n_k``,
    ``d = 1 + sum (n_k - 1)``. Column 0 is ``vec U``; then, per mode ``k``, the columns of
    ``Q_k`` (``u_k``'s complement) in mode ``k`` with ``u_j`` elsewhere."""
    cols = [_mode_term(x.factors, 0, x.factors[0][:, None]).reshape(-1, 1)]
    for k, u in enumerate(x.factors):
        cols.append(_mode_term(x.factors, k, _complement(u)).reshape(-1, u.shape[0] - 1))
    return np.concatenate(cols, axis=1)


def tangent_project(x: RankOne, g: Array) -> Array:
    """``P_T g`` for an ambient tensor ``g`` (shape ``x.shape``), computed by contractions
    (no basis): ``<g, U> U + sum_k ((I - u_k u_k^T) g_k) in mode k``, with ``g_k`` ``g``
    contracted with every ``u_j``, ``j != k``."""
    facs = list(x.factors)
    a = float(np.asarray(tl.tenalg.multi_mode_dot(g, facs, transpose=True)))
    out = a * _mode_term(facs, 0, facs[0][:, None])[..., 0]
    for k, u in enumerate(facs):
        gk = np.asarray(tl.tenalg.multi_mode_dot(g, facs, skip=k, transpose=True)).ravel()
        gk = gk - u * (u @ gk)
        out = out + _mode_term(facs, k, gk[:, None])[..., 0]
    return out


def _retract(x: RankOne, xi: Array, how: Retraction) -> RankOne:
    """``R_X(xi)`` for a tangent ``xi`` (dense, shape ``x.shape``)."""
    if how == "hosvd":
        return hosvd_rank_one(x.full() + xi)
    if how == "factor":
        facs = list(x.factors)
        a = float(np.asarray(tl.tenalg.multi_mode_dot(xi, facs, transpose=True)))
        lam_new = x.lam + a
        new = []
        for k, u in enumerate(facs):
            gk = np.asarray(tl.tenalg.multi_mode_dot(xi, facs, skip=k, transpose=True)).ravel()
            vk = (gk - u * (u @ gk)) / x.lam
            w = u + vk
            nw = float(np.linalg.norm(w))
            lam_new *= nw
            new.append(w / nw)
        if lam_new <= 0 or not np.isfinite(lam_new):
            raise SolverError("factor retraction left the manifold (weight <= 0); step too long")
        return RankOne(float(lam_new), tuple(new))
    raise SolverError(f"unknown retraction {how!r}; use 'hosvd' or 'factor'")


# ---------------------------------------------------------------- the operator


class _Op:
    """``A`` as forward/adjoint; ``None`` is the identity (tensor PCA)."""

    def __init__(self, a: Array | None, y: Array, shape: tuple[int, ...]) -> None:
        self.shape = shape
        self.mat = None if a is None else a.reshape(a.shape[0], -1)
        self.y = y.ravel()

    def fwd(self, z: Array) -> Array:
        return z.ravel() if self.mat is None else self.mat @ z.ravel()

    def adj(self, r: Array) -> Array:
        return (r if self.mat is None else self.mat.T @ r).reshape(self.shape)

    def fwd_cols(self, b: Array) -> Array:
        return b if self.mat is None else self.mat @ b

    def loss(self, x: RankOne) -> float:
        r = self.fwd(x.full()) - self.y
        return 0.5 * float(r @ r)


def _validate(y: Array, a: Array | None) -> tuple[int, ...]:
    if a is None:
        if y.ndim < 2:
            raise SolverError("tensor PCA (A=None) needs y the observed tensor, order >= 2")
        shape = tuple(int(s) for s in y.shape)
    else:
        if a.ndim < 3:
            raise SolverError("A must have shape (m, n1, ..., nK) with K >= 2")
        if y.shape != (a.shape[0],):
            raise SolverError(f"y must have shape ({a.shape[0]},), got {y.shape}")
        shape = tuple(int(s) for s in a.shape[1:])
    if any(n < 2 for n in shape):
        raise SolverError("every mode needs n_k >= 2")
    if not (np.all(np.isfinite(y)) and (a is None or np.all(np.isfinite(a)))):
        raise SolverError("non-finite data")
    return shape


def spectral_init(y: Array, a: Array | None = None) -> RankOne:
    """Rank-one HOSVD of ``A^*(y)`` (of ``y`` itself for tensor PCA)."""
    shape = _validate(y, a)
    op = _Op(a, y, shape)
    return hosvd_rank_one(op.adj(op.y))


def riemannian_gradient(x: RankOne, y: Array, a: Array | None = None) -> Array:
    """``grad f(X) = P_T A^*(A X - y)``, shape ``x.shape``."""
    shape = _validate(y, a)
    op = _Op(a, y, shape)
    return tangent_project(x, op.adj(op.fwd(x.full()) - op.y))


# ---------------------------------------------------------------- solvers


def _als_regression_sweep(x: RankOne, op: _Op) -> RankOne:
    assert op.mat is not None
    facs = list(x.factors)
    lam = x.lam
    amat = op.mat.reshape(op.mat.shape[0], *op.shape)
    for k in range(len(facs)):
        # design (m, n_k): A_i contracted with u_j, j != k (mode 0 of amat is the sample)
        others = [facs[j] for j in range(len(facs)) if j != k]
        modes = [j + 1 for j in range(len(facs)) if j != k]
        design = np.asarray(
            tl.tenalg.multi_mode_dot(amat, others, modes=modes, transpose=True)
        ).reshape(amat.shape[0], -1)
        w, *_ = np.linalg.lstsq(design, op.y, rcond=None)
        nw = float(np.linalg.norm(w))
        if nw == 0.0:
            raise SolverError("ALS factor collapsed to zero")
        facs[k] = w / nw
        lam = nw
    if lam < 0:
        facs[0], lam = -facs[0], -lam
    return RankOne(float(lam), tuple(facs))


def _cauchy(g: Array, op: _Op) -> float:
    ag = op.fwd(g)
    den = float(ag @ ag)
    num = float(np.sum(g * g))
    if den <= 0.0:
        raise SolverError("zero curvature along the gradient (A annihilates it)")
    return num / den


def solve_rank_one(
    y: Array,
    a: Array | None = None,
    *,
    method: Method = "rgn",
    x0: RankOne | None = None,
    n_iter: int = 30,
    step: float | Literal["cauchy"] = "cauchy",
    retraction: Retraction = "hosvd",
    truth: RankOne | None = None,
    tol: float = 0.0,
) -> SegreResult:
    """Recover a rank-one tensor from ``y`` (and ``A``).

    Args:
        y: tensor PCA: the observed tensor, shape ``(n1, ..., nK)`` (``a=None``);
            regression: the measurements, shape ``(m,)``.
        a: ``None`` (tensor PCA) or the sensing tensors, shape ``(m, n1, ..., nK)``.
        method: ``"rgd"``, ``"rgn"``, ``"pgd"`` (projected gradient) or ``"als"``.
        x0: the start (default: :func:`spectral_init`).
        n_iter: iterations (ALS: sweeps over all factors).
        step: RGD/PGD step: ``"cauchy"`` (exact line search of the quadratic along the
            (Riemannian, resp. ambient) gradient) or a fixed positive float.
        retraction: RGD/RGN retraction, ``"hosvd"`` or ``"factor"``.
        truth: if given, ``errors`` records the relative Frobenius error per iterate.
        tol: stop early once the relative loss decrease is below ``tol`` (0: never).

    Returns:
        :class:`SegreResult`; every iterate is rank one (feasible).
    """
    shape = _validate(y, a)
    if n_iter < 0:
        raise SolverError("n_iter must be >= 0")
    if method not in ("rgd", "rgn", "pgd", "als"):
        raise SolverError(f"unknown method {method!r}")
    if not (step == "cauchy" or (isinstance(step, float | int) and step > 0)):
        raise SolverError("step must be 'cauchy' or a positive number")
    op = _Op(a, y, shape)
    x = spectral_init(y, a) if x0 is None else x0
    if x.shape != shape:
        raise SolverError(f"x0 has shape {x.shape}, the problem {shape}")
    tfull = None if truth is None else truth.full()
    tnorm = 0.0 if tfull is None else float(np.linalg.norm(tfull))

    iterates: list[RankOne] = [x]
    steps: list[float] = []
    if method == "als" and a is None:
        recorded: list[RankOne] = []

        def cb(cp: tuple[Array, list[Array]], _err: float) -> None:
            w, fs = cp
            facs = [np.asarray(f)[:, 0] for f in fs]
            lam = float(np.asarray(w)[0]) * float(np.prod([np.linalg.norm(f) for f in facs]))
            facs = [f / np.linalg.norm(f) for f in facs]
            if lam < 0:
                facs[0], lam = -facs[0], -lam
            recorded.append(RankOne(lam, tuple(facs)))

        init = tl.cp_tensor.CPTensor((np.array([x.lam]), [f[:, None].copy() for f in x.factors]))
        parafac(
            np.asarray(y, dtype=float),
            rank=1,
            n_iter_max=n_iter,
            init=init,
            # tensorly 0.10 only computes the error its callback receives when tol > 0;
            # 1e-300 stops only on an exactly repeated error (the iterate is then final)
            tol=1e-300,
            normalize_factors=False,
            callback=cb,
        )
        iterates = recorded[: n_iter + 1] if recorded else [x]
        iterates += [iterates[-1]] * (n_iter + 1 - len(iterates))
    else:
        prev = op.loss(x)
        for _ in range(n_iter):
            r = op.fwd(x.full()) - op.y
            if method == "als":
                x = _als_regression_sweep(x, op)
            elif method == "pgd":
                g = op.adj(r)
                eta = _cauchy(g, op) if step == "cauchy" else float(step)
                steps.append(eta)
                x = hosvd_rank_one(x.full() - eta * g)
            elif method == "rgd":
                g = tangent_project(x, op.adj(r))
                if not np.any(g):
                    break
                eta = _cauchy(g, op) if step == "cauchy" else float(step)
                steps.append(eta)
                x = _retract(x, -eta * g, retraction)
            else:  # rgn
                b = tangent_basis(x)
                ab = op.fwd_cols(b)
                c, *_ = np.linalg.lstsq(ab, -r, rcond=None)
                x = _retract(x, (b @ c).reshape(shape), retraction)
            iterates.append(x)
            cur = op.loss(x)
            if tol > 0 and prev - cur <= tol * max(prev, 1e-300):
                break
            prev = cur
    losses = np.array([op.loss(z) for z in iterates])
    errors = (
        np.zeros(0)
        if tfull is None
        else np.array([np.linalg.norm(z.full() - tfull) / tnorm for z in iterates])
    )
    return SegreResult(iterates[-1], method, losses, errors, np.array(steps))


# ---------------------------------------------------------------- rate fits


def fit_linear_rate(errors: Array, lo: float, hi: float) -> float:
    """Geometric rate ``rho`` (``e_{t+1} ~ rho e_t``) from a least-squares fit of
    ``log e_t`` on ``t`` over the iterates with ``lo < e_t < hi``. Needs >= 3 of them."""
    idx = np.flatnonzero((errors > lo) & (errors < hi))
    if idx.size < 3:
        raise SolverError(f"only {idx.size} errors in ({lo:g}, {hi:g}); cannot fit a rate")
    slope = np.polyfit(idx.astype(float), np.log(errors[idx]), 1)[0]
    return float(np.exp(slope))


def fit_order(errors: Array, lo: float, hi: float) -> float:
    """Convergence order ``p`` (``e_{t+1} ~ C e_t^p``): the slope of ``log e_{t+1}`` on
    ``log e_t`` over the consecutive pairs with both errors in ``(lo, hi)``. Needs >= 2."""
    e0, e1 = errors[:-1], errors[1:]
    ok = (e0 > lo) & (e0 < hi) & (e1 > lo) & (e1 < hi)
    if int(ok.sum()) < 2:
        raise SolverError(f"only {int(ok.sum())} pairs in ({lo:g}, {hi:g}); cannot fit")
    return float(np.polyfit(np.log(e0[ok]), np.log(e1[ok]), 1)[0])
