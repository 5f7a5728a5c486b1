"""Independent verifier: is a candidate ``x`` robust-feasible and robust-optimal?

The worst case of each uncertain row at ``x`` is computed WITHOUT the dualisation rules
of ``counterpart.py``: in closed form where one exists (box ``rho ||w||_1``, ellipsoid
``rho ||w||_2``, budget = sum of the ``floor(gamma)`` largest ``|w_j|`` plus the
fractional part of the next) and otherwise by solving the inner adversarial problem
``max_{z in Z} w^T z`` in the primal (scipy HiGHS LP; a cvxpy primal for sets with a
2-norm). ``method="primal"`` forces the primal path for every set (cross-check tests).

The candidate's reported objective is never trusted: the robust objective is recomputed
at ``x`` and must agree with the report; the recomputed value is what is compared with
the reference optimum. Objective agreement means
``|f - g| <= max(rel_tol |g|, abs_tol)``; feasibility means each row's worst-case
violation ``<= feas_tol * max(1, |b|)``.
"""

from __future__ import annotations

import math
import warnings
from typing import Any, Literal

import cvxpy as cp
import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy.optimize import linprog

from optiforge.errors import InvalidTask, SolverError
from optiforge.solvers.robust.counterpart import SOLVER, SOLVER_OPTS, reference_counterpart
from optiforge.solvers.robust.model import (
    BoxSet,
    BudgetSet,
    EllipsoidalSet,
    IntersectionSet,
    NormBallPart,
    PolyhedralSet,
    ROProblem,
)

DEFAULT_REL_TOL = 1e-6
DEFAULT_ABS_TOL = 1e-6
DEFAULT_FEAS_TOL = 1e-6

Method = Literal["closed", "primal"]


def _linprog_max(
    w: np.ndarray,
    A_ub: np.ndarray | None,
    b_ub: np.ndarray | None,
    bounds: Any,
) -> float:
    """``max w^T z`` over a polyhedron by HiGHS; ``inf`` if unbounded."""
    cost = -np.asarray(w, dtype=float)
    res = linprog(cost, A_ub=A_ub, b_ub=b_ub, bounds=bounds, method="highs")
    if res.status == 3:
        return math.inf
    if res.status == 2:
        raise InvalidTask("uncertainty set is empty (inner maximisation infeasible)")
    if res.status != 0:
        raise SolverError(f"inner maximisation failed: {res.message}")
    return float(-res.fun)


def _budget_closed(w: np.ndarray, gamma: float) -> float:
    """``max {w^T z : |z| <= 1, ||z||_1 <= gamma}``: greedy over sorted ``|w|``."""
    mags = np.sort(np.abs(w))[::-1]
    g = min(gamma, float(len(mags)))
    whole = int(math.floor(g))
    total = float(mags[:whole].sum())
    if whole < len(mags):
        total += (g - whole) * float(mags[whole])
    return total


def _cvxpy_max(w: np.ndarray, unc: Any) -> float:
    """Primal ``max w^T z`` over a set with a 2-norm, by cvxpy (no dual reformulation)."""
    k = w.shape[0]
    z = cp.Variable(k)
    cons: list[cp.Constraint] = []
    if isinstance(unc, EllipsoidalSet):
        cons.append(cp.norm2(z) <= unc.rho)
    else:
        for part in unc.parts:
            if isinstance(part, NormBallPart):
                cons.append(cp.norm(z, part.norm) <= part.rho)
            else:
                cons.append(np.asarray(part.D, dtype=float) @ z <= np.asarray(part.d, dtype=float))
    prob = cp.Problem(cp.Maximize(w @ z), cons)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # the status is checked below
        prob.solve(solver=SOLVER, **SOLVER_OPTS)
    if prob.status in (cp.UNBOUNDED, cp.UNBOUNDED_INACCURATE):
        return math.inf
    if prob.status in (cp.INFEASIBLE, cp.INFEASIBLE_INACCURATE):
        raise InvalidTask("uncertainty set is empty (inner maximisation infeasible)")
    if prob.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        raise SolverError(f"inner maximisation failed: status {prob.status}")
    return float(prob.value)


