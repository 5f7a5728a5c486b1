"""AutoRO-Bench instances and their seeded generator.

``generate(split, n, seed, difficulty)`` is deterministic: instance ``i`` draws from
``numpy.random.default_rng(SeedSequence([seed, crc32(split), difficulty, i, attempt]))``.
Every instance is built around a strictly feasible interior point ``x0`` inside finite
variable bounds (so it is feasible and bounded), then solved by the reference
reformulator; an instance is resampled (``attempt + 1``, still deterministic) when the
solve fails or when the nominal optimum happens to be robust-feasible already (such an
instance would not tell a robust counterpart from a nominal one).

Difficulty ``1..5`` sets the number of variables (``3 + difficulty`` ... ``8``), the
number of uncertain rows (1, 2, 3, 4, 6) and how set types mix. Splits:

- ``dev`` / ``test`` (in-distribution): box, ellipsoidal, budget sets; LP nominal.
- ``heldout`` (out-of-distribution): polyhedral sets and intersections (box ∩ ball,
  box ∩ l1-ball, polyhedron ∩ ball), second-order-cone nominal constraints and an
  uncertain objective: set types and structures absent from ``dev``.
"""

from __future__ import annotations

import zlib
from typing import Any, Literal

import numpy as np

from optiforge.errors import InvalidTask, SolverError
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
    SOCConstraint,
    nominal_counterpart,
    reference_counterpart,
    verify,
    worst_case_support,
)
from optiforge.solvers.robust.instance import ROInstance

GENERATED_SPLITS: tuple[str, ...] = ("dev", "test", "heldout")
IN_DISTRIBUTION_SETS: tuple[str, ...] = ("box", "ellipsoidal", "budget")
OOD_SETS: tuple[str, ...] = ("polyhedral", "intersection")
MAX_ATTEMPTS = 25
_N_VARS = {1: 3, 2: 4, 3: 5, 4: 6, 5: 8}
_N_UNCERTAIN = {1: 1, 2: 2, 3: 3, 4: 4, 5: 6}


def _rng(seed: int, split: str, difficulty: int, index: int, attempt: int) -> np.random.Generator:
    # crc32, not hash(): Python's str hash is salted per process.
    key = [seed, zlib.crc32(split.encode()), difficulty, index, attempt]
    return np.random.default_rng(np.random.SeedSequence(key))


def _r(x: np.ndarray | float) -> Any:
    """Round to 4 decimals so JSON stays short and exact across platforms."""
    return np.round(x, 4).tolist()


