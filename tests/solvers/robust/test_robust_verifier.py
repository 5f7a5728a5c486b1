"""The verifier accepts the reference and rejects deliberately wrong counterparts, each
for the right reason; closed-form worst cases agree with explicit inner maximisations and
with brute force; the dualisation rules reproduce the support function of every set."""

from __future__ import annotations

import itertools
from collections.abc import Callable

import cvxpy as cp
import numpy as np
import pytest

from optiforge.solvers.robust import (
    BoxSet,
    BudgetSet,
    EllipsoidalSet,
    IntersectionSet,
    LinearConstraint,
    NormBallPart,
    Objective,
    PolyhedralSet,
    PolyhedronPart,
    ROProblem,
    nominal_counterpart,
    reference_counterpart,
    support_expr,
    verify,
    worst_case_support,
)

NOT_ROBUST = "not robust-feasible: row"
MISMATCH = "objective mismatch: candidate"
FAKED = "candidate reported objective inconsistent with c^T x"
NOMINAL = "infeasible nominal constraints"

C = [1.0, 1.5, 2.0]
A_ROWS = [[1.0, 2.0, 1.5], [2.0, 1.0, 1.0]]
B = [6.0, 7.0]
DIAG = np.diag([0.3, 0.4, 0.5]).tolist()
POLY_D = np.vstack([np.eye(3), -np.eye(3), [[1.0, 1.0, 1.0], [1.0, -1.0, 0.5]]]).tolist()
POLY_d = [1.0] * 6 + [1.5, 1.0]


def _problem(sets: list) -> ROProblem:
    """max c^T x over 0 <= x <= 2 with the two rows carrying ``sets``."""
    return ROProblem(
        n=3,
        lower=[0.0] * 3,
        upper=[2.0] * 3,
        objective=Objective(c=C, sense="max"),
        constraints=[
            LinearConstraint(a=a, b=b, uncertainty=s)
            for a, b, s in zip(A_ROWS, B, sets, strict=True)
        ],
    )


SETS = {
    "box": lambda: BoxSet(P=DIAG, rho=1.0),
    "ellipsoidal": lambda: EllipsoidalSet(P=DIAG, rho=1.0),
    "polyhedral": lambda: PolyhedralSet(P=DIAG, D=POLY_D, d=POLY_d),
    "budget": lambda: BudgetSet(delta=[0.3, 0.4, 0.5], gamma=1.5),
    "intersection": lambda: IntersectionSet(
        P=DIAG, parts=[NormBallPart(norm="inf", rho=1.0), NormBallPart(norm=1, rho=1.5)]
    ),
}


def _instance(kind: str) -> ROProblem:
    return _problem([SETS[kind](), SETS[kind]()])


Term = Callable[[object, cp.Expression], tuple[cp.Expression, list[cp.Constraint]]]


def _solve_with(problem: ROProblem, term: Term) -> tuple[np.ndarray, float]:
    """A candidate counterpart: the rows get ``a_bar^T x + term(set, P^T x) <= b``."""
    x = cp.Variable(problem.n)
    cons = [x >= 0, x <= 2]
    for con in problem.constraints:
        expr, aux = term(con.uncertainty, con.uncertainty.p_matrix().T @ x)
        cons += aux + [np.asarray(con.a) @ x + expr <= con.b]
    prob = cp.Problem(cp.Maximize(np.asarray(problem.objective.c) @ x), cons)
    prob.solve(solver="CLARABEL")
    assert prob.status == "optimal"
    return np.asarray(x.value), float(prob.value)


def _has(reasons: list[str], prefix: str) -> bool:
    return any(r.startswith(prefix) for r in reasons)


# ---- the reference passes ---------------------------------------------------------


@pytest.mark.parametrize("kind", sorted(SETS))
def test_reference_solution_is_accepted(kind: str) -> None:
    p = _instance(kind)
    sol = reference_counterpart(p).solve()
    for method in ("closed", "primal"):
        v = verify(p, sol.x, sol.objective, method=method)
        assert v.correct, v.report()
        assert v.reasons == []
        assert "rel_tol=1e-06" in v.report()


# ---- deliberately wrong counterparts ---------------------------------------------


