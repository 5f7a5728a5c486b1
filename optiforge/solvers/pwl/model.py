"""The PWL-MIP model: an LP in sparse form plus SOS2 sets (convex-combination formulation).

A model is ``min c^T x`` subject to ``A x (= | >=) b`` row by row and ``l <= x <= u`` with
FINITE bounds on every variable (finite bounds make the safe dual bound of
:mod:`optiforge.solvers.pwl.pdhg` finite; every generated instance has them). ``<=`` rows are
stored negated as ``>=`` rows.

A piecewise-linear term ``f(x_k)`` with breakpoints ``p_0 < ... < p_K`` and values ``f_i``
adds ``K+1`` lambda variables in ``[0, 1]`` and two equality rows (the convex-combination
formulation)::

    x_k - sum_i p_i lambda_i = 0,     sum_i lambda_i = 1,

its cost ``sum_i f_i lambda_i`` goes into ``c``, and the lambdas form one SOS2 set: at most
two of them are non-zero and those two are adjacent. Dropping the SOS2 condition gives the
LP relaxation (the convex envelope of ``f`` over the breakpoints), which is exact where
``f`` is convex and a relaxation where it is not (concave costs, S-shaped returns).

Also here: the exact checks that HiGHS does (the library's part): :func:`solve_fixed_lp`
re-solves the LP with every SOS2 set restricted to one adjacent pair (simplex, exact up to
HiGHS's 1e-9 tolerances), which is how incumbents are evaluated and the final answer is
certified, and :func:`evaluate` measures a point's objective and its SOS2 / row violations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp


@dataclass
class PWLModel:
    """``min c^T x  s.t.  A x (=|>=) b,  lb <= x <= ub,  SOS2(sets)``.

    Shapes: ``c, lb, ub`` are `n`; ``A`` is a CSR `m x n`; ``b`` is `m`; ``is_eq`` is an `m`
    bool mask (True: equality row, False: ``>=`` row); each of ``sos2`` is an int array of
    the lambda indices of one set in breakpoint order. ``offset`` is a constant added to the
    objective.
    """

    c: np.ndarray
    A: sp.csr_matrix
    b: np.ndarray
    is_eq: np.ndarray
    lb: np.ndarray
    ub: np.ndarray
    sos2: list[np.ndarray]
    offset: float = 0.0
    name: str = "pwl"

    @property
    def n(self) -> int:
        return int(self.c.shape[0])

    @property
    def m(self) -> int:
        return int(self.b.shape[0])


@dataclass
class PWLBuilder:
    """Builds a :class:`PWLModel` one variable, row and PWL term at a time."""

    name: str = "pwl"
    cost: list[float] = field(default_factory=list)
    lower: list[float] = field(default_factory=list)
    upper: list[float] = field(default_factory=list)
    rows: list[dict[int, float]] = field(default_factory=list)
    rhs: list[float] = field(default_factory=list)
    eq: list[bool] = field(default_factory=list)
    sets: list[np.ndarray] = field(default_factory=list)
    offset: float = 0.0

    def var(self, lb: float, ub: float, cost: float = 0.0) -> int:
        """Add a variable with finite bounds; return its index."""
        if not (np.isfinite(lb) and np.isfinite(ub)) or lb > ub:
            raise ValueError(f"variables need finite bounds lb <= ub, got [{lb}, {ub}]")
        self.cost.append(float(cost))
        self.lower.append(float(lb))
        self.upper.append(float(ub))
        return len(self.cost) - 1

    def row(self, coefs: dict[int, float], sense: str, rhs: float) -> None:
        """Add ``sum coefs[j] x_j (sense) rhs`` with sense one of ``"=", ">=", "<="``."""
        if sense not in ("=", ">=", "<="):
            raise ValueError(f"sense must be '=', '>=' or '<=', got {sense!r}")
        sign = -1.0 if sense == "<=" else 1.0
        self.rows.append({j: sign * float(v) for j, v in coefs.items() if v != 0.0})
        self.rhs.append(sign * float(rhs))
        self.eq.append(sense == "=")

    def pwl(self, x: int, breakpoints: np.ndarray, values: np.ndarray) -> np.ndarray:
        """Add the cost ``f(x)`` interpolating ``(breakpoints, values)``; return lambda indices.

        ``breakpoints`` must be strictly increasing and span ``x``'s bounds.
        """
        p = np.asarray(breakpoints, dtype=float)
        f = np.asarray(values, dtype=float)
        if p.ndim != 1 or p.shape != f.shape or p.size < 2 or np.any(np.diff(p) <= 0):
            raise ValueError("breakpoints must be 1-D, strictly increasing, >= 2, same size")
        lam = np.array([self.var(0.0, 1.0, fi) for fi in f], dtype=np.int64)
        coefs = {x: 1.0}
        coefs.update({int(j): -pi for j, pi in zip(lam, p, strict=True)})
        self.row(coefs, "=", 0.0)
        self.row({int(j): 1.0 for j in lam}, "=", 1.0)
        self.sets.append(lam)
        return lam

    def build(self) -> PWLModel:
        n = len(self.cost)
        indptr = [0]
        indices: list[int] = []
        data: list[float] = []
        for r in self.rows:
            for j in sorted(r):
                indices.append(j)
                data.append(r[j])
            indptr.append(len(indices))
        A = sp.csr_matrix((data, indices, indptr), shape=(len(self.rows), n))
        return PWLModel(
            c=np.array(self.cost),
            A=A,
            b=np.array(self.rhs),
            is_eq=np.array(self.eq, dtype=bool),
            lb=np.array(self.lower),
            ub=np.array(self.upper),
            sos2=list(self.sets),
            offset=self.offset,
            name=self.name,
        )


def new_highs(verbose: bool = False) -> Any:
    """A HiGHS instance, quiet and single-threaded (``highspy.Highs``)."""
    import highspy

    h = highspy.Highs()
    h.setOptionValue("output_flag", verbose)
    # one thread everywhere: HiGHS's global scheduler keeps the first run's thread count and
    # a later run asking for another one fails
    h.setOptionValue("threads", 1)
    return h


def pass_lp(h: Any, model: PWLModel, lb: np.ndarray, ub: np.ndarray) -> None:
    """Load ``model``'s LP with column bounds ``lb``, ``ub`` into the HiGHS instance ``h``."""
    import highspy

    lp = highspy.HighsLp()
    lp.num_col_ = model.n
    lp.num_row_ = model.m
    lp.col_cost_ = model.c
    lp.offset_ = model.offset
    lp.col_lower_ = lb
    lp.col_upper_ = ub
    lp.row_lower_ = model.b
    lp.row_upper_ = np.where(model.is_eq, model.b, highspy.kHighsInf)
    csc = model.A.tocsc()
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = csc.indptr.astype(np.int32)
    lp.a_matrix_.index_ = csc.indices.astype(np.int32)
    lp.a_matrix_.value_ = csc.data
    h.passModel(lp)