def _intersection_lp(w: np.ndarray, unc: IntersectionSet) -> float:
    """Primal LP ``max w^T z`` over an intersection of inf/1-balls and polyhedra.

    Variables ``[z, u]`` (``u`` only when an l1 ball is present): ``-u <= z <= u`` and
    ``sum u <= rho`` per l1 ball; inf-balls become bounds on ``z``; polyhedra rows.
    """
    k = w.shape[0]
    box = min(
        (p.rho for p in unc.parts if isinstance(p, NormBallPart) and p.norm == "inf"),
        default=None,
    )
    l1 = [p.rho for p in unc.parts if isinstance(p, NormBallPart) and p.norm == 1]
    n_u = k if l1 else 0
    blocks: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    for part in unc.parts:
        if not isinstance(part, NormBallPart):
            D = np.asarray(part.D, dtype=float)
            blocks.append(np.hstack([D, np.zeros((D.shape[0], n_u))]))
            vals.append(np.asarray(part.d, dtype=float))
    if l1:
        eye = np.eye(k)
        blocks += [np.hstack([eye, -eye]), np.hstack([-eye, -eye])]
        vals.append(np.zeros(2 * k))
        for rho in l1:
            blocks.append(np.concatenate([np.zeros(k), np.ones(k)])[None, :])
            vals.append(np.array([rho]))
    zb = (None, None) if box is None else (-box, box)
    return _linprog_max(
        np.concatenate([w, np.zeros(n_u)]),
        np.vstack(blocks) if blocks else None,
        np.concatenate(vals) if vals else None,
        [zb] * k + [(0, None)] * n_u,
    )


def worst_case_support(unc: Any, w: np.ndarray, method: Method = "closed") -> float:
    """``sup_{z in Z} w^T z`` for ``w = P^T x`` (length ``k``), computed without dualising.

    ``method="closed"`` uses closed forms for box/ellipsoid/budget and the primal inner
    problem for the rest; ``"primal"`` solves the explicit maximisation for every set.
    """
    w = np.asarray(w, dtype=float)
    k = w.shape[0]
    if method == "closed":
        if isinstance(unc, BoxSet):
            return unc.rho * float(np.abs(w).sum())
        if isinstance(unc, EllipsoidalSet):
            return unc.rho * float(np.linalg.norm(w))
        if isinstance(unc, BudgetSet):
            return _budget_closed(w, unc.gamma)
    if isinstance(unc, BoxSet):
        return _linprog_max(w, None, None, [(-unc.rho, unc.rho)] * k)
    if isinstance(unc, EllipsoidalSet):
        return _cvxpy_max(w, unc)
    if isinstance(unc, BudgetSet):
        # variables [z, u]: -u <= z <= u, 0 <= u <= 1, sum u <= gamma
        eye = np.eye(k)
        A = np.block([[eye, -eye], [-eye, -eye], [np.zeros((1, k)), np.ones((1, k))]])
        b = np.concatenate([np.zeros(2 * k), [unc.gamma]])
        return _linprog_max(
            np.concatenate([w, np.zeros(k)]), A, b, [(None, None)] * k + [(0, 1)] * k
        )
    if isinstance(unc, PolyhedralSet):
        D = np.asarray(unc.D, dtype=float)
        return _linprog_max(w, D, np.asarray(unc.d, dtype=float), [(None, None)] * k)
    if isinstance(unc, IntersectionSet):
        if any(isinstance(p, NormBallPart) and p.norm == 2 for p in unc.parts):
            return _cvxpy_max(w, unc)
        return _intersection_lp(w, unc)
    raise InvalidTask(f"unknown uncertainty set {type(unc).__name__}")