def _perturbation(rng: np.random.Generator, a: np.ndarray, dense: bool) -> np.ndarray:
    """``n x k`` perturbation: scaled diagonal, or dense low-rank at high difficulty."""
    n = a.shape[0]
    if not dense:
        return np.diag(np.abs(a) * rng.uniform(0.1, 0.35, n))
    k = max(2, n // 2)
    return rng.uniform(-0.25, 0.25, (n, k)) * np.abs(a).mean()


def _in_distribution_set(kind: str, rng: np.random.Generator, a: np.ndarray, dense: bool) -> Any:
    n = a.shape[0]
    if kind == "box":
        return BoxSet(P=_r(_perturbation(rng, a, dense)), rho=_r(rng.uniform(0.5, 1.0)))
    if kind == "ellipsoidal":
        return EllipsoidalSet(P=_r(_perturbation(rng, a, dense)), rho=_r(rng.uniform(0.5, 1.5)))
    delta = np.abs(a) * rng.uniform(0.1, 0.4, n)
    gamma = float(np.round(rng.uniform(0.5, max(1.0, n / 2)) * 2) / 2)
    return BudgetSet(delta=_r(delta), gamma=gamma)


def _ood_set(kind: str, rng: np.random.Generator, a: np.ndarray) -> Any:
    n = a.shape[0]
    P = _r(np.diag(np.abs(a) * rng.uniform(0.15, 0.35, n)))
    k = n
    if kind == "polyhedral":
        extra = rng.uniform(-1, 1, (2, k))
        D = np.vstack([np.eye(k), -np.eye(k), extra])
        d = np.concatenate([np.ones(2 * k), np.abs(extra).sum(1) * rng.uniform(0.3, 0.7, 2)])
        return PolyhedralSet(P=P, D=_r(D), d=_r(d))
    variant = int(rng.integers(3))
    if variant == 0:  # box ∩ ball: both active when rho_inf < rho_2 < rho_inf sqrt(k)
        rho_inf = float(_r(rng.uniform(0.5, 1.0)))
        rho_2 = float(_r(rho_inf * rng.uniform(1.1, 0.9 * np.sqrt(k))))
        parts: list[Any] = [NormBallPart(norm="inf", rho=rho_inf), NormBallPart(norm=2, rho=rho_2)]
    elif variant == 1:  # box ∩ l1-ball (a budget set on a general P)
        parts = [
            NormBallPart(norm="inf", rho=1.0),
            NormBallPart(norm=1, rho=_r(rng.uniform(1.0, k / 2))),
        ]
    else:  # polyhedron ∩ ball
        extra = rng.uniform(-1, 1, (3, k))
        d = np.abs(extra).sum(1) * rng.uniform(0.3, 0.7, 3)
        parts = [
            PolyhedronPart(D=_r(extra), d=_r(d)),
            NormBallPart(norm=2, rho=_r(rng.uniform(0.8, 1.5))),
        ]
    return IntersectionSet(P=P, parts=parts)


def _describe(problem: ROProblem, features: list[str]) -> str:
    """A plain-language statement of the instance's structure (the numbers are in the JSON)."""
    obj = problem.objective
    lo, hi = problem.bounds()
    lines = [
        f"{'Maximise' if obj.sense == 'max' else 'Minimise'} a linear objective over "
        f"x in R^{problem.n} with bounds {_r(lo)} <= x <= {_r(hi)}.",
    ]
    if obj.uncertainty is not None:
        lines.append(
            f"The objective coefficients are uncertain: c = c_bar + P z with z in a "
            f"{obj.uncertainty.type} set; optimise the worst case."
        )
    n_unc = sum(c.uncertainty is not None for c in problem.constraints)
    lines.append(
        f"There are {len(problem.constraints)} linear constraints, {n_unc} of them with "
        "uncertain coefficients a = a_bar + P z that must hold for every z in their set:"
    )
    for i, con in enumerate(problem.constraints):
        if con.uncertainty is None:
            lines.append(f"  row {i} ({con.sense}): certain")
            continue
        u = con.uncertainty
        if isinstance(u, BoxSet | EllipsoidalSet):
            detail = f"radius {u.rho:g}"
        elif isinstance(u, BudgetSet):
            detail = f"budget Gamma = {u.gamma:g}"
        elif isinstance(u, PolyhedralSet):
            detail = f"{len(u.d)} facets"
        else:
            detail = " ∩ ".join(
                f"{p.norm}-ball r={p.rho:g}" if isinstance(p, NormBallPart) else "polyhedron"
                for p in u.parts
            )
        lines.append(f"  row {i} ({con.sense}): {u.type} uncertainty, {detail}")
    if problem.soc_constraints:
        lines.append(
            f"Plus {len(problem.soc_constraints)} second-order-cone constraint(s) "
            "||A x + b||_2 <= c^T x + d (certain)."
        )
    lines.append("Find a robust optimal x and its robust objective value.")
    return "\n".join(lines)


def _draw(split: str, difficulty: int, rng: np.random.Generator) -> tuple[ROProblem, list[str]]:
    n = _N_VARS[difficulty]
    n_unc = _N_UNCERTAIN[difficulty]
    ood = split == "heldout"
    features: list[str] = []
    lo = np.zeros(n)
    if difficulty >= 4:
        lo[rng.random(n) < 0.3] = -1.0  # signed variables make |x_j| in the set terms matter
    hi = _r(rng.uniform(2.0, 5.0, n))
    hi = np.asarray(hi)
    x0 = lo + (hi - lo) * rng.uniform(0.05, 0.25, n)
    sense: Literal["min", "max"] = "max" if rng.random() < 0.7 else "min"
    c = rng.uniform(0.5, 2.0, n) * (1.0 if sense == "max" else -1.0)

    if ood:
        kinds = list(rng.choice(OOD_SETS, size=n_unc))
    elif difficulty == 1:
        kinds = ["box"]
    elif difficulty == 2:
        kinds = list(rng.choice(("box", "ellipsoidal"), size=n_unc))
    else:
        kinds = list(rng.choice(IN_DISTRIBUTION_SETS, size=n_unc))
    dense = difficulty == 5 and not ood

    constraints: list[LinearConstraint] = []
    for kind in kinds:
        a = rng.uniform(0.2, 2.0, n)
        a[rng.random(n) < 0.15 * (difficulty - 1) / 4] *= -0.5  # a few negative entries
        a = np.asarray(_r(a))
        unc = _ood_set(kind, rng, a) if ood else _in_distribution_set(kind, rng, a, dense)
        w = unc.p_matrix().T @ x0
        worst = float(a @ x0) + worst_case_support(unc, w)
        b = float(_r(worst + rng.uniform(0.5, 2.0)))
        if rng.random() < 0.25:
            # the same row written as >=: -a x >= -b for all a (sets here are symmetric
            # under z -> -z for box/ellipsoid/budget; P is negated to stay exact anyway)
            features.append("ge_rows")
            if isinstance(unc, BudgetSet):
                constraints.append(LinearConstraint(a=_r(-a), b=-b, sense=">=", uncertainty=unc))
            else:
                neg = unc.model_copy(update={"P": _r(-unc.p_matrix())})
                constraints.append(LinearConstraint(a=_r(-a), b=-b, sense=">=", uncertainty=neg))
        else:
            constraints.append(LinearConstraint(a=a.tolist(), b=b, uncertainty=unc))
    # one certain resource row through x0
    a = np.asarray(_r(rng.uniform(0.1, 1.0, n)))
    constraints.append(LinearConstraint(a=a.tolist(), b=float(_r(a @ x0 + rng.uniform(1.0, 3.0)))))

    soc: list[SOCConstraint] = []
    objective_unc = None
    if ood:
        if difficulty >= 2 or rng.random() < 0.5:
            A = rng.uniform(-0.5, 0.5, (2, n))
            bb = rng.uniform(-0.5, 0.5, 2)
            d = float(_r(float(np.linalg.norm(A @ x0 + bb)) + rng.uniform(0.5, 1.5)))
            soc.append(SOCConstraint(A=_r(A), b=_r(bb), c=[0.0] * n, d=d))
            features.append("soc")
        if difficulty >= 3 or rng.random() < 0.5:
            P = np.diag(np.abs(c) * rng.uniform(0.1, 0.3, n))
            objective_unc = (
                EllipsoidalSet(P=_r(P), rho=1.0)
                if rng.random() < 0.5
                else PolyhedralSet(
                    P=_r(P),
                    D=_r(np.vstack([np.eye(n), -np.eye(n), np.ones((1, n))])),
                    d=[1.0] * (2 * n) + [float(max(1, n // 2))],
                )
            )
            features.append("uncertain_objective")
    problem = ROProblem(
        n=n,
        lower=lo.tolist(),
        upper=hi.tolist(),
        objective=Objective(c=_r(c), sense=sense, uncertainty=objective_unc),
        constraints=constraints,
        soc_constraints=soc,
    )
    return problem, sorted(set(features))


def make_instance(split: str, index: int, seed: int = 0, difficulty: int = 1) -> ROInstance:
    """Instance ``index`` of ``split`` (deterministic in ``(split, index, seed, difficulty)``)."""
    if split not in GENERATED_SPLITS:
        raise InvalidTask(f"unknown AutoRO split {split!r} (expected {'|'.join(GENERATED_SPLITS)})")
    if difficulty not in _N_VARS:
        raise InvalidTask(f"difficulty must be 1..5, got {difficulty}")
    last: Exception | None = None
    for attempt in range(MAX_ATTEMPTS):
        rng = _rng(seed, split, difficulty, index, attempt)
        problem, features = _draw(split, difficulty, rng)
        try:
            sol = reference_counterpart(problem).solve()
            nom = nominal_counterpart(problem).solve()
        except SolverError as exc:
            last = exc
            continue
        if sol.status != "optimal":
            last = SolverError(f"reference status {sol.status}")
            continue
        # an instance whose nominal optimum is already robust cannot tell the two apart
        if verify(problem, nom.x, None, reference_objective=sol.objective).correct:
            continue
        return ROInstance(
            id=f"autoro-{split}-d{difficulty}-{index:04d}-s{seed}",
            split=split,
            difficulty=difficulty,
            description=_describe(problem, features),
            problem=problem,
            reference_objective=sol.objective,
            reference_x=sol.x.tolist(),
            set_types=problem.set_types(),
            features=features,
        )
    raise SolverError(
        f"could not generate a usable instance for {split}/{index} after {MAX_ATTEMPTS} attempts: {last}"
    )


def generate(split: str, n: int, seed: int = 0, difficulty: int | None = None) -> list[ROInstance]:
    """``n`` instances of ``split``; ``difficulty=None`` cycles 1..5 over the indices."""
    if n < 0:
        raise InvalidTask(f"n must be >= 0, got {n}")
    return [
        make_instance(split, i, seed, difficulty if difficulty is not None else 1 + i % 5)
        for i in range(n)
    ]