@dataclass
class LPResult:
    """An exact (simplex) LP solve: ``feasible`` is False for an infeasible LP."""

    feasible: bool
    value: float
    x: np.ndarray


def solve_lp_exact(model: PWLModel, lb: np.ndarray, ub: np.ndarray) -> LPResult:
    """Solve the LP relaxation under bounds ``lb, ub`` (`n` each) with HiGHS's simplex."""
    import highspy

    h = new_highs()
    h.setOptionValue("solver", "simplex")
    h.setOptionValue("primal_feasibility_tolerance", 1e-9)
    h.setOptionValue("dual_feasibility_tolerance", 1e-9)
    pass_lp(h, model, lb, ub)
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:
        return LPResult(False, float("inf"), np.full(model.n, np.nan))
    x = np.array(h.getSolution().col_value)
    return LPResult(True, float(h.getInfo().objective_function_value), x)


def pair_bounds(
    model: PWLModel, pairs: np.ndarray, lb: np.ndarray, ub: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Bounds with SOS2 set ``s`` restricted to lambdas ``pairs[s], pairs[s]+1`` (positions)."""
    lb2, ub2 = lb.copy(), ub.copy()
    for s, lam in enumerate(model.sos2):
        keep = np.zeros(lam.size, dtype=bool)
        keep[pairs[s] : pairs[s] + 2] = True
        ub2[lam[~keep]] = 0.0
        lb2[lam[~keep]] = 0.0
    return lb2, ub2


def solve_fixed_lp(model: PWLModel, pairs: np.ndarray) -> LPResult:
    """The exact LP with each SOS2 set fixed to one adjacent pair (incumbent evaluation)."""
    lb, ub = pair_bounds(model, pairs, model.lb, model.ub)
    return solve_lp_exact(model, lb, ub)


@dataclass
class Evaluation:
    """A point's exact objective and its worst violations (rows, bounds, SOS2)."""

    value: float
    row_violation: float
    bound_violation: float
    sos2_violation: float


def evaluate(model: PWLModel, x: np.ndarray) -> Evaluation:
    """Objective and violations of ``x`` (`n`); SOS2 violation = lambda mass outside the
    best adjacent pair of each set."""
    r = model.A @ x - model.b
    rv = np.where(model.is_eq, np.abs(r), np.maximum(-r, 0.0))
    bv = np.maximum(np.maximum(model.lb - x, x - model.ub), 0.0)
    sv = 0.0
    for lam in model.sos2:
        v = np.abs(x[lam])
        best = max(v[i] + v[i + 1] for i in range(v.size - 1))
        sv = max(sv, float(v.sum() - best))
    return Evaluation(
        value=float(model.c @ x + model.offset),
        row_violation=float(rv.max(initial=0.0)),
        bound_violation=float(bv.max(initial=0.0)),
        sos2_violation=sv,
    )
