"""A random exploration step for d-stationarity around DCA and the prox-linear method.

Nonsmooth nonconvex methods such as DCA (difference-of-convex programs) or the prox-linear
method (composite problems ``h(c(x)) + r(x)``) stop at *critical* points: points where the
method's own convex model has no descent (for DCA ``∂g(x) ∩ (∂h(x) - N_X(x)) != ∅`` for the
subgradient the method chose). Such a point need not be *d-stationary* (directional
stationary): ``F'(x; d) >= 0`` for every feasible direction ``d``. The gap appears at kinks
where the method's choice of subgradient / generalized-Jacobian element hides a descent
direction, e.g. DCA picking the barycentre of the active pieces of ``h = max_i(a_i'x +
b_i)`` where the pieces tie.

``RandomExploration`` wraps any base method (anything with ``.problem`` and ``run(x0)``):
run the base method; at its point ``x`` try ``trials`` random steps ``x + t d``, the
direction ``d`` drawn in the feasible (tangent) cone and the step ``t`` log-uniform in
``step_range`` (clipped to stay feasible); accept the first one whose objective value is
below ``F(x)`` by the margin ``decrease_margin * t^2``; restart the base method from the
accepted point; stop when a whole round of trials finds no decrease. At a point that is
not d-stationary a direction with ``F'(x; d) < 0`` exists and an open cone of directions
around it descends for small ``t``, so a round finds it with positive probability per
trial; where the base method already ends at a d-stationary point the wrapper costs one
round of ``trials`` function evaluations and leaves the base trajectory untouched (the base
runs first, unchanged; a long step may still find a lower basin, then the base restarts).

Choices the description leaves open (ours, documented and tested):

- ``direction="cone"`` (default): a standard normal vector projected onto the tangent cone
  ``T_X(x) = {d : G_A d <= 0}`` of the polyhedral feasible set (``A`` the active rows,
  within ``active_tol``) and normalized: the projection is Moreau's decomposition, ``z -
  G_A' lam`` with ``lam = argmin_{lam >= 0} |G_A' lam - z|`` (scipy's NNLS). Not uniform on
  ``T_X(x) ∩ sphere`` but full-support on it. ``direction="sparse-cone"``: the same with
  the Gaussian zeroed outside a random support whose size is log-uniform in ``{1..n}``
  before the projection: at a vertex the descent directions can form a narrow cone around
  an edge (``trapped_dc_instance``: around ``-e_0``), which a dense Gaussian hits with
  probability falling like ``2^-n``; sparse draws hit it with probability ``~ ln 2 / (2 n
  ln(n + 1))``. ``direction="sphere"``: uniform on the unit
  sphere; a direction leaving the set (through a row within ``active_tol`` of active) gets
  a zero feasible step and is rejected.
- Step sizes log-uniform in ``step_range = (1e-4, 1.0)``, each clipped to the largest
  feasible step along ``d`` (ratio test on the inactive rows).
- Acceptance: ``F(x + t d) < F(x) - decrease_margin * t^2 - 1e-12 (1 + |F(x)|)``; the
  margin keeps solver round-off from counting as progress.
- The certificate ``min_directional_derivative(x)`` is ``min F'(x; d)`` over ``d in
  T_X(x)`` with ``|d|_inf <= 1`` (an LP or a few LPs, scipy's HiGHS): below ``-tol`` means
  not d-stationary.

Problems (feasible set ``X = {x : G x <= e}`` throughout, ``G`` is ``p x n``):

- ``DCProgram``: ``F(x) = 0.5 x'Qx + q'x - max_i (A x + b)_i`` over ``X``. DCA solves
  ``min_x 0.5 x'Qx + (q - y)'x`` over ``X`` with ``y in ∂h(x_k)``; the rule for ``y`` at a
  tie is ``"first"`` (gradient of the lowest-index active piece) or ``"average"`` (the
  barycentre of the active pieces' gradients, a valid subgradient that can stall).
- ``KinkedComposite``: ``F(x) = |c(x)|_1 + (mu/2)|x|^2 + indicator_X(x)`` with ``c(x) =
  [c_s(x); c_k(x)]``: ``c_s`` smooth (user callable and Jacobian), ``c_k(x)_l = min_j
  (B_l x + beta_l)_j`` piecewise affine with concave kinks. The prox-linear step solves
  ``min_y |c(x) + J (y - x)|_1 + (mu/2)|y|^2 + |y - x|^2 / (2 t)`` over ``X`` with ``J`` an
  element of the generalized Jacobian (kinked rows by the same ``"first"`` / ``"average"``
  rule), halving ``t`` until ``F(y)`` is below the model value. With ``c`` smooth the
  method's fixed points are d-stationary; the kinked rows (``c`` only piecewise smooth)
  are what lets a Jacobian choice hide a descent direction.

What is a library's: cvxpy (CLARABEL) solves the convex subproblems of DCA and the
prox-linear method (compiled once with parameters); scipy's HiGHS solves the certificate
LPs and scipy's NNLS the tangent-cone projection. The methods, the exploration step, the
certificates and the instance generators are ours.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal, Protocol

import cvxpy as cp
import numpy as np
from numpy.typing import NDArray
from scipy.optimize import linprog, nnls

from optiforge.errors import SolverError

Array = NDArray[np.float64]
Index = NDArray[np.intp]
TieRule = Literal["first", "average"]

CLARABEL_OPTS: dict[str, float] = {
    "tol_gap_abs": 1e-12,
    "tol_gap_rel": 1e-12,
    "tol_feas": 1e-12,
    "tol_ktratio": 1e-10,
}
"""Tight interior-point tolerances: with CLARABEL's defaults a bound whose multiplier is
near zero can stay ``1e-6`` away from active, and the certificate then sees a descent
direction that exists only for steps of that size."""

__all__ = [
    "DCA",
    "BaseRun",
    "DCProgram",
    "ExplorationResult",
    "KinkedComposite",
    "Polyhedron",
    "ProxLinear",
    "RandomExploration",
    "kinked_composite_instance",
    "random_dc_instance",
    "stalled_dc_instance",
    "trapped_dc_instance",
]


@dataclass(frozen=True)
class Polyhedron:
    """The feasible set ``{x : G x <= e}``; ``G`` is ``p x n``, ``e`` is ``(p,)``."""

    G: Array
    e: Array

    @staticmethod
    def box(n: int, lo: float, hi: float) -> Polyhedron:
        """The box ``lo <= x_i <= hi`` as ``2n`` rows."""
        eye = np.eye(n)
        return Polyhedron(np.vstack([eye, -eye]), np.concatenate([np.full(n, hi), np.full(n, -lo)]))

    def slack(self, x: Array) -> Array:
        """``e - G x`` (``(p,)``), nonnegative on the set."""
        return np.asarray(self.e - self.G @ x, dtype=np.float64)

    def active(self, x: Array, tol: float) -> Index:
        """Indices of rows with slack at most ``tol``."""
        return np.flatnonzero(self.slack(x) <= tol)

    def project_to_cone(self, z: Array, x: Array, tol: float) -> Array:
        """Euclidean projection of ``z`` (``(n,)``) onto the tangent cone at ``x``."""
        act = self.active(x, tol)
        if act.size == 0:
            return z.copy()
        lam, _ = nnls(self.G[act].T, z)
        return np.asarray(z - self.G[act].T @ lam, dtype=np.float64)

    def max_step(self, x: Array, d: Array, tol: float = 0.0) -> float:
        """Largest ``t >= 0`` with ``x + t d`` in the set (``inf`` if unbounded).

        Rows with slack at most ``tol`` count as active (slack ``0``), so a direction
        leaving the set through them gets ``0``, not a round-off-sized step.
        """
        rate = self.G @ d
        slack = self.slack(x)
        slack = np.where(slack <= tol, 0.0, slack)
        pos = rate > 1e-12
        if not np.any(pos):
            return float("inf")
        return float(np.min(slack[pos] / rate[pos]))


class Problem(Protocol):
    """What the exploration step and the certificate need of a problem."""

    constraints: Polyhedron

    def value(self, x: Array) -> float: ...

    def min_directional_derivative(self, x: Array) -> float: ...


@dataclass
class BaseRun:
    """A base method's run: last point, iterations, objective per iterate (``(k + 1,)``)."""

    x: Array
    iterations: int
    values: list[float]