def row_worst_lhs(problem: ROProblem, i: int, x: np.ndarray, method: Method = "closed") -> float:
    """Worst-case left side of row ``i`` in ``<=`` form (``>=`` rows are negated)."""
    con = problem.constraints[i]
    sign = -1.0 if con.sense == ">=" else 1.0
    lhs = sign * float(np.dot(con.a, x))
    if con.uncertainty is not None:
        w = sign * (con.uncertainty.p_matrix().T @ x)
        lhs += worst_case_support(con.uncertainty, w, method)
    return lhs


def robust_objective(problem: ROProblem, x: np.ndarray, method: Method = "closed") -> float:
    """The robust (worst-case) objective at ``x``, recomputed from the model."""
    obj = problem.objective
    val = float(np.dot(obj.c, x)) + obj.constant
    if obj.Q is not None:
        val += float(x @ np.asarray(obj.Q, dtype=float) @ x)
    if obj.uncertainty is not None:
        w = obj.uncertainty.p_matrix().T @ x
        if obj.sense == "min":
            val += worst_case_support(obj.uncertainty, w, method)
        else:
            val -= worst_case_support(obj.uncertainty, -w, method)
    return val


class Verdict(BaseModel):
    """The verifier's judgement of one candidate, with the tolerances it used."""

    model_config = ConfigDict(extra="forbid")

    correct: bool
    """Robust-feasible, objective consistent with ``x`` and equal to the reference."""
    robust_feasible: bool
    nominal_feasible: bool
    objective_consistent: bool
    """The reported objective equals the robust objective recomputed at ``x``."""
    objective_match: bool
    """The recomputed objective equals the reference optimum within tolerance."""
    reported_objective: float | None = None
    recomputed_objective: float | None = None
    reference_objective: float | None = None
    rel_err: float | None = None
    max_violation: float = 0.0
    """Largest scaled violation ``v / max(1, |b|)`` over all rows, bounds and cones."""
    worst_violations: list[float] = Field(default_factory=list)
    """Per linear constraint: worst-case ``lhs - b`` (``<=`` form) at ``x``."""
    reasons: list[str] = Field(default_factory=list)
    rel_tol: float
    abs_tol: float
    feas_tol: float

    def tolerance_line(self) -> str:
        """The tolerances in one line (every report prints it)."""
        return f"rel_tol={self.rel_tol:g} abs_tol={self.abs_tol:g} feas_tol={self.feas_tol:g}"

    def report(self) -> str:
        """Human-readable summary, including the tolerances used."""
        head = "CORRECT" if self.correct else "REJECTED"
        lines = [f"{head} ({self.tolerance_line()})"]
        lines += [f"- {r}" for r in self.reasons]
        return "\n".join(lines)


def _fail(reason: str, rel_tol: float, abs_tol: float, feas_tol: float, **kw: Any) -> Verdict:
    return Verdict(
        correct=False,
        robust_feasible=False,
        nominal_feasible=False,
        objective_consistent=False,
        objective_match=False,
        reasons=[reason],
        rel_tol=rel_tol,
        abs_tol=abs_tol,
        feas_tol=feas_tol,
        **kw,
    )


