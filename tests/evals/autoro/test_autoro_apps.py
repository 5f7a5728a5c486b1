"""Application set: >= 20 natural-language problems whose recorded optima are re-derived
by an independent cutting-plane method (scipy HiGHS LP + explicit worst-case scenarios,
no dualisation)."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
from scipy.optimize import linprog

from optiforge.evals.suites.autoro import APP_OPTIMA, AutoROBenchmark, app_instances, app_problems
from optiforge.solvers.robust import (
    BoxSet,
    BudgetSet,
    EllipsoidalSet,
    PolyhedralSet,
    ROProblem,
    nominal_counterpart,
    reference_counterpart,
    verify,
)


def _argmax(unc, w: np.ndarray) -> np.ndarray:
    """An adversarial ``z`` maximising ``w^T z`` over the set (primal, by enumeration-free LP)."""
    k = w.shape[0]
    if isinstance(unc, EllipsoidalSet):
        nw = np.linalg.norm(w)
        return np.zeros(k) if nw == 0 else unc.rho * w / nw
    if isinstance(unc, BoxSet):
        return unc.rho * np.sign(w)
    if isinstance(unc, BudgetSet):
        eye = np.eye(k)
        A = np.block([[eye, -eye], [-eye, -eye], [np.zeros((1, k)), np.ones((1, k))]])
        b = np.concatenate([np.zeros(2 * k), [unc.gamma]])
        res = linprog(
            -np.concatenate([w, np.zeros(k)]),
            A_ub=A,
            b_ub=b,
            bounds=[(None, None)] * k + [(0, 1)] * k,
        )
        return res.x[:k]
    if isinstance(unc, PolyhedralSet):
        res = linprog(-w, A_ub=np.asarray(unc.D), b_ub=np.asarray(unc.d), bounds=[(None, None)] * k)
        return res.x
    z = cp.Variable(k)  # intersection: explicit primal
    cons = []
    for part in unc.parts:
        if part.type == "norm_ball":
            cons.append(cp.norm(z, {1: 1, 2: 2, "inf": "inf"}[part.norm]) <= part.rho)
        else:
            cons.append(np.asarray(part.D) @ z <= np.asarray(part.d))
    cp.Problem(cp.Maximize(w @ z), cons).solve(solver="CLARABEL")
    return np.asarray(z.value)


def cutting_plane_optimum(p: ROProblem, tol: float = 1e-7, max_iter: int = 1000) -> float:
    """Robust optimum by scenario generation: LP over finitely many z, add the worst z, repeat.

    ``tol`` is relative to ``max(1, |b|)``; below ~1e-7 HiGHS's own feasibility tolerance
    makes further cuts meaningless (smooth ellipsoids then stall).
    """
    n = p.n
    obj = p.objective
    has_t = obj.uncertainty is not None
    sgn = 1.0 if obj.sense == "min" else -1.0
    cost = np.concatenate([sgn * np.asarray(obj.c), [sgn] if has_t else []])
    lo, hi = p.bounds()
    bounds = [(a, b) for a, b in zip(lo, hi, strict=True)] + ([(None, None)] if has_t else [])
    A_eq = [np.concatenate([c.a, [0.0] * has_t]) for c in p.constraints if c.sense == "=="]
    b_eq = [c.b for c in p.constraints if c.sense == "=="]
    rows: list[np.ndarray] = []
    rhs: list[float] = []
    unc_rows = []
    for c in p.constraints:
        if c.sense == "==":
            continue
        s = -1.0 if c.sense == ">=" else 1.0
        if c.uncertainty is None:
            rows.append(np.concatenate([s * np.asarray(c.a), [0.0] * has_t]))
            rhs.append(s * c.b)
        else:
            unc_rows.append(
                (s * np.asarray(c.a), s * c.uncertainty.p_matrix(), s * c.b, c.uncertainty)
            )

    def add_row_cut(a, P, b, z):
        rows.append(np.concatenate([a + P @ z, [0.0] * has_t]))
        rhs.append(b)

    def add_obj_cut(z):
        # min: (P z)^T x - t <= 0 ; max: t - (P z)^T x <= 0   (t is the worst-case c-part)
        Pz = obj.uncertainty.p_matrix() @ z
        rows.append(
            np.concatenate([Pz, [-1.0]]) if obj.sense == "min" else np.concatenate([-Pz, [1.0]])
        )
        rhs.append(0.0)

    for a, P, b, _u in unc_rows:
        add_row_cut(a, P, b, np.zeros(P.shape[1]))
    if has_t:
        add_obj_cut(np.zeros(obj.uncertainty.p_matrix().shape[1]))
    for _ in range(max_iter):
        res = linprog(
            cost,
            A_ub=np.array(rows) if rows else None,
            b_ub=rhs or None,
            A_eq=np.array(A_eq) if A_eq else None,
            b_eq=b_eq or None,
            bounds=bounds,
            method="highs",
        )
        assert res.status == 0, res.message
        x = res.x[:n]
        added = False
        for a, P, b, u in unc_rows:
            z = _argmax(u, P.T @ x)
            if (a + P @ z) @ x - b > tol * max(1.0, abs(b)):
                add_row_cut(a, P, b, z)
                added = True
        if has_t:
            Pm = obj.uncertainty.p_matrix()
            w = Pm.T @ x if obj.sense == "min" else -(Pm.T @ x)
            z = _argmax(obj.uncertainty, w)
            t = res.x[n]
            gap = (Pm @ z) @ x - t if obj.sense == "min" else t - (Pm @ z) @ x
            if gap > tol * max(1.0, abs(t)):
                add_obj_cut(z)
                added = True
        if not added:
            return float(sgn * res.fun) + obj.constant
    raise AssertionError(f"cutting planes did not converge for {p.name}")


def test_at_least_twenty_applications_with_recorded_optima() -> None:
    apps = app_problems()
    assert len(apps) >= 20 and set(apps) == set(APP_OPTIMA)
    kinds = {t for _, _, _, p in apps.values() for t in p.set_types()}
    assert kinds == {"box", "ellipsoidal", "polyhedral", "budget", "intersection"}
    for title, difficulty, text, _ in apps.values():
        assert len(text) > 150 and title and 1 <= difficulty <= 5


@pytest.mark.parametrize("name", sorted(APP_OPTIMA))
def test_recorded_optimum_matches_reference_and_cutting_planes(name: str) -> None:
    _, _, _, p = app_problems()[name]
    recorded = APP_OPTIMA[name]
    sol = reference_counterpart(p).solve()
    assert sol.objective == pytest.approx(recorded, rel=1e-7, abs=1e-7)
    assert cutting_plane_optimum(p) == pytest.approx(recorded, rel=1e-6, abs=1e-6)
    v = verify(p, sol.x, sol.objective, reference_objective=recorded, method="primal")
    assert v.correct, v.report()
    nom = nominal_counterpart(p).solve()
    assert not verify(p, nom.x, nom.objective, reference_objective=recorded).correct


def test_app_tasks_round_trip_and_score() -> None:
    insts = app_instances()
    for inst in insts[:3]:
        assert type(inst).model_validate_json(inst.to_json()) == inst
    task = AutoROBenchmark().tasks("app")[0]
    sol = reference_counterpart(task.instance.problem).solve()
    assert task.evaluate({"x": sol.x.tolist(), "objective": sol.objective}).passed
    assert not task.evaluate({"x": sol.x.tolist(), "objective": sol.objective + 1.0}).passed