def iterate(
    step: Callable[[Array], Array],
    value: Callable[[Array], float],
    x0: Array,
    max_iter: int,
    tol: float,
) -> BaseRun:
    """A base method's loop: ``step`` until the move is below ``tol`` (relative to ``|x|``)
    or ``max_iter`` steps; the objective ``value`` at every iterate."""
    x = np.asarray(x0, dtype=np.float64).copy()
    values = [value(x)]
    for k in range(1, max_iter + 1):
        x_new = step(x)
        values.append(value(x_new))
        done = np.linalg.norm(x_new - x) <= tol * (1.0 + np.linalg.norm(x))
        x = x_new
        if done:
            return BaseRun(x, k, values)
    return BaseRun(x, max_iter, values)


class BaseMethod(Protocol):
    """A base method the exploration step wraps."""

    @property
    def problem(self) -> Problem: ...

    def run(self, x0: Array) -> BaseRun: ...


def _tangent_rows(constraints: Polyhedron, x: Array, tol: float) -> Array:
    return constraints.G[constraints.active(x, tol)]


def _lp_min(
    c: Array,
    A_ub: Array | None,
    b_ub: Array | None,
    bounds: list[tuple[float | None, float | None]],
) -> float:
    res = linprog(c, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if res.status != 0:
        raise SolverError(f"certificate LP failed: {res.message}")
    return float(res.fun)


# --------------------------------------------------------------------------- DC programs


@dataclass
class DCProgram:
    """``F(x) = 0.5 x'Qx + q'x - max_i (A x + b)_i`` over ``X``.

    ``Q`` is ``n x n`` positive definite, ``q`` ``(n,)``, ``A`` ``k x n`` (the pieces of
    ``h``), ``b`` ``(k,)``.
    """

    Q: Array
    q: Array
    A: Array
    b: Array
    constraints: Polyhedron
    active_tol: float = 1e-6

    def value(self, x: Array) -> float:
        return float(0.5 * x @ self.Q @ x + self.q @ x - np.max(self.A @ x + self.b))

    def active_pieces(self, x: Array) -> Index:
        """Indices of the pieces of ``h`` within ``active_tol`` of the max."""
        vals = self.A @ x + self.b
        return np.flatnonzero(vals >= vals.max() - self.active_tol)

    def subgradient_h(self, x: Array, rule: TieRule) -> Array:
        """An element of ``∂h(x)`` (``(n,)``) chosen by ``rule`` among the active pieces."""
        act = self.active_pieces(x)
        if rule == "first":
            return np.asarray(self.A[act[0]], dtype=np.float64)
        return np.asarray(self.A[act].mean(axis=0), dtype=np.float64)

    def min_directional_derivative(self, x: Array) -> float:
        """``min F'(x; d)`` over ``d in T_X(x)``, ``|d|_inf <= 1``.

        ``F'(x; d) = (Qx + q)'d - max_{i active} a_i'd = min_i (Qx + q - a_i)'d``: one LP
        per active piece.
        """
        grad = self.Q @ x + self.q
        rows = _tangent_rows(self.constraints, x, self.active_tol)
        A_ub = rows if rows.size else None
        b_ub = np.zeros(rows.shape[0]) if rows.size else None
        bounds: list[tuple[float | None, float | None]] = [(-1.0, 1.0)] * x.size
        return min(_lp_min(grad - self.A[i], A_ub, b_ub, bounds) for i in self.active_pieces(x))


class DCA:
    """DCA: ``x_{k+1} = argmin_{x in X} 0.5 x'Qx + (q - y_k)'x``, ``y_k in ∂h(x_k)``.

    Stops when ``|x_{k+1} - x_k| <= tol (1 + |x_k|)`` or after ``max_iter`` steps.
    """

    def __init__(
        self, problem: DCProgram, *, rule: TieRule = "first", tol: float = 1e-7, max_iter: int = 500
    ) -> None:
        self._problem = problem
        self.rule: TieRule = rule
        self.tol = tol
        self.max_iter = max_iter
        n = problem.Q.shape[0]
        self._x = cp.Variable(n)
        self._y = cp.Parameter(n)
        cons = problem.constraints
        obj = 0.5 * cp.quad_form(self._x, cp.psd_wrap(problem.Q)) + (problem.q - self._y) @ self._x
        self._sub = cp.Problem(cp.Minimize(obj), [cons.G @ self._x <= cons.e])

    @property
    def problem(self) -> DCProgram:
        return self._problem

    def step(self, x: Array) -> Array:
        """One DCA step from ``x`` (``(n,)``)."""
        self._y.value = self._problem.subgradient_h(x, self.rule)
        self._sub.solve(solver=cp.CLARABEL, **CLARABEL_OPTS)
        if self._x.value is None:
            raise SolverError(f"DCA subproblem: {self._sub.status}")
        return np.asarray(self._x.value, dtype=np.float64)

    def run(self, x0: Array) -> BaseRun:
        return iterate(self.step, self._problem.value, x0, self.max_iter, self.tol)


# ---------------------------------------------------------------- kinked composite problems


@dataclass
class KinkedComposite:
    """``F(x) = |c(x)|_1 + (mu/2)|x|^2`` over ``X``, ``c = [c_s; c_k]``.

    ``smooth(x) -> (m_s,)`` and ``smooth_jac(x) -> m_s x n``; the kinked rows ``c_k(x)_l =
    min_j (B[l] x + beta[l])_j`` with ``B[l]`` ``k_l x n`` and ``beta[l]`` ``(k_l,)``.
    """

    smooth: Callable[[Array], Array]
    smooth_jac: Callable[[Array], Array]
    B: list[Array]
    beta: list[Array]
    constraints: Polyhedron
    mu: float = 0.0
    active_tol: float = 1e-6
    max_selections: int = 256

    @property
    def n(self) -> int:
        return int(self.constraints.G.shape[1])

    def residual(self, x: Array) -> Array:
        """``c(x)`` (``(m_s + L,)``)."""
        kinked = [float(np.min(Bl @ x + bl)) for Bl, bl in zip(self.B, self.beta, strict=True)]
        return np.concatenate([np.asarray(self.smooth(x), dtype=np.float64), np.array(kinked)])

    def value(self, x: Array) -> float:
        return float(np.abs(self.residual(x)).sum() + 0.5 * self.mu * x @ x)

    def _active(self, x: Array, row: int) -> Index:
        vals = self.B[row] @ x + self.beta[row]
        return np.flatnonzero(vals <= vals.min() + self.active_tol)

    def jacobian(self, x: Array, rule: TieRule) -> Array:
        """A generalized Jacobian element (``(m_s + L) x n``), kinked rows by ``rule``."""
        rows = []
        for row, Bl in enumerate(self.B):
            act = self._active(x, row)
            rows.append(Bl[act[0]] if rule == "first" else Bl[act].mean(axis=0))
        Js = np.asarray(self.smooth_jac(x), dtype=np.float64).reshape(-1, self.n)
        return np.vstack([Js, np.array(rows).reshape(-1, self.n)])

    def min_directional_derivative(self, x: Array) -> float:
        """``min F'(x; d)`` over ``d in T_X(x)``, ``|d|_inf <= 1``.

        ``F'(x; d) = sum_i |.|'(c_i; c_i'(x; d)) + mu x'd``. A kinked row with ``c_l > 0``
        contributes ``min_j B_lj'd`` (enumerated over the active pieces: exact), ``c_l < 0``
        contributes ``max_j -B_lj'd`` (epigraph), ``c_l = 0`` contributes ``|min_j
        B_lj'd|`` (enumerated, ``min_j |B_lj'd|``: a lower bound). Zero smooth rows give
        ``|grad_i'd|`` (epigraph). One LP per selection of active pieces.
        """
        n, ztol = self.n, self.active_tol
        c = self.residual(x)
        Js = np.asarray(self.smooth_jac(x), dtype=np.float64).reshape(-1, n)
        ms = Js.shape[0]
        lin = self.mu * x.copy()
        epi: list[Array] = []  # each: rows R with term max_r R[r]'d (one epigraph variable)
        for i in range(ms):
            if abs(c[i]) > ztol:
                lin += np.sign(c[i]) * Js[i]
            else:
                epi.append(np.vstack([Js[i], -Js[i]]))
        enum_rows: list[list[tuple[Array, bool]]] = []  # per enumerated row: (vector, abs?)
        for row in range(len(self.B)):
            act = self._active(x, row)
            cl = c[ms + row]
            if cl > ztol:
                enum_rows.append([(self.B[row][j], False) for j in act])
            elif cl < -ztol:
                epi.append(-self.B[row][act])
            else:
                enum_rows.append([(self.B[row][j], True) for j in act])
        selections = list(itertools.islice(itertools.product(*enum_rows), self.max_selections + 1))
        if len(selections) > self.max_selections:
            raise SolverError("too many active-piece selections for the certificate")
        cons_rows = _tangent_rows(self.constraints, x, ztol)
        best = float("inf")
        for sel in selections:
            lin_s = lin.copy()
            epi_s = list(epi)
            for vec, absolute in sel:
                if absolute:
                    epi_s.append(np.vstack([vec, -vec]))
                else:
                    lin_s += vec
            ne = len(epi_s)
            cost = np.concatenate([lin_s, np.ones(ne)])
            A_parts = [np.hstack([cons_rows, np.zeros((cons_rows.shape[0], ne))])]
            for k, R in enumerate(epi_s):
                block = np.zeros((R.shape[0], n + ne))
                block[:, :n] = R
                block[:, n + k] = -1.0
                A_parts.append(block)
            A_ub = np.vstack(A_parts)
            bounds: list[tuple[float | None, float | None]] = [(-1.0, 1.0)] * n + [
                (None, None)
            ] * ne
            if A_ub.shape[0] == 0:
                best = min(best, _lp_min(cost, None, None, bounds))
            else:
                best = min(best, _lp_min(cost, A_ub, np.zeros(A_ub.shape[0]), bounds))
        return best


class ProxLinear:
    """The prox-linear method for ``KinkedComposite``.

    ``x_{k+1} = argmin_{y in X} |c(x_k) + J_k (y - x_k)|_1 + (mu/2)|y|^2 + |y - x_k|^2 /
    (2 t)``, ``t`` halved (from ``t0``, at most 30 times) until ``F(x_{k+1})`` is at most the
    model value there. Stops when ``|x_{k+1} - x_k| <= tol (1 + |x_k|)``.
    """

    def __init__(
        self,
        problem: KinkedComposite,
        *,
        rule: TieRule = "first",
        t0: float = 1.0,
        tol: float = 1e-7,
        max_iter: int = 300,
    ) -> None:
        self._problem = problem
        self.rule: TieRule = rule
        self.t0 = t0
        self.tol = tol
        self.max_iter = max_iter
        # CLARABEL's defaults: the tight CLARABEL_OPTS report "inaccurate" on subproblems
        # whose l1 term reaches 0 (interpolating residuals); pass tighter ones for bound-active
        # solutions (see CLARABEL_OPTS)
        self.solver_opts: dict[str, float] = {}
        n = problem.n
        m = problem.residual(np.zeros(n)).size
        self._y = cp.Variable(n)
        self._J = cp.Parameter((m, n))
        self._off = cp.Parameter(m)  # c(x) - J x
        self._sxk = cp.Parameter(n)  # x_k / sqrt(2 t)
        self._s = cp.Parameter(nonneg=True)  # 1 / sqrt(2 t): keeps the problem DPP
        cons = problem.constraints
        obj = (
            cp.norm1(self._off + self._J @ self._y)
            + 0.5 * problem.mu * cp.sum_squares(self._y)
            + cp.sum_squares(self._s * self._y - self._sxk)
        )
        self._sub = cp.Problem(cp.Minimize(obj), [cons.G @ self._y <= cons.e])

    @property
    def problem(self) -> KinkedComposite:
        return self._problem

    def step(self, x: Array) -> Array:
        """One prox-linear step from ``x`` (``(n,)``) with backtracking on ``t``."""
        p = self._problem
        c = p.residual(x)
        J = p.jacobian(x, self.rule)
        self._J.value = J
        self._off.value = c - J @ x
        t = self.t0
        y = x
        for _ in range(30):
            self._s.value = 1.0 / np.sqrt(2.0 * t)
            self._sxk.value = x * self._s.value
            self._sub.solve(solver=cp.CLARABEL, **self.solver_opts)
            if self._y.value is None:
                raise SolverError(f"prox-linear subproblem: {self._sub.status}")
            y = np.asarray(self._y.value, dtype=np.float64)
            model = float(np.abs(c + J @ (y - x)).sum() + 0.5 * p.mu * y @ y)
            if p.value(y) <= model + 0.5 / t * float((y - x) @ (y - x)) + 1e-10:
                return y
            t *= 0.5
        return y

    def run(self, x0: Array) -> BaseRun:
        return iterate(self.step, self._problem.value, x0, self.max_iter, self.tol)


# ------------------------------------------------------------------- the exploration step


@dataclass
class ExplorationResult:
    """The wrapped run: last point, base iterations in all, rounds, accepted steps.

    ``exploration_trials`` counts sampled directions, ``exploration_evals`` the objective
    evaluations (a direction with a zero feasible step costs no evaluation).
    """

    x: Array
    base_iterations: int
    rounds: int
    accepted: int
    exploration_evals: int
    exploration_trials: int = 0
    values: list[float] = field(default_factory=list)


class RandomExploration:
    """Wrap a base method with a random exploration step (see the module docstring).

    ``trials`` random steps per round; ``max_rounds`` restarts of the base method at most.
    """

    def __init__(
        self,
        base: BaseMethod,
        *,
        trials: int = 64,
        step_range: tuple[float, float] = (1e-4, 1.0),
        direction: Literal["cone", "sparse-cone", "sphere"] = "cone",
        decrease_margin: float = 1e-8,
        max_rounds: int = 20,
        active_tol: float = 1e-6,
        seed: int = 0,
    ) -> None:
        if not 0.0 < step_range[0] <= step_range[1]:
            raise SolverError(f"step_range must satisfy 0 < lo <= hi, got {step_range}")
        self.base = base
        self.trials = trials
        self.step_range = step_range
        self.direction = direction
        self.decrease_margin = decrease_margin
        self.max_rounds = max_rounds
        self.active_tol = active_tol
        self.rng = np.random.default_rng(seed)

    def sample_direction(self, x: Array) -> Array | None:
        """A unit direction (``(n,)``) by ``self.direction``; ``None`` if the cone is ``{0}``."""
        z = self.rng.standard_normal(x.size)
        if self.direction == "sparse-cone":
            # support size log-uniform in {1, ..., n}: P(size 1) = ln 2 / ln(n + 1)
            size = min(x.size, int(np.exp(self.rng.uniform(0.0, np.log(x.size + 1)))))
            keep = self.rng.choice(x.size, size=size, replace=False)
            mask = np.zeros(x.size, dtype=bool)
            mask[keep] = True
            z = np.where(mask, z, 0.0)
        if self.direction in ("cone", "sparse-cone"):
            z = self.base.problem.constraints.project_to_cone(z, x, self.active_tol)
        norm = float(np.linalg.norm(z))
        return None if norm < 1e-12 else z / norm

    def explore(self, x: Array) -> tuple[Array | None, int, int]:
        """One round at ``x``: the accepted point (or ``None``), evaluations, trials used."""
        problem = self.base.problem
        fx = problem.value(x)
        lo, hi = np.log(self.step_range[0]), np.log(self.step_range[1])
        evals = 0
        for trial in range(1, self.trials + 1):
            d = self.sample_direction(x)
            if d is None:
                continue
            t = min(
                float(np.exp(self.rng.uniform(lo, hi))),
                problem.constraints.max_step(x, d, self.active_tol),
            )
            if t <= 1e-14:
                continue
            x_new = x + t * d
            evals += 1
            if problem.value(x_new) < fx - self.decrease_margin * t * t - 1e-12 * (1.0 + abs(fx)):
                return x_new, evals, trial
        return None, evals, self.trials

    def run(self, x0: Array) -> ExplorationResult:
        run = self.base.run(x0)
        x, iters, values = run.x, run.iterations, list(run.values)
        accepted = evals = trials = 0
        rounds = 0
        while rounds < self.max_rounds:
            rounds += 1
            x_new, used, tried = self.explore(x)
            evals += used
            trials += tried
            if x_new is None:
                break
            accepted += 1
            run = self.base.run(x_new)
            x, iters = run.x, iters + run.iterations
            values.extend(run.values)
        return ExplorationResult(x, iters, rounds, accepted, evals, trials, values)


# ------------------------------------------------------------------------ instance builders


def stalled_dc_instance(n: int = 6, pieces: int = 4, seed: int = 0) -> tuple[DCProgram, Array]:
    """A DC program over the box ``[-1, 1]^n`` and a critical, not d-stationary point.

    All ``pieces`` pieces of ``h`` tie at ``x*`` (first coordinate at its upper bound), and
    ``q`` is set so that ``x*`` solves the DCA subproblem for the barycentre subgradient
    (multiplier ``0.5`` on the active bound): DCA with ``rule="average"`` started at ``x*``
    stays there. Returns ``(problem, x*)``.
    """
    rng = np.random.default_rng(seed)
    x_star = rng.uniform(-0.5, 0.5, n)
    x_star[0] = 1.0
    M = rng.standard_normal((n, n))
    Q = M @ M.T / n + 0.5 * np.eye(n)
    A = rng.standard_normal((pieces + 2, n))
    b = -A @ x_star
    b[pieces:] -= 1.0  # two inactive pieces
    y_bar = A[:pieces].mean(axis=0)
    normal = np.zeros(n)
    normal[0] = 0.5
    q = y_bar - Q @ x_star - normal
    return DCProgram(Q, q, A, b, Polyhedron.box(n, -1.0, 1.0)), x_star


def random_dc_instance(n: int = 6, pieces: int = 5, seed: int = 0) -> DCProgram:
    """A generic DC program over ``[-1, 1]^n`` (no constructed ties): the base works here."""
    rng = np.random.default_rng(seed)
    M = rng.standard_normal((n, n))
    Q = M @ M.T / n + 0.5 * np.eye(n)
    q = rng.standard_normal(n)
    A = 2.0 * rng.standard_normal((pieces, n))
    b = rng.standard_normal(pieces)
    return DCProgram(Q, q, A, b, Polyhedron.box(n, -1.0, 1.0))


def kinked_composite_instance(
    n: int = 6, m: int = 15, seed: int = 0
) -> tuple[KinkedComposite, Array, Array]:
    """Robust phase retrieval plus a concave kink, over a rotated box.

    ``c_s(x)_i = (a_i'x)^2 - y_i`` (``m`` rows, ``a_i`` orthogonal to a unit ``w``) and one
    kinked row ``tau - kappa |w'x| = min(tau - kappa w'x, tau + kappa w'x)``; ``X = {|U'x|_inf
    <= 2}`` for a random orthogonal ``U`` whose last column is ``w``. On ``{w'x = 0}`` the
    ``"average"`` Jacobian row of the kink is ``0``, so the prox-linear method started there
    never leaves it and stops at a critical point where ``F'(x; ±w) = -kappa < 0``.
    ``kappa`` is the sum of ``2 |a_i'u*| |a_i|`` (so the kink's descent dominates the
    phase-retrieval part's sharp growth) and ``tau = kappa / 2`` (zeros of the kinked row at
    ``w'x = ±0.5``). Returns ``(problem, x0 on {w'x = 0}, ground truth u*)``.
    """
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((n, n)))
    w = U[:, -1]
    P = np.eye(n) - np.outer(w, w)
    a = rng.standard_normal((m, n)) @ P
    u_true = P @ rng.standard_normal(n)
    u_true *= 1.0 / np.max(np.abs(U.T @ u_true))  # inside the box
    yv = (a @ u_true) ** 2
    kappa = float(np.sum(2.0 * np.abs(a @ u_true) * np.linalg.norm(a, axis=1)))
    tau = 0.5 * kappa
    G = np.vstack([U.T, -U.T])
    cons = Polyhedron(G, np.full(2 * n, 2.0))

    def smooth(x: Array) -> Array:
        return np.asarray((a @ x) ** 2 - yv, dtype=np.float64)

    def smooth_jac(x: Array) -> Array:
        return np.asarray(2.0 * (a @ x)[:, None] * a, dtype=np.float64)

    B = [np.vstack([-kappa * w, kappa * w])]
    beta = [np.array([tau, tau])]
    problem = KinkedComposite(smooth, smooth_jac, B, beta, cons)
    x0 = u_true + 0.3 * np.linalg.norm(u_true) / np.sqrt(n) * (P @ rng.standard_normal(n))
    return problem, x0, u_true