def verify(
    problem: ROProblem,
    x: Any,
    objective: float | None,
    *,
    reference_objective: float | None = None,
    rel_tol: float = DEFAULT_REL_TOL,
    abs_tol: float = DEFAULT_ABS_TOL,
    feas_tol: float = DEFAULT_FEAS_TOL,
    method: Method = "closed",
) -> Verdict:
    """Judge candidate ``x`` (length ``n``) with reported ``objective`` against ``problem``.

    reference_objective: the known robust optimum; solved by ``reference_counterpart``
    when ``None``. ``objective=None`` skips the consistency check (only for callers that
    have no report, never for agent candidates).
    """
    tol = {"rel_tol": rel_tol, "abs_tol": abs_tol, "feas_tol": feas_tol}
    try:
        xv = np.asarray(x, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        return _fail("malformed candidate: x is not a numeric vector", **tol)
    if xv.shape[0] != problem.n or not np.all(np.isfinite(xv)):
        return _fail(f"malformed candidate: x must be {problem.n} finite numbers", **tol)
    if objective is not None and not (
        isinstance(objective, int | float) and math.isfinite(objective)
    ):
        return _fail("malformed candidate: objective is not a finite number", **tol)
    if reference_objective is None:
        reference_objective = reference_counterpart(problem).solve().objective

    reasons: list[str] = []
    nominal_ok = True
    robust_ok = True
    max_viol = 0.0

    lo, hi = problem.bounds()
    bound_viol = np.maximum(np.maximum(lo - xv, xv - hi), 0.0)
    bscale = np.maximum(
        1.0, np.abs(np.where(np.isfinite(lo), lo, 0.0)) + np.abs(np.where(np.isfinite(hi), hi, 0.0))
    )
    scaled = bound_viol / bscale
    if scaled.size and scaled.max() > feas_tol:
        j = int(np.argmax(scaled))
        nominal_ok = False
        reasons.append(
            f"infeasible nominal constraints: bound of x[{j}] violated by {bound_viol[j]:.3g} > tol {feas_tol:g}"
        )
    max_viol = max(max_viol, float(scaled.max(initial=0.0)))

    worst: list[float] = []
    for i, con in enumerate(problem.constraints):
        scale = max(1.0, abs(con.b))
        if con.sense == "==":
            v = abs(float(np.dot(con.a, xv)) - con.b)
        else:
            v = row_worst_lhs(problem, i, xv, method) - (-con.b if con.sense == ">=" else con.b)
        worst.append(v)
        max_viol = max(max_viol, v / scale)
        if v > feas_tol * scale:
            if con.uncertainty is None:
                nominal_ok = False
                reasons.append(
                    f"infeasible nominal constraints: row {i} violation {v:.3g} > tol {feas_tol * scale:.3g}"
                )
            else:
                robust_ok = False
                reasons.append(
                    f"not robust-feasible: row {i} worst-case violation {v:.3g} > tol {feas_tol * scale:.3g}"
                )
    for i, soc in enumerate(problem.soc_constraints):
        A = np.asarray(soc.A, dtype=float)
        rhs = float(np.dot(soc.c, xv)) + soc.d
        v = float(np.linalg.norm(A @ xv + np.asarray(soc.b))) - rhs
        scale = max(1.0, abs(rhs))
        max_viol = max(max_viol, v / scale)
        if v > feas_tol * scale:
            nominal_ok = False
            reasons.append(
                f"infeasible nominal constraints: SOC constraint {i} violation {v:.3g} > tol {feas_tol * scale:.3g}"
            )

    recomputed = robust_objective(problem, xv, method)
    consistent = True
    if objective is not None:
        gap = abs(float(objective) - recomputed)
        if gap > max(rel_tol * abs(recomputed), abs_tol):
            consistent = False
            reasons.append(
                "candidate reported objective inconsistent with c^T x: "
                f"reported {float(objective):.9g} vs recomputed {recomputed:.9g}"
            )
    err = abs(recomputed - reference_objective)
    rel_err = err / max(abs(reference_objective), 1e-12)
    match = err <= max(rel_tol * abs(reference_objective), abs_tol)
    if not match:
        reasons.append(
            f"objective mismatch: candidate {recomputed:.9g} vs reference {reference_objective:.9g} "
            f"(rel err {rel_err:.3g} > tol {rel_tol:g}, abs floor {abs_tol:g})"
        )
    feasible = nominal_ok and robust_ok
    return Verdict(
        correct=feasible and consistent and match,
        robust_feasible=feasible,
        nominal_feasible=nominal_ok,
        objective_consistent=consistent,
        objective_match=match,
        reported_objective=None if objective is None else float(objective),
        recomputed_objective=recomputed,
        reference_objective=reference_objective,
        rel_err=rel_err,
        max_violation=max_viol,
        worst_violations=worst,
        reasons=reasons,
        **tol,
    )