WRONG: dict[str, tuple[str, Term, str]] = {
    # -rho ||P^T x|| itself is not DCP (cvxpy refuses it); with x >= 0 and P >= 0 the box
    # term equals rho 1^T P^T x, so the sign error is written in that linear form
    "sign_error_box": ("box", lambda u, w: (-u.rho * cp.sum(w), []), NOT_ROBUST),
    # sign error inside the dual: D^T y = -P^T x is the support of -Z, too conservative here
    "sign_error_polyhedral_dual": (
        "polyhedral",
        lambda u, w: (lambda y: (np.asarray(u.d) @ y, [y >= 0, np.asarray(u.D).T @ y == -w]))(
            cp.Variable(len(u.d))
        ),
        MISMATCH,
    ),
    "missing_norm_term": ("ellipsoidal", lambda u, w: (0 * cp.sum(w), []), NOT_ROBUST),
    "l1_instead_of_l2": ("ellipsoidal", lambda u, w: (u.rho * cp.norm1(w), []), MISMATCH),
    "l2_instead_of_l1_for_box": ("box", lambda u, w: (u.rho * cp.norm2(w), []), NOT_ROBUST),
    "polyhedral_without_dual_equality": (
        "polyhedral",
        lambda u, w: (lambda y: (np.asarray(u.d) @ y, [y >= 0, 0 * cp.sum(w) == 0]))(
            cp.Variable(len(u.d))
        ),
        NOT_ROBUST,
    ),
    "polyhedral_dual_y_free": (
        "polyhedral",
        lambda u, w: (lambda y: (np.asarray(u.d) @ y, [np.asarray(u.D).T @ y == w]))(
            cp.Variable(len(u.d))
        ),
        NOT_ROBUST,
    ),
    "budget_gamma_dropped": (
        "budget",
        lambda u, w: (lambda lam, mu: (cp.sum(mu), [lam + mu >= cp.abs(w), mu >= 0, lam >= 0]))(
            cp.Variable(), cp.Variable(3)
        ),
        NOT_ROBUST,
    ),
    "budget_as_full_box": ("budget", lambda u, w: (cp.norm1(w), []), MISMATCH),
    "intersection_primal_norm_instead_of_dual": (
        "intersection",
        lambda u, w: (lambda w1, w2: (cp.norm_inf(w1) + 1.5 * cp.norm1(w2), [w1 + w2 == w]))(
            cp.Variable(3), cp.Variable(3)
        ),
        NOT_ROBUST,
    ),
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_wrong_counterpart_is_rejected_for_the_right_reason(name: str) -> None:
    kind, term, expected = WRONG[name]
    p = _instance(kind)
    x, f = _solve_with(p, term)
    v = verify(p, x, f)
    assert not v.correct, v.report()
    assert _has(v.reasons, expected), v.report()
    # the candidate's own objective is honest c^T x here, so that check never fires
    assert not _has(v.reasons, FAKED)
    if expected == NOT_ROBUST:
        assert not v.robust_feasible and v.max_violation > 1e-3
    else:
        assert v.robust_feasible and not v.objective_match


@pytest.mark.parametrize("kind", sorted(SETS))
def test_nominal_solution_passed_off_as_robust_is_rejected(kind: str) -> None:
    p = _instance(kind)
    nom = nominal_counterpart(p).solve()
    v = verify(p, nom.x, nom.objective)
    assert not v.correct and not v.robust_feasible
    assert _has(v.reasons, NOT_ROBUST), v.report()


def test_faked_objective_is_rejected_even_with_the_right_x() -> None:
    p = _instance("ellipsoidal")
    sol = reference_counterpart(p).solve()
    v = verify(p, sol.x, sol.objective * 1.01)
    assert not v.correct and v.robust_feasible and v.objective_match
    assert v.reasons == [v.reasons[0]] and v.reasons[0].startswith(FAKED)
    # a suboptimal feasible point that reports its true value: mismatch, not faked
    x0 = np.zeros(3)
    v = verify(p, x0, 0.0)
    assert v.robust_feasible and v.objective_consistent and not v.correct
    assert _has(v.reasons, MISMATCH)
    # a point claiming the reference objective that it does not achieve
    v = verify(p, x0, sol.objective)
    assert _has(v.reasons, FAKED) and _has(v.reasons, MISMATCH)


def test_nominal_infeasibility_and_malformed_candidates() -> None:
    p = _instance("box")
    sol = reference_counterpart(p).solve()
    x = sol.x.copy()
    x[0] = -1.0  # below its lower bound
    v = verify(p, x, float(np.dot(C, x)))
    assert _has(v.reasons, NOMINAL) and not v.nominal_feasible
    p2 = p.model_copy(
        update={"constraints": [*p.constraints, LinearConstraint(a=[1, 1, 1], b=1.0)]}
    )
    v = verify(p2, sol.x, sol.objective)
    assert any(r.startswith(f"{NOMINAL}: row 2") for r in v.reasons), v.report()
    for bad in ([1.0, 2.0], [1.0, float("nan"), 0.0], "abc", [[1.0], [2.0, 3.0]]):
        v = verify(p, bad, 1.0)
        assert not v.correct and v.reasons[0].startswith("malformed candidate")
    v = verify(p, sol.x, float("inf"))
    assert v.reasons[0].startswith("malformed candidate")


def test_tolerances_are_applied_and_reported() -> None:
    p = _instance("ellipsoidal")
    sol = reference_counterpart(p).solve()
    shifted = sol.x * (1 + 1e-4)  # slightly infeasible and slightly better
    strict = verify(p, shifted, robust_obj := float(np.dot(C, shifted)))
    loose = verify(p, shifted, robust_obj, rel_tol=1e-3, abs_tol=1e-3, feas_tol=1e-3)
    assert not strict.correct and loose.correct
    assert loose.tolerance_line() == "rel_tol=0.001 abs_tol=0.001 feas_tol=0.001"
    assert "rel_tol=0.001" in loose.report()


# ---- worst cases: closed form vs explicit maximisation vs brute force --------------


ALL_SETS = {
    **SETS,
    "poly_cap_ball": lambda: IntersectionSet(
        P=DIAG,
        parts=[PolyhedronPart(D=POLY_D, d=POLY_d), NormBallPart(norm=2, rho=1.1)],
    ),
    "box_cap_ball": lambda: IntersectionSet(
        P=DIAG, parts=[NormBallPart(norm="inf", rho=1.0), NormBallPart(norm=2, rho=1.3)]
    ),
}


@pytest.mark.parametrize("kind", sorted(ALL_SETS))
def test_closed_form_primal_and_dual_rules_agree(kind: str) -> None:
    unc = ALL_SETS[kind]()
    rng = np.random.default_rng(7)
    for _ in range(4):
        w = rng.normal(size=3)
        closed = worst_case_support(unc, w, "closed")
        primal = worst_case_support(unc, w, "primal")
        expr, cons = support_expr(unc, cp.Constant(w))  # the reformulator's dual rule
        dual = cp.Problem(cp.Minimize(expr), cons)
        dual.solve(solver="CLARABEL")
        assert closed == pytest.approx(primal, rel=1e-6, abs=1e-8)
        assert dual.value == pytest.approx(primal, rel=1e-6, abs=1e-8)


def test_worst_cases_match_brute_force_enumeration() -> None:
    rng = np.random.default_rng(3)
    w = rng.normal(size=4)
    # box: the maximum of a linear function sits at one of the 2^k vertices
    verts = np.array(list(itertools.product([-0.7, 0.7], repeat=4)))
    assert worst_case_support(BoxSet(P=np.eye(4).tolist(), rho=0.7), w) == pytest.approx(
        (verts @ w).max(), rel=1e-12
    )
    # budget with integer gamma: extreme points have gamma entries +-1, the rest 0
    best = max(
        sum(s * w[j] for s, j in zip(signs, idx, strict=True))
        for idx in itertools.combinations(range(4), 2)
        for signs in itertools.product([-1, 1], repeat=2)
    )
    assert worst_case_support(BudgetSet(delta=[1.0] * 4, gamma=2.0), w) == pytest.approx(best)
    # fractional gamma 1.5: vertices of {|z| <= 1, ||z||_1 <= 1.5} in 4-d
    cand = []
    for i, j in itertools.permutations(range(4), 2):
        for si, sj in itertools.product([-1, 1], repeat=2):
            z = np.zeros(4)
            z[i], z[j] = si, 0.5 * sj
            cand.append(z @ w)
    assert worst_case_support(BudgetSet(delta=[1.0] * 4, gamma=1.5), w) == pytest.approx(max(cand))
    # ellipsoid: no sampled point beats the closed form, and rho w/||w|| attains it
    z = rng.normal(size=(4000, 4))
    z = 1.2 * z / np.linalg.norm(z, axis=1, keepdims=True)
    ell = worst_case_support(EllipsoidalSet(P=np.eye(4).tolist(), rho=1.2), w)
    assert (z @ w).max() <= ell + 1e-12
    assert ell == pytest.approx(1.2 * w @ w / np.linalg.norm(w))


def test_reference_matches_vertex_scenario_lp() -> None:
    """Box rows: the robust LP equals the LP over all 2^k vertex scenarios (scipy)."""
    from scipy.optimize import linprog

    p = _instance("box")
    ref = reference_counterpart(p).solve().objective
    rows, rhs = [], []
    verts = list(itertools.product([-1.0, 1.0], repeat=3))
    for con in p.constraints:
        P = con.uncertainty.p_matrix()
        for v in verts:
            rows.append(np.asarray(con.a) + P @ np.asarray(v))
            rhs.append(con.b)
    res = linprog(
        -np.asarray(C), A_ub=np.array(rows), b_ub=rhs, bounds=[(0, 2)] * 3, method="highs"
    )
    assert res.status == 0
    assert ref == pytest.approx(-res.fun, rel=1e-7)
