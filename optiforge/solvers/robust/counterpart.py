"""Reference reformulator: the deterministic robust counterpart of an ``ROProblem`` in cvxpy.

Dualisation rules (row ``a_bar^T x + sup_{z in Z} (P^T x)^T z <= b``; ``w = P^T x``):

- box          ``sup = rho ||w||_1``
- ellipsoidal  ``sup = rho ||w||_2``
- polyhedral   ``sup = min { d^T y : D^T y = w, y >= 0 }``
- budget       ``sup = min { gamma lam + sum mu : lam + mu_j >= |w_j|, lam, mu >= 0 }``
- intersection ``sup_{Z_1 ∩ ... ∩ Z_r} = min { sum_i sup_{Z_i}(w_i) : sum_i w_i = w }``
  (support of an intersection = infimal convolution of the supports), with the dual
  norms ``||.||_1 <-> ||.||_inf`` and ``||.||_2 <-> ||.||_2`` for norm balls.

Every ``min`` becomes auxiliary cvxpy variables, so the counterpart is one LP/SOCP.
A ``>=`` row is the ``<=`` row of ``(-a, -b)``. The solver is fixed (CLARABEL with fixed
tolerances) so repeated solves give the same numbers.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import cvxpy as cp
import numpy as np

from optiforge.errors import SolverError
from optiforge.solvers.robust.model import (
    BoxSet,
    BudgetSet,
    EllipsoidalSet,
    IntersectionSet,
    NormBallPart,
    PolyhedralSet,
    PolyhedronPart,
    ROProblem,
)

SOLVER = "CLARABEL"
SOLVER_OPTS: dict[str, Any] = {
    "tol_gap_abs": 1e-9,
    "tol_gap_rel": 1e-9,
    "tol_feas": 1e-9,
    "max_iter": 1000,
}

# dual norm of each ball: the support of {||z||_p <= rho} is rho ||w||_q, 1/p + 1/q = 1
_DUAL_NORM: dict[int | str, int | str] = {1: "inf", 2: 2, "inf": 1}


@dataclass(frozen=True)
class Solution:
    """A solved counterpart: ``x`` (length ``n``), robust objective value, cvxpy status."""

    x: np.ndarray
    objective: float
    status: str


@dataclass
class RobustCounterpart:
    """A deterministic counterpart as a cvxpy problem over the decision vector ``x``."""

    problem: cp.Problem
    x: cp.Variable
    aux: list[cp.Variable] = field(default_factory=list)

    def solve(self) -> Solution:
        """Solve with the fixed solver; raises ``SolverError`` unless (nearly) optimal.

        Tight tolerances first; if CLARABEL stalls short of them (``optimal_inaccurate``)
        it is re-run at its default tolerances. ``Solution.status`` says which was reached.
        """
        status = ""
        for opts in (SOLVER_OPTS, {}):
            try:
                with warnings.catch_warnings():
                    # the status carries the same information as cvxpy's accuracy warning
                    warnings.simplefilter("ignore", UserWarning)
                    self.problem.solve(solver=SOLVER, **opts)
            except cp.error.SolverError as exc:
                raise SolverError(f"robust counterpart solve failed: {exc}") from None
            status = str(self.problem.status)
            if status == cp.OPTIMAL:
                break
        if status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE) or self.x.value is None:
            raise SolverError(f"robust counterpart is not solvable: status {status}")
        return Solution(
            x=np.asarray(self.x.value, dtype=float).copy(),
            objective=float(self.problem.value),
            status=status,
        )


def support_expr(unc: Any, w: cp.Expression) -> tuple[cp.Expression, list[cp.Constraint]]:
    """Convex expression ``sup_{z in Z} w^T z`` (with its auxiliary constraints); ``w`` is ``k``."""
    if isinstance(unc, BoxSet):
        return unc.rho * cp.norm1(w), []
    if isinstance(unc, EllipsoidalSet):
        return unc.rho * cp.norm2(w), []
    if isinstance(unc, PolyhedralSet):
        D = np.asarray(unc.D, dtype=float)
        y = cp.Variable(D.shape[0], nonneg=True)
        return np.asarray(unc.d, dtype=float) @ y, [D.T @ y == w]
    if isinstance(unc, BudgetSet):
        k = len(unc.delta)
        lam = cp.Variable(nonneg=True)
        mu = cp.Variable(k, nonneg=True)
        return unc.gamma * lam + cp.sum(mu), [lam + mu >= cp.abs(w)]
    if isinstance(unc, IntersectionSet):
        k = unc.p_matrix().shape[1]
        pieces = [cp.Variable(k) for _ in unc.parts]
        total: cp.Expression = cp.Constant(0.0)
        cons: list[cp.Constraint] = [cp.sum(cp.vstack(pieces), axis=0) == w]
        for part, wi in zip(unc.parts, pieces, strict=True):
            if isinstance(part, NormBallPart):
                total = total + part.rho * cp.norm(wi, _DUAL_NORM[part.norm])
            elif isinstance(part, PolyhedronPart):
                D = np.asarray(part.D, dtype=float)
                y = cp.Variable(D.shape[0], nonneg=True)
                total = total + np.asarray(part.d, dtype=float) @ y
                cons.append(D.T @ y == wi)
        return total, cons
    raise SolverError(f"no dualisation rule for uncertainty set {type(unc).__name__}")


def _nominal_constraints(problem: ROProblem, x: cp.Variable) -> list[cp.Constraint]:
    """Bounds and second-order cones (never uncertain)."""
    cons: list[cp.Constraint] = []
    lo, hi = problem.bounds()
    if np.isfinite(lo).any():
        idx = np.flatnonzero(np.isfinite(lo))
        cons.append(x[idx] >= lo[idx])
    if np.isfinite(hi).any():
        idx = np.flatnonzero(np.isfinite(hi))
        cons.append(x[idx] <= hi[idx])
    for soc in problem.soc_constraints:
        A = np.asarray(soc.A, dtype=float)
        cons.append(cp.norm2(A @ x + np.asarray(soc.b)) <= np.asarray(soc.c) @ x + soc.d)
    return cons


def _objective(problem: ROProblem, x: cp.Variable, robust: bool) -> tuple[Any, list[cp.Constraint]]:
    obj = problem.objective
    expr: cp.Expression = np.asarray(obj.c, dtype=float) @ x + obj.constant
    if obj.Q is not None:
        Q = np.asarray(obj.Q, dtype=float)
        expr = expr + cp.quad_form(x, cp.psd_wrap(0.5 * (Q + Q.T)))
    cons: list[cp.Constraint] = []
    if robust and obj.uncertainty is not None:
        P = obj.uncertainty.p_matrix()
        if obj.sense == "min":
            # min max_z (c + P z)^T x = min c^T x + sup_z (P^T x)^T z
            sup, cons = support_expr(obj.uncertainty, P.T @ x)
            expr = expr + sup
        else:
            # max min_z (c + P z)^T x = max c^T x - sup_z (-P^T x)^T z
            sup, cons = support_expr(obj.uncertainty, -(P.T @ x))
            expr = expr - sup
    goal = cp.Minimize(expr) if obj.sense == "min" else cp.Maximize(expr)
    return goal, cons


def reference_counterpart(problem: ROProblem) -> RobustCounterpart:
    """The robust counterpart of ``problem`` built with exactly the dualisation rules above."""
    return _build(problem, robust=True)


def nominal_counterpart(problem: ROProblem) -> RobustCounterpart:
    """The nominal problem (every uncertainty set ignored): the non-robust baseline."""
    return _build(problem, robust=False)


def _build(problem: ROProblem, *, robust: bool) -> RobustCounterpart:
    x = cp.Variable(problem.n, name="x")
    cons = _nominal_constraints(problem, x)
    goal, obj_cons = _objective(problem, x, robust)
    cons += obj_cons
    for con in problem.constraints:
        sign = -1.0 if con.sense == ">=" else 1.0
        a = sign * np.asarray(con.a, dtype=float)
        lhs: cp.Expression = a @ x
        if con.sense == "==":
            cons.append(lhs == con.b)
            continue
        if robust and con.uncertainty is not None:
            P = sign * con.uncertainty.p_matrix()
            sup, aux = support_expr(con.uncertainty, P.T @ x)
            lhs = lhs + sup
            cons += aux
        cons.append(lhs <= sign * con.b)
    return RobustCounterpart(problem=cp.Problem(goal, cons), x=x)
