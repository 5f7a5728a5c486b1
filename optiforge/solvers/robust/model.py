"""Typed robust-optimization problem model: nominal LP/SOCP plus uncertainty sets.

Every uncertain row reads ``a^T x <= b`` (or ``>=``) with ``a = a_bar + P z`` and ``z``
ranging over a set ``Z`` in ``R^k``; ``P`` is ``n x k``. The sets (``type`` field):

- ``box``          ``{z : ||z||_inf <= rho}``
- ``ellipsoidal``  ``{z : ||z||_2 <= rho}``
- ``polyhedral``   ``{z : D z <= d}`` (``D`` is ``m x k``)
- ``budget``       Bertsimas-Sim: ``a_j = a_bar_j + delta_j z_j``, ``|z_j| <= 1``,
                   ``sum_j |z_j| <= gamma`` (so ``P = diag(delta)``)
- ``intersection`` ``{z : z in every part}``; parts are norm balls (1, 2, inf) and
                   polyhedra in the same ``z`` space, sharing one ``P``.

The objective may be uncertain the same way (``c = c_bar + P z``); its robust value is
the worst case over ``Z``. Nominal constraints may include second-order cones
``||A x + b||_2 <= c^T x + d``. Everything round-trips through JSON; bad input raises
``InvalidTask`` with one line saying what is wrong.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from scipy.optimize import linprog

from optiforge.errors import InvalidTask

Vector = list[float]
Matrix = list[list[float]]

SET_TYPES: tuple[str, ...] = ("box", "ellipsoidal", "polyhedral", "budget", "intersection")
PART_TYPES: tuple[str, ...] = ("norm_ball", "polyhedron")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


def _matrix(rows: Matrix, what: str) -> np.ndarray:
    """Rows -> 2-D float array; raises ``InvalidTask`` for ragged or empty input."""
    if not rows or any(len(r) != len(rows[0]) for r in rows) or len(rows[0]) == 0:
        raise InvalidTask(f"{what} must be a non-empty rectangular matrix")
    return np.asarray(rows, dtype=float)


class BoxSet(_Strict):
    """``{a_bar + P z : ||z||_inf <= rho}``."""

    type: Literal["box"] = "box"
    P: Matrix
    """Perturbation matrix, ``n x k``."""
    rho: float = Field(ge=0)
    """Radius of the infinity-norm ball."""

    @model_validator(mode="after")
    def _shape(self) -> BoxSet:
        _matrix(self.P, "box set P")
        return self

    def p_matrix(self) -> np.ndarray:
        """``P`` as an ``n x k`` array."""
        return np.asarray(self.P, dtype=float)


class EllipsoidalSet(_Strict):
    """``{a_bar + P z : ||z||_2 <= rho}``."""

    type: Literal["ellipsoidal"] = "ellipsoidal"
    P: Matrix
    """Perturbation matrix, ``n x k``."""
    rho: float = Field(ge=0)
    """Radius of the Euclidean ball."""

    @model_validator(mode="after")
    def _shape(self) -> EllipsoidalSet:
        _matrix(self.P, "ellipsoidal set P")
        return self

    def p_matrix(self) -> np.ndarray:
        """``P`` as an ``n x k`` array."""
        return np.asarray(self.P, dtype=float)


class PolyhedralSet(_Strict):
    """``{a_bar + P z : D z <= d}``; the polyhedron must be non-empty."""

    type: Literal["polyhedral"] = "polyhedral"
    P: Matrix
    """Perturbation matrix, ``n x k``."""
    D: Matrix
    """Constraint matrix of the polyhedron, ``m x k``."""
    d: Vector
    """Right-hand side, length ``m``."""

    @model_validator(mode="after")
    def _shape(self) -> PolyhedralSet:
        P = _matrix(self.P, "polyhedral set P")
        D = _matrix(self.D, "polyhedral set D")
        if D.shape[1] != P.shape[1]:
            raise InvalidTask(
                f"polyhedral set: D has {D.shape[1]} columns but P has {P.shape[1]} (must match k)"
            )
        if len(self.d) != D.shape[0]:
            raise InvalidTask(
                f"polyhedral set: d has length {len(self.d)}, D has {D.shape[0]} rows"
            )
        return self

    def p_matrix(self) -> np.ndarray:
        """``P`` as an ``n x k`` array."""
        return np.asarray(self.P, dtype=float)


class BudgetSet(_Strict):
    """Bertsimas-Sim budget set: ``a_j = a_bar_j + delta_j z_j``, ``|z|<=1``, ``||z||_1<=gamma``."""

    type: Literal["budget"] = "budget"
    delta: Vector
    """Non-negative deviations, length ``n``."""
    gamma: float = Field(ge=0)
    """Budget of uncertainty: how many coefficients may deviate at once."""

    @model_validator(mode="after")
    def _shape(self) -> BudgetSet:
        if not self.delta:
            raise InvalidTask("budget set: delta must be non-empty")
        if min(self.delta) < 0:
            raise InvalidTask("budget set: delta must be non-negative")
        return self

    def p_matrix(self) -> np.ndarray:
        """``P = diag(delta)``, ``n x n``."""
        return np.diag(np.asarray(self.delta, dtype=float))


class NormBallPart(_Strict):
    """One part of an intersection: ``{z : ||z||_norm <= rho}``."""

    type: Literal["norm_ball"] = "norm_ball"
    norm: Literal[1, 2, "inf"]
    rho: float = Field(ge=0)


class PolyhedronPart(_Strict):
    """One part of an intersection: ``{z : D z <= d}`` with ``D`` ``m x k``."""

    type: Literal["polyhedron"] = "polyhedron"
    D: Matrix
    d: Vector


IntersectionPart = Annotated[NormBallPart | PolyhedronPart, Field(discriminator="type")]


class IntersectionSet(_Strict):
    """``{a_bar + P z : z in every part}`` (e.g. box ∩ ellipsoid); must be non-empty."""

    type: Literal["intersection"] = "intersection"
    P: Matrix
    """Perturbation matrix, ``n x k``; every part lives in the same ``R^k``."""
    parts: list[IntersectionPart] = Field(min_length=1)

    @model_validator(mode="after")
    def _shape(self) -> IntersectionSet:
        P = _matrix(self.P, "intersection set P")
        for j, part in enumerate(self.parts):
            if isinstance(part, PolyhedronPart):
                D = _matrix(part.D, f"intersection part {j} D")
                if D.shape[1] != P.shape[1] or len(part.d) != D.shape[0]:
                    raise InvalidTask(
                        f"intersection part {j}: D must be m x {P.shape[1]} and d of length m"
                    )
        return self

    def p_matrix(self) -> np.ndarray:
        """``P`` as an ``n x k`` array."""
        return np.asarray(self.P, dtype=float)


UncertaintySet = Annotated[
    BoxSet | EllipsoidalSet | PolyhedralSet | BudgetSet | IntersectionSet,
    Field(discriminator="type"),
]


def _polyhedral_parts_nonempty(unc: Any) -> bool:
    """Whether the polyhedral part of a set (polyhedra, inf- and 1-balls) is non-empty.

    Norm balls alone always contain 0. A 2-ball in an intersection is not checked here
    (that needs a conic solve); the verifier reports an empty inner problem instead.
    Feasibility LP over ``[z, u]`` (``k + k``): polyhedron rows on ``z``, ``|z| <= u``,
    ``sum u <= rho`` per 1-ball, ``|z| <= rho`` per inf-ball.
    """
    if isinstance(unc, PolyhedralSet):
        polys = [(unc.D, unc.d)]
        balls: list[NormBallPart] = []
    elif isinstance(unc, IntersectionSet):
        polys = [(p.D, p.d) for p in unc.parts if isinstance(p, PolyhedronPart)]
        balls = [p for p in unc.parts if isinstance(p, NormBallPart) and p.norm != 2]
    else:
        return True
    if not polys:
        return True
    k = len(polys[0][0][0])
    eye, zero = np.eye(k), np.zeros((k, k))
    rows = [np.hstack([np.asarray(D, dtype=float), np.zeros((len(D), k))]) for D, _ in polys]
    rhs = [np.asarray(d, dtype=float) for _, d in polys]
    rows += [np.hstack([eye, -eye]), np.hstack([-eye, -eye])]
    rhs.append(np.zeros(2 * k))
    for ball in balls:
        if ball.norm == 1:
            rows.append(np.concatenate([np.zeros(k), np.ones(k)])[None, :])
            rhs.append(np.array([ball.rho]))
        else:
            rows += [np.hstack([eye, zero]), np.hstack([-eye, zero])]
            rhs.append(np.full(2 * k, ball.rho))
    res = linprog(
        np.zeros(2 * k),
        A_ub=np.vstack(rows),
        b_ub=np.concatenate(rhs),
        bounds=[(None, None)] * k + [(0, None)] * k,
        method="highs",
    )
    return bool(res.status != 2)


class Objective(_Strict):
    """``c^T x + constant (+ x^T Q x)``, minimised or maximised; ``c`` may be uncertain."""

    c: Vector
    sense: Literal["min", "max"] = "min"
    constant: float = 0.0
    Q: Matrix | None = None
    """Optional convex quadratic term ``x^T Q x`` (``Q`` PSD, only with ``min``)."""
    uncertainty: UncertaintySet | None = None
    """``c = c_bar + P z``; the robust objective is the worst case over the set."""


class LinearConstraint(_Strict):
    """``a^T x (sense) b`` with ``a = a_bar + P z`` for all ``z`` in the set, if any."""

    a: Vector
    """Nominal coefficients ``a_bar``, length ``n``."""
    b: float
    sense: Literal["<=", ">=", "=="] = "<="
    uncertainty: UncertaintySet | None = None
    name: str = ""


class SOCConstraint(_Strict):
    """Nominal second-order cone ``||A x + b||_2 <= c^T x + d`` (``A`` is ``m x n``)."""

    A: Matrix
    b: Vector
    c: Vector
    d: float = 0.0
    sense: Literal["<=", ">="] = "<="
    """Only ``<=`` is convex; ``>=`` is accepted by the schema so it can be rejected clearly."""
    name: str = ""


class ROProblem(_Strict):
    """A robust linear/conic problem over ``x in R^n`` (JSON round trip via ``to_json``)."""

    name: str = ""
    n: int = Field(ge=1)
    """Number of decision variables."""
    lower: Sequence[float | None] | None = None
    """Lower bounds (``None`` entry = unbounded); ``None`` = all unbounded."""
    upper: Sequence[float | None] | None = None
    """Upper bounds (``None`` entry = unbounded); ``None`` = all unbounded."""
    integer: list[bool] | None = None
    """Integrality flags; integer variables are rejected (continuous core only)."""
    objective: Objective
    constraints: list[LinearConstraint] = Field(default_factory=list)
    soc_constraints: list[SOCConstraint] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _known_set_types(cls, data: Any) -> Any:
        # Pydantic's discriminator error is long and generic; say which constraint is wrong.
        if not isinstance(data, dict):
            return data
        places: list[tuple[str, Any]] = []
        obj = data.get("objective")
        if isinstance(obj, dict):
            places.append(("the objective", obj.get("uncertainty")))
        for i, con in enumerate(data.get("constraints") or []):
            if isinstance(con, dict):
                places.append((f"constraint {i}", con.get("uncertainty")))
        for where, unc in places:
            if unc is None or isinstance(unc, BaseModel):
                continue
            if not isinstance(unc, dict):
                raise InvalidTask(f"uncertainty of {where} must be an object with a 'type'")
            kind = unc.get("type")
            if kind not in SET_TYPES:
                raise InvalidTask(
                    f"unknown uncertainty set type {kind!r} in {where} "
                    f"(expected {'|'.join(SET_TYPES)})"
                )
            for j, part in enumerate(unc.get("parts") or [] if kind == "intersection" else []):
                ptype = part.get("type") if isinstance(part, dict) else None
                if isinstance(part, dict) and ptype not in PART_TYPES:
                    raise InvalidTask(
                        f"unknown intersection part type {ptype!r} in {where}, part {j} "
                        f"(expected {'|'.join(PART_TYPES)})"
                    )
        return data

    @model_validator(mode="after")
    def _consistent(self) -> ROProblem:
        n = self.n
        for field in ("lower", "upper", "integer"):
            vals = getattr(self, field)
            if vals is not None and len(vals) != n:
                raise InvalidTask(f"{field} has length {len(vals)}, expected n={n}")
        if self.integer is not None and any(self.integer):
            raise InvalidTask("integer variables are not supported (continuous core only)")
        lo, hi = self.bounds()
        if np.any(lo > hi):
            j = int(np.argmax(lo > hi))
            raise InvalidTask(f"variable {j}: lower bound {lo[j]} exceeds upper bound {hi[j]}")
        obj = self.objective
        if len(obj.c) != n:
            raise InvalidTask(f"objective c has length {len(obj.c)}, expected n={n}")
        if obj.Q is not None:
            Q = _matrix(obj.Q, "objective Q")
            if Q.shape != (n, n):
                raise InvalidTask(f"objective Q has shape {Q.shape}, expected ({n}, {n})")
            if obj.sense == "max":
                raise InvalidTask(
                    "non-convex nominal model: maximising the convex quadratic x^T Q x"
                )
            sym = 0.5 * (Q + Q.T)
            if np.linalg.eigvalsh(sym).min() < -1e-9 * max(1.0, np.abs(sym).max()):
                raise InvalidTask(
                    "non-convex nominal model: objective Q is not positive semidefinite"
                )
        if obj.uncertainty is not None:
            self._check_set(obj.uncertainty, "the objective")
        for i, con in enumerate(self.constraints):
            if len(con.a) != n:
                raise InvalidTask(f"constraint {i}: a has length {len(con.a)}, expected n={n}")
            if con.uncertainty is not None:
                if con.sense == "==":
                    raise InvalidTask(
                        f"constraint {i}: uncertain equality constraints are not supported "
                        "(a robust equality forces P^T x = 0; write it explicitly)"
                    )
                self._check_set(con.uncertainty, f"constraint {i}")
        for i, soc in enumerate(self.soc_constraints):
            A = _matrix(soc.A, f"SOC constraint {i} A")
            if A.shape[1] != n or len(soc.b) != A.shape[0] or len(soc.c) != n:
                raise InvalidTask(
                    f"SOC constraint {i}: A must be m x {n}, b length m, c length {n}"
                )
            if soc.sense == ">=":
                raise InvalidTask(
                    f"non-convex nominal model: SOC constraint {i} has sense '>=' "
                    "(||A x + b||_2 >= c^T x + d is not convex)"
                )
        return self

    def _check_set(self, unc: Any, where: str) -> None:
        rows = unc.p_matrix().shape[0]
        if rows != self.n:
            raise InvalidTask(f"uncertainty set of {where}: P has {rows} rows, expected n={self.n}")
        if not _polyhedral_parts_nonempty(unc):
            # an empty set makes the dual unbounded below: the row would silently vanish
            raise InvalidTask(f"uncertainty set of {where} is empty")

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Lower and upper bounds as length-``n`` arrays with ``-inf``/``inf`` for none."""
        lo = np.full(self.n, -np.inf)
        hi = np.full(self.n, np.inf)
        for j, v in enumerate(self.lower or []):
            if v is not None:
                lo[j] = v
        for j, v in enumerate(self.upper or []):
            if v is not None:
                hi[j] = v
        return lo, hi

    def set_types(self) -> list[str]:
        """Set types in use (objective first, then rows), for descriptions and stats."""
        out: list[str] = []
        if self.objective.uncertainty is not None:
            out.append(self.objective.uncertainty.type)
        out += [c.uncertainty.type for c in self.constraints if c.uncertainty is not None]
        return out

    def to_json(self, **kwargs: Any) -> str:
        """Serialize to JSON (``parse_problem`` reads it back)."""
        return self.model_dump_json(**kwargs)


def _one_line(err: ValidationError) -> str:
    first = err.errors()[0]
    loc = ".".join(str(p) for p in first["loc"]) or "<root>"
    more = f" (+{err.error_count() - 1} more)" if err.error_count() > 1 else ""
    return f"{loc}: {first['msg']}{more}"


def parse_problem(data: str | bytes | dict[str, Any]) -> ROProblem:
    """Parse an ``ROProblem`` from JSON text or a dict; raises ``InvalidTask`` on bad input."""
    if isinstance(data, str | bytes):
        try:
            data = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InvalidTask(f"malformed JSON for RO problem: {exc}") from None
    if not isinstance(data, dict):
        raise InvalidTask(f"RO problem must be a JSON object, got {type(data).__name__}")
    try:
        return ROProblem.model_validate(data)
    except ValidationError as exc:
        raise InvalidTask(f"invalid RO problem: {_one_line(exc)}") from None
