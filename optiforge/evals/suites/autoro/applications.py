"""AutoRO-Bench application set: natural-language robust problems with ground-truth models.

Each entry has a statement written for a modeller, the ground-truth ``ROProblem`` and the
robust optimum recorded in ``APP_OPTIMA``. The tasks are TEXT-ONLY: what an agent reads is
the statement followed by the problem's model sheet (``text.problem_text``: variables,
bounds, objective, rows and uncertainty sets in words, with the numbers a modeller needs);
the ground-truth JSON stays hidden and only the verifier reads it. ``APP_SPLITS`` divides
the set for experience memory: ``app-train`` (memory is built here), ``app-val`` (lessons
are pruned here), ``app-id`` (test, the set types of training: box, ellipsoidal, budget)
and ``app-ood`` (test, set types unseen in training: polyhedral sets and intersections). The optima were computed
by the reference reformulator; ``tests/evals/autoro`` re-derives every one of them by an
independent cutting-plane method (scipy LP + explicit worst-case scenarios) and checks
that the reference still reproduces the recorded number.

Uncertain right-hand sides are written with a variable fixed to 1 (``s`` in the
statements), because uncertainty lives in the coefficients ``a = a_bar + P z``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np

from optiforge.errors import InvalidTask
from optiforge.evals.suites.autoro.text import problem_text
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
)
from optiforge.solvers.robust.instance import ROInstance

App = tuple[str, int, str, ROProblem]
"""(title, difficulty, statement, ground-truth problem)."""


def _row(
    a: list[float],
    b: float,
    sense: Literal["<=", ">=", "=="] = "<=",
    unc: Any = None,
    name: str = "",
) -> LinearConstraint:
    return LinearConstraint(a=a, b=b, sense=sense, uncertainty=unc, name=name)


def _diag(v: list[float]) -> list[list[float]]:
    return np.diag(v).tolist()


def portfolio_budget() -> App:
    n = 8
    r = [1.15 + 0.05 * i / n for i in range(1, n + 1)]
    dev = [0.05 / 450 * np.sqrt(2 * i * n * (n + 1)) * 10 for i in range(1, n + 1)]
    text = (
        "Bertsimas-Sim robust portfolio. Invest one unit of wealth in 8 assets (no short "
        "selling). Asset i returns r_i = 1.15 + 0.05 i/8 on average but may deviate down "
        "or up by up to delta_i = (0.05/450) sqrt(2 i 8 9) * 10; at most Gamma = 3 returns "
        "deviate at once (fractional deviations count proportionally). Maximise the "
        "worst-case portfolio return."
    )
    p = ROProblem(
        name="portfolio_budget",
        n=n,
        lower=[0.0] * n,
        upper=[1.0] * n,
        objective=Objective(
            c=r, sense="max", uncertainty=BudgetSet(delta=[round(d, 6) for d in dev], gamma=3.0)
        ),
        constraints=[_row([1.0] * n, 1.0, "==", name="budget")],
    )
    return "Robust portfolio (budget uncertainty)", 2, text, p


def portfolio_ellipsoid() -> App:
    text = (
        "Ben-Tal/Nemirovski robust portfolio. Split one unit among 4 assets with expected "
        "returns 1.04, 1.07, 1.10, 1.13 (no short selling, at most 0.6 in any asset). "
        "The return vector lies in an ellipsoid around the mean: mu + diag(0.01, 0.03, "
        "0.05, 0.08) z with ||z||_2 <= 1.5. Maximise the worst-case return."
    )
    p = ROProblem(
        name="portfolio_ellipsoid",
        n=4,
        lower=[0.0] * 4,
        upper=[0.6] * 4,
        objective=Objective(
            c=[1.04, 1.07, 1.10, 1.13],
            sense="max",
            uncertainty=EllipsoidalSet(P=_diag([0.01, 0.03, 0.05, 0.08]), rho=1.5),
        ),
        constraints=[_row([1.0] * 4, 1.0, "==")],
    )
    return "Robust portfolio (ellipsoidal returns)", 2, text, p


def knapsack_lp() -> App:
    v = [12.0, 10.0, 8.0, 11.0, 6.0, 9.0]
    w = [5.0, 4.0, 3.0, 6.0, 2.0, 4.0]
    text = (
        "Robust knapsack, LP relaxation (Bertsimas-Sim 2004). Six items with values "
        "12, 10, 8, 11, 6, 9 and nominal weights 5, 4, 3, 6, 2, 4; each weight may be up "
        "to 20% heavier (or lighter), at most Gamma = 2 at once. Capacity 12. Choose "
        "fractions x_i in [0, 1] maximising value, feasible for every weight realisation."
    )
    p = ROProblem(
        name="knapsack_lp",
        n=6,
        lower=[0.0] * 6,
        upper=[1.0] * 6,
        objective=Objective(c=v, sense="max"),
        constraints=[_row(w, 12.0, unc=BudgetSet(delta=[0.2 * x for x in w], gamma=2.0))],
    )
    return "Robust knapsack (LP relaxation)", 1, text, p


def inventory_box() -> App:
    text = (
        "Inventory. Order q1, q2, q3 units of three products (cost 2, 3, 4 per unit, "
        "at most 100 each). Demands are 40, 30, 20 up to +-25% (box, each independently); "
        "orders must cover every demand realisation: q_i >= d_i s with s = 1 fixed. "
        "A shared warehouse holds at most 130 units. Minimise ordering cost."
    )
    # x = (q1, q2, q3, s); demand coefficient on s is uncertain
    rows = []
    for i, d in enumerate([40.0, 30.0, 20.0]):
        a = [0.0] * 4
        a[i] = 1.0
        a[3] = -d
        P = [[0.0] for _ in range(4)]
        P[3] = [-0.25 * d]
        rows.append(_row(a, 0.0, ">=", BoxSet(P=P, rho=1.0), f"cover_{i}"))
    rows.append(_row([1.0, 1.0, 1.0, 0.0], 130.0, name="warehouse"))
    p = ROProblem(
        name="inventory_box",
        n=4,
        lower=[0.0, 0.0, 0.0, 1.0],
        upper=[100.0, 100.0, 100.0, 1.0],
        objective=Objective(c=[2.0, 3.0, 4.0, 0.0], sense="min"),
        constraints=rows,
    )
    return "Inventory under demand uncertainty", 1, text, p


def production_ellipsoid() -> App:
    text = (
        "Production planning. Products A, B, C earn 20, 30, 25 per unit (at most 40 each). "
        "Machine 1 needs 1, 2, 1.5 hours per unit (capacity 100 h), machine 2 needs 2, 1, "
        "1.5 (capacity 110 h). Processing times are uncertain: each machine's time vector "
        "varies in an ellipsoid t_bar + 0.15 diag(t_bar) z, ||z||_2 <= 1. Maximise profit "
        "with both capacities respected for every realisation."
    )
    t1, t2 = [1.0, 2.0, 1.5], [2.0, 1.0, 1.5]
    p = ROProblem(
        name="production_ellipsoid",
        n=3,
        lower=[0.0] * 3,
        upper=[40.0] * 3,
        objective=Objective(c=[20.0, 30.0, 25.0], sense="max"),
        constraints=[
            _row(t1, 100.0, unc=EllipsoidalSet(P=_diag([0.15 * t for t in t1]), rho=1.0)),
            _row(t2, 110.0, unc=EllipsoidalSet(P=_diag([0.15 * t for t in t2]), rho=1.0)),
        ],
    )
    return "Production planning (uncertain processing times)", 2, text, p


def diet_box() -> App:
    text = (
        "Diet. Foods: oats, milk, beans, rice (cost 0.3, 0.5, 0.8, 0.2 per serving, at "
        "most 10 servings each). Protein per serving 5, 8, 15, 3 (need >= 60) and fibre "
        "4, 0, 8, 1 (need >= 30); nutrient contents vary by +-10% independently (box). "
        "Minimise cost while meeting both needs for every realisation."
    )
    prot, fib = [5.0, 8.0, 15.0, 3.0], [4.0, 0.0, 8.0, 1.0]
    p = ROProblem(
        name="diet_box",
        n=4,
        lower=[0.0] * 4,
        upper=[10.0] * 4,
        objective=Objective(c=[0.3, 0.5, 0.8, 0.2], sense="min"),
        constraints=[
            _row(prot, 60.0, ">=", BoxSet(P=_diag([0.1 * v for v in prot]), rho=1.0)),
            _row(fib, 30.0, ">=", BoxSet(P=_diag([0.1 * v for v in fib]), rho=1.0)),
        ],
    )
    return "Diet problem (uncertain nutrient content)", 1, text, p


def blending_budget() -> App:
    text = (
        "Ore blending. Blend 100 t from four ores costing 30, 45, 55, 70 per t (at most "
        "50 t of each). Metal grades are 1.0, 1.8, 2.4, 3.0 % with deviations 0.3, 0.4, "
        "0.5, 0.3 % of which at most Gamma = 2 occur together. The blend must contain at "
        "least 200 t-% of metal (average grade >= 2 %) in every case. Minimise cost."
    )
    g = [1.0, 1.8, 2.4, 3.0]
    p = ROProblem(
        name="blending_budget",
        n=4,
        lower=[0.0] * 4,
        upper=[50.0] * 4,
        objective=Objective(c=[30.0, 45.0, 55.0, 70.0], sense="min"),
        constraints=[
            _row([1.0] * 4, 100.0, "=="),
            _row(g, 200.0, ">=", BudgetSet(delta=[0.3, 0.4, 0.5, 0.3], gamma=2.0)),
        ],
    )
    return "Ore blending (budget on grades)", 2, text, p


def transportation_polyhedral() -> App:
    text = (
        "Transportation. Two plants (capacities 60, 50) ship to two markets on routes "
        "P1-M1, P1-M2, P2-M1, P2-M2 (unit costs 4, 6, 5, 3; at most 60 per route). Market "
        "demands are 40 and 35 plus deviations z1, z2 with |z_i| <= 8 and z1 + z2 <= 10 "
        "(a polyhedron; s = 1 carries the demand). Every demand realisation must be met. "
        "Minimise shipping cost."
    )
    # x = (x11, x12, x21, x22, s); market j: x1j + x2j - (d_j + z_j) s >= 0
    D = [[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0], [1.0, 1.0]]
    d = [8.0, 8.0, 8.0, 8.0, 10.0]
    P1 = [[0.0, 0.0]] * 4 + [[-1.0, 0.0]]
    P2 = [[0.0, 0.0]] * 4 + [[0.0, -1.0]]
    p = ROProblem(
        name="transportation_polyhedral",
        n=5,
        lower=[0.0] * 4 + [1.0],
        upper=[60.0] * 4 + [1.0],
        objective=Objective(c=[4.0, 6.0, 5.0, 3.0, 0.0], sense="min"),
        constraints=[
            _row([1.0, 1.0, 0.0, 0.0, 0.0], 60.0),
            _row([0.0, 0.0, 1.0, 1.0, 0.0], 50.0),
            _row([1.0, 0.0, 1.0, 0.0, -40.0], 0.0, ">=", PolyhedralSet(P=P1, D=D, d=d)),
            _row([0.0, 1.0, 0.0, 1.0, -35.0], 0.0, ">=", PolyhedralSet(P=P2, D=D, d=d)),
        ],
    )
    return "Transportation with polyhedral demand", 3, text, p


def network_capacity() -> App:
    text = (
        "Network design (capacity planning). Install capacity on 3 parallel links from a "
        "source to a sink (cost 5, 7, 9 per unit, at most 50 each); link reliabilities "
        "(usable fraction) are 0.9, 0.95, 0.99 but may each drop by up to 0.1, 0.05, "
        "0.02, at most Gamma = 1 link degrading fully. The usable capacity must carry a "
        "demand of 60 in every case. Minimise installation cost."
    )
    p = ROProblem(
        name="network_capacity",
        n=3,
        lower=[0.0] * 3,
        upper=[50.0] * 3,
        objective=Objective(c=[5.0, 7.0, 9.0], sense="min"),
        constraints=[
            _row([0.9, 0.95, 0.99], 60.0, ">=", BudgetSet(delta=[0.1, 0.05, 0.02], gamma=1.0))
        ],
    )
    return "Network capacity design (unreliable links)", 2, text, p


def staffing_box() -> App:
    text = (
        "Shift scheduling. Hire workers for morning, evening and night shifts (wages 100, "
        "120, 150; at most 30 per shift). Workload: the day needs 200 task units and "
        "morning+evening need 150; a worker completes 8, 7, 6 units per shift, each "
        "productivity uncertain by +-1 unit (box). Cover both workloads in every case; "
        "LP relaxation (fractional workers). Minimise wages."
    )
    prod = [8.0, 7.0, 6.0]
    p = ROProblem(
        name="staffing_box",
        n=3,
        lower=[0.0] * 3,
        upper=[30.0] * 3,
        objective=Objective(c=[100.0, 120.0, 150.0], sense="min"),
        constraints=[
            _row(prod, 200.0, ">=", BoxSet(P=_diag([1.0, 1.0, 1.0]), rho=1.0)),
            _row([8.0, 7.0, 0.0], 150.0, ">=", BoxSet(P=_diag([1.0, 1.0, 0.0]), rho=1.0)),
        ],
    )
    return "Shift scheduling (uncertain productivity)", 1, text, p


def energy_dispatch_polyhedral() -> App:
    text = (
        "Energy dispatch. Commit output levels of a coal, a gas and a wind unit (costs "
        "30, 50, 5 per MWh; capacities 100, 80, 60 MW). Wind availability is 0.6 of its "
        "rating +-0.3 and the coal derating factor 1 may drop by 0.1; the two deviations "
        "z satisfy -1 <= z <= 1 and z1 + z2 <= 1.2 (polyhedron). Delivered energy "
        "(1 - 0.1 z1) coal + gas + (0.6 - 0.3 z2) wind must meet a 150 MWh load in every "
        "case (the worst case takes z1, z2 at their adverse extremes). Minimise cost."
    )
    D = [[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0], [1.0, 1.0]]
    P = [[-0.1, 0.0], [0.0, 0.0], [0.0, -0.3]]
    p = ROProblem(
        name="energy_dispatch_polyhedral",
        n=3,
        lower=[0.0] * 3,
        upper=[100.0, 80.0, 60.0],
        objective=Objective(c=[30.0, 50.0, 5.0], sense="min"),
        constraints=[
            _row([1.0, 1.0, 0.6], 150.0, ">=", PolyhedralSet(P=P, D=D, d=[1.0, 1.0, 1.0, 1.0, 1.2]))
        ],
    )
    return "Energy dispatch (polyhedral availability)", 3, text, p


def facility_budget() -> App:
    text = (
        "Facility capacity. Size four facilities (cost 10, 12, 8, 15 per unit capacity, "
        "at most 80 each) so their total capacity covers total demand 200 + sum_j 15 z_j "
        "of four regions with |z_j| <= 1 and at most Gamma = 2 regions deviating; in "
        "addition facilities 1 and 2 together must cover the northern demand 90 +- 10 "
        "(box). s = 1 carries the demand. Minimise capacity cost."
    )
    # x = (c1..c4, s)
    P_total = [[0.0] * 4 for _ in range(4)] + [[-15.0] * 4]
    p = ROProblem(
        name="facility_budget",
        n=5,
        lower=[0.0] * 4 + [1.0],
        upper=[80.0] * 4 + [1.0],
        objective=Objective(c=[10.0, 12.0, 8.0, 15.0, 0.0], sense="min"),
        constraints=[
            _row(
                [1.0, 1.0, 1.0, 1.0, -200.0],
                0.0,
                ">=",
                IntersectionSet(
                    P=P_total,
                    parts=[NormBallPart(norm="inf", rho=1.0), NormBallPart(norm=1, rho=2.0)],
                ),
            ),
            _row(
                [1.0, 1.0, 0.0, 0.0, -90.0], 0.0, ">=", BoxSet(P=[[0.0]] * 4 + [[-10.0]], rho=1.0)
            ),
        ],
    )
    return "Facility capacity (budgeted regional demand)", 3, text, p


def crop_planning_ellipsoid() -> App:
    text = (
        "Crop planning. Allocate 100 ha among wheat, maize and soy (profit 300, 450, 380 "
        "per ha; at most 60 ha each). Water use per ha is 2, 4, 3 thousand m^3 with "
        "correlated uncertainty a_bar + P z, ||z||_2 <= 1, P = [[0.3,0.1],[0.5,0.2],"
        "[0.2,0.4]]; the water allowance is 300 thousand m^3. Maximise profit with the "
        "allowance respected for every realisation."
    )
    p = ROProblem(
        name="crop_planning_ellipsoid",
        n=3,
        lower=[0.0] * 3,
        upper=[60.0] * 3,
        objective=Objective(c=[300.0, 450.0, 380.0], sense="max"),
        constraints=[
            _row([1.0, 1.0, 1.0], 100.0),
            _row(
                [2.0, 4.0, 3.0],
                300.0,
                unc=EllipsoidalSet(P=[[0.3, 0.1], [0.5, 0.2], [0.2, 0.4]], rho=1.0),
            ),
        ],
    )
    return "Crop planning (correlated water use)", 2, text, p


def advertising_box_objective() -> App:
    text = (
        "Advertising mix. Spend a budget of 100 across TV, web, radio and print (at most "
        "50 each; web at least 10). Reach per unit spent is 3.0, 4.0, 2.0, 1.5 but each "
        "may be off by +-0.8, +-1.5, +-0.4, +-0.2 (box). TV plus print spending may not "
        "exceed 60. Maximise the worst-case reach."
    )
    p = ROProblem(
        name="advertising_box_objective",
        n=4,
        lower=[0.0, 10.0, 0.0, 0.0],
        upper=[50.0] * 4,
        objective=Objective(
            c=[3.0, 4.0, 2.0, 1.5],
            sense="max",
            uncertainty=BoxSet(P=_diag([0.8, 1.5, 0.4, 0.2]), rho=1.0),
        ),
        constraints=[_row([1.0] * 4, 100.0), _row([1.0, 0.0, 0.0, 1.0], 60.0)],
    )
    return "Advertising mix (uncertain reach)", 1, text, p


def project_selection_budget() -> App:
    text = (
        "Project selection, LP relaxation. Five projects with values 20, 15, 25, 10, 18 "
        "and nominal costs 8, 6, 11, 4, 7 (fractional funding x_i in [0, 1]). Cost overruns "
        "of up to 30% can hit at most Gamma = 1.5 projects (fractional budget). The "
        "programme budget is 20. Maximise value, never exceeding the budget."
    )
    cost = [8.0, 6.0, 11.0, 4.0, 7.0]
    p = ROProblem(
        name="project_selection_budget",
        n=5,
        lower=[0.0] * 5,
        upper=[1.0] * 5,
        objective=Objective(c=[20.0, 15.0, 25.0, 10.0, 18.0], sense="max"),
        constraints=[_row(cost, 20.0, unc=BudgetSet(delta=[0.3 * c for c in cost], gamma=1.5))],
    )
    return "Project selection (cost overruns)", 2, text, p


def refinery_intersection() -> App:
    text = (
        "Refinery planning. Process crudes A and B (at most 100 kbbl each; margins 8 and "
        "6 per bbl). Gasoline yields are 0.45 and 0.35 with deviations P z, P = diag(0.05, "
        "0.04), z in the box ||z||_inf <= 1 intersected with the ball ||z||_2 <= 1.2; "
        "gasoline demand caps output at 55 kbbl (yield x crude <= 55 for every z). The "
        "distillation column takes at most 150 kbbl. Maximise margin."
    )
    p = ROProblem(
        name="refinery_intersection",
        n=2,
        lower=[0.0, 0.0],
        upper=[100.0, 100.0],
        objective=Objective(c=[8.0, 6.0], sense="max"),
        constraints=[
            _row([1.0, 1.0], 150.0),
            _row(
                [0.45, 0.35],
                55.0,
                unc=IntersectionSet(
                    P=_diag([0.05, 0.04]),
                    parts=[NormBallPart(norm="inf", rho=1.0), NormBallPart(norm=2, rho=1.2)],
                ),
            ),
        ],
    )
    return "Refinery planning (box ∩ ball yields)", 4, text, p


def cloud_allocation_budget() -> App:
    text = (
        "Cloud resource allocation. Run fractions x of five batch jobs (revenues 5, 8, 6, "
        "9, 4; x_i in [0, 1]) on a 16-core server. Jobs need 3, 5, 4, 6, 2 cores nominally; "
        "each may need up to 1, 2, 1, 2, 1 cores more, at most Gamma = 2 jobs at once. "
        "Memory: jobs need 4, 6, 3, 8, 2 GB of 16 GB (certain). Maximise revenue."
    )
    cores = [3.0, 5.0, 4.0, 6.0, 2.0]
    p = ROProblem(
        name="cloud_allocation_budget",
        n=5,
        lower=[0.0] * 5,
        upper=[1.0] * 5,
        objective=Objective(c=[5.0, 8.0, 6.0, 9.0, 4.0], sense="max"),
        constraints=[
            _row(cores, 16.0, unc=BudgetSet(delta=[1.0, 2.0, 1.0, 2.0, 1.0], gamma=2.0)),
            _row([4.0, 6.0, 3.0, 8.0, 2.0], 16.0),
        ],
    )
    return "Cloud allocation (uncertain core demand)", 2, text, p


def bandwidth_polyhedral() -> App:
    text = (
        "Telecom bandwidth leasing. Lease capacity on two paths (cost 3 and 4 per Gbps; "
        "at most 100 each) to carry traffic of two customers routed on both paths. Path "
        "loads are 0.6 t1 + 0.4 t2 and 0.4 t1 + 0.6 t2 with traffic t = (50, 40) + z, "
        "|z_i| <= 15 and z1 + z2 <= 20; each path's lease must carry its load in every "
        "case (s = 1 carries the traffic). Minimise leasing cost."
    )
    # x = (u1, u2, s); path k: u_k - (load_k(t)) s >= 0
    D = [[1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [0.0, -1.0], [1.0, 1.0]]
    d = [15.0, 15.0, 15.0, 15.0, 20.0]
    p = ROProblem(
        name="bandwidth_polyhedral",
        n=3,
        lower=[0.0, 0.0, 1.0],
        upper=[100.0, 100.0, 1.0],
        objective=Objective(c=[3.0, 4.0, 0.0], sense="min"),
        constraints=[
            _row(
                [1.0, 0.0, -(0.6 * 50 + 0.4 * 40)],
                0.0,
                ">=",
                PolyhedralSet(P=[[0.0, 0.0], [0.0, 0.0], [-0.6, -0.4]], D=D, d=d),
            ),
            _row(
                [0.0, 1.0, -(0.4 * 50 + 0.6 * 40)],
                0.0,
                ">=",
                PolyhedralSet(P=[[0.0, 0.0], [0.0, 0.0], [-0.4, -0.6]], D=D, d=d),
            ),
        ],
    )
    return "Bandwidth leasing (polyhedral traffic)", 3, text, p


def water_release_ellipsoid() -> App:
    text = (
        "Reservoir release. Release r1, r2, r3 (million m^3, each between 5 and 40) over "
        "three weeks to earn hydropower revenue 4, 5, 6 per unit. Evaporation-adjusted "
        "storage must stay non-negative: 60 + inflow - cumulative release >= 0 at the end, "
        "where the three-week inflow s*(30 + 6 z1 + 4 z2 + 3 z3), ||z||_2 <= 1 (s = 1). "
        "Releases in weeks 1-2 may not exceed 50 (channel limit). Maximise revenue."
    )
    # x = (r1, r2, r3, s): 90 s + (6,4,3).z s - r1 - r2 - r3 >= 0  (60 + 30 inflow)
    p = ROProblem(
        name="water_release_ellipsoid",
        n=4,
        lower=[5.0, 5.0, 5.0, 1.0],
        upper=[40.0, 40.0, 40.0, 1.0],
        objective=Objective(c=[4.0, 5.0, 6.0, 0.0], sense="max"),
        constraints=[
            _row(
                [-1.0, -1.0, -1.0, 90.0],
                0.0,
                ">=",
                EllipsoidalSet(P=[[0.0] * 3, [0.0] * 3, [0.0] * 3, [6.0, 4.0, 3.0]], rho=1.0),
            ),
            _row([1.0, 1.0, 0.0, 0.0], 50.0),
        ],
    )
    return "Reservoir release (ellipsoidal inflow)", 2, text, p


def machine_scheduling_box() -> App:
    text = (
        "Machine loading. Assign hours of jobs J1..J4 to two machines (x = hours of J1..J4 "
        "on machine 1 then on machine 2, each at most 40). Each job needs at least 20 "
        "productive hours in total; machine 1 is productive 90% of the time with +-5% "
        "uncertainty per job (box), machine 2 80% with +-10% (box). Machine capacities are "
        "60 hours each. Hourly costs: machine 1: 5, 6, 7, 8; machine 2: 4, 4, 5, 5. "
        "Minimise cost with every job's productive hours guaranteed."
    )
    rows = []
    for j in range(4):
        a = [0.0] * 8
        a[j], a[4 + j] = 0.9, 0.8
        P = [[0.0, 0.0] for _ in range(8)]
        P[j] = [0.05, 0.0]
        P[4 + j] = [0.0, 0.1]
        rows.append(_row(a, 20.0, ">=", BoxSet(P=P, rho=1.0), f"job_{j}"))
    rows.append(_row([1.0] * 4 + [0.0] * 4, 60.0, name="machine_1"))
    rows.append(_row([0.0] * 4 + [1.0] * 4, 60.0, name="machine_2"))
    p = ROProblem(
        name="machine_scheduling_box",
        n=8,
        lower=[0.0] * 8,
        upper=[40.0] * 8,
        objective=Objective(c=[5.0, 6.0, 7.0, 8.0, 4.0, 4.0, 5.0, 5.0], sense="min"),
        constraints=rows,
    )
    return "Machine loading (uncertain productivity)", 3, text, p


def emergency_coverage_intersection() -> App:
    text = (
        "Emergency staffing. Station paramedic crews in three districts (cost 9, 8, 10 per "
        "crew, at most 15 each). Total calls are 30 + 4 z1 + 3 z2 + 5 z3 crews' worth with "
        "z in the polyhedron z1 + z2 + z3 <= 1.5, -z_i <= 1 intersected with the ball "
        "||z||_2 <= 1; total crews must cover every call scenario (s = 1), and district 3 "
        "alone needs at least 6 crews. Minimise cost."
    )
    P = [[0.0] * 3, [0.0] * 3, [0.0] * 3, [-4.0, -3.0, -5.0]]
    unc = IntersectionSet(
        P=P,
        parts=[
            PolyhedronPart(
                D=[[1.0, 1.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0], [0.0, 0.0, -1.0]],
                d=[1.5, 1.0, 1.0, 1.0],
            ),
            NormBallPart(norm=2, rho=1.0),
        ],
    )
    p = ROProblem(
        name="emergency_coverage_intersection",
        n=4,
        lower=[0.0, 0.0, 6.0, 1.0],
        upper=[15.0, 15.0, 15.0, 1.0],
        objective=Objective(c=[9.0, 8.0, 10.0, 0.0], sense="min"),
        constraints=[_row([1.0, 1.0, 1.0, -30.0], 0.0, ">=", unc)],
    )
    return "Emergency staffing (polyhedron ∩ ball demand)", 4, text, p


def lot_sizing_budget() -> App:
    text = (
        "Two-period lot sizing. Produce p1, p2 (cost 10, 12 per unit, at most 60 each) "
        "and carry inventory I1 (cost 1 per unit, at most 50). Period demands 40 and 45 "
        "may each rise by 10 and 12, at most Gamma = 1 of them fully: cumulative "
        "production must cover cumulative demand in every case (p1 >= d1 s; p1 + p2 >= "
        "(d1 + d2) s with s = 1), and I1 = p1 - 40 must be at least 0 nominally. "
        "Minimise production plus holding cost."
    )
    # x = (p1, p2, I1, s)
    p = ROProblem(
        name="lot_sizing_budget",
        n=4,
        lower=[0.0, 0.0, 0.0, 1.0],
        upper=[60.0, 60.0, 50.0, 1.0],
        objective=Objective(c=[10.0, 12.0, 1.0, 0.0], sense="min"),
        constraints=[
            _row([1.0, 0.0, 0.0, -40.0], 0.0, ">=", BoxSet(P=[[0.0]] * 3 + [[-10.0]], rho=1.0)),
            _row(
                [1.0, 1.0, 0.0, -85.0],
                0.0,
                ">=",
                IntersectionSet(
                    P=[[0.0, 0.0]] * 3 + [[-10.0, -12.0]],
                    parts=[NormBallPart(norm="inf", rho=1.0), NormBallPart(norm=1, rho=1.0)],
                ),
            ),
            _row([1.0, 0.0, -1.0, -40.0], 0.0, "=="),
        ],
    )
    return "Lot sizing (budgeted demand surge)", 3, text, p


_BUILDERS: tuple[Callable[[], App], ...] = (
    portfolio_budget,
    portfolio_ellipsoid,
    knapsack_lp,
    inventory_box,
    production_ellipsoid,
    diet_box,
    blending_budget,
    transportation_polyhedral,
    network_capacity,
    staffing_box,
    energy_dispatch_polyhedral,
    facility_budget,
    crop_planning_ellipsoid,
    advertising_box_objective,
    project_selection_budget,
    refinery_intersection,
    cloud_allocation_budget,
    bandwidth_polyhedral,
    water_release_ellipsoid,
    machine_scheduling_box,
    emergency_coverage_intersection,
    lot_sizing_budget,
)

# Robust optima recorded from the reference reformulator (re-derived independently in tests).
APP_OPTIMA: dict[str, float] = {
    "portfolio_budget": 1.167574271,
    "portfolio_ellipsoid": 1.051827532,
    "knapsack_lp": 28.310606061,
    "inventory_box": 312.499999995,
    "production_ellipsoid": 1561.59342027,
    "diet_box": 3.555555557,
    "blending_budget": 5332.746478826,
    "transportation_polyhedral": 320.999999997,
    "network_capacity": 397.368421066,
    "staffing_box": 2857.14285877,
    "energy_dispatch_polyhedral": 5000.000000017,
    "facility_budget": 2280.000000007,
    "crop_planning_ellipsoid": 35012.25072647,
    "advertising_box_objective": 234.999999999,
    "project_selection_budget": 45.299654474,
    "refinery_intersection": 879.674291817,
    "cloud_allocation_budget": 22.787878788,
    "bandwidth_polyhedral": 390.999999999,
    "water_release_ellipsoid": 445.948751678,
    "machine_scheduling_box": 537.310924376,
    "emergency_coverage_intersection": 322.071067804,
    "lot_sizing_budget": 1063.99999995,
}


APP_SPLITS: dict[str, tuple[str, ...]] = {
    "app-train": (
        "knapsack_lp",
        "network_capacity",
        "production_ellipsoid",
        "portfolio_ellipsoid",
        "inventory_box",
        "diet_box",
    ),
    "app-val": ("project_selection_budget", "water_release_ellipsoid", "advertising_box_objective"),
    "app-id": (
        "portfolio_budget",
        "blending_budget",
        "cloud_allocation_budget",
        "crop_planning_ellipsoid",
        "staffing_box",
        "machine_scheduling_box",
    ),
    "app-ood": (
        "transportation_polyhedral",
        "energy_dispatch_polyhedral",
        "bandwidth_polyhedral",
        "facility_budget",
        "refinery_intersection",
        "emergency_coverage_intersection",
        "lot_sizing_budget",
    ),
}
"""Memory splits of the application set (their union is every application, once)."""


def app_statement(title: str, text: str, problem: ROProblem) -> str:
    """What an agent reads for an application: title, statement and model sheet (no JSON)."""
    return f"{title}.\n{text}\n\n{problem_text(problem)}"


def app_problems() -> dict[str, App]:
    """Every application problem by name (title, difficulty, statement, ground truth)."""
    out: dict[str, App] = {}
    for build in _BUILDERS:
        app = build()
        out[app[3].name] = app
    return out


def app_instances(split: str = "app") -> list[ROInstance]:
    """The application set (``app``) or one memory split as ``ROInstance`` objects.

    ``description`` is the text an agent reads (``app_statement``); ``split`` is the
    memory split the application belongs to.
    """
    if split != "app" and split not in APP_SPLITS:
        raise InvalidTask(f"unknown application split {split!r}")
    home = {name: sp for sp, names in APP_SPLITS.items() for name in names}
    insts = []
    for name, (title, difficulty, text, problem) in app_problems().items():
        if name not in APP_OPTIMA:
            raise InvalidTask(f"application {name!r} has no recorded optimum")
        if split != "app" and home.get(name) != split:
            continue
        insts.append(
            ROInstance(
                id=f"autoro-app-{name}",
                split=home.get(name, "app"),
                difficulty=difficulty,
                description=app_statement(title, text, problem),
                problem=problem,
                reference_objective=APP_OPTIMA[name],
                reference_x=[],
                set_types=problem.set_types(),
                features=["application"],
            )
        )
    return insts