def trapped_dc_instance(n: int = 8, seed: int = 0, eps: float = 0.05) -> tuple[DCProgram, Array]:
    """A DC program whose DCA iterates fall into a non-d-stationary vertex from random starts.

    ``F(x) = (eps/2)|x|^2 + q'x - max(a_1'x + b_1, a_2'x + b_2)`` over ``[-1, 1]^n``, both
    pieces tied at the vertex ``v* = 1``. ``a_1 - q`` is positive (``[1, 2]`` in coordinate 0,
    ``[0.5, 1]`` elsewhere, below ``a_2 - q in [1.5, 2.5]`` there, so piece 1 is the active
    one over most of the box, ``(a_1 - a_2)'(x - v*) > 0``), so from
    wherever piece 1 is active the DCA step (``clip((y - q)/eps)``) lands on ``v*``; ``a_2 -
    q`` is positive except ``(a_2 - q)_0 in [-0.4, -0.2]``, so the barycentre ``ȳ - q`` is
    still positive and DCA with either rule (``"first"`` picks ``a_1``) stays at ``v*``,
    while ``F'(v*; -e_0) = (a_2 - q)_0 - eps < 0``: not d-stationary. From piece 2's region
    DCA goes to the d-stationary (and lower) vertex ``v* - 2 e_0``. Returns ``(problem,
    v*)``.
    """
    rng = np.random.default_rng(seed)
    q = rng.standard_normal(n)
    a1 = q + rng.uniform(0.5, 1.0, n)
    a1[0] = q[0] + rng.uniform(1.0, 2.0)
    a2 = q + rng.uniform(1.5, 2.5, n)
    a2[0] = q[0] - rng.uniform(0.2, 0.4)
    A = np.vstack([a1, a2])
    v = np.ones(n)
    return DCProgram(eps * np.eye(n), q, A, -A @ v, Polyhedron.box(n, -1.0, 1.0)), v
