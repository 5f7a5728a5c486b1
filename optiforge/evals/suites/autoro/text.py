"""A robust problem written as words: the model sheet an agent reads instead of the JSON.

``problem_text(problem)`` renders an ``ROProblem`` as a modeller's statement: the decision
variables in their order, their bounds, the objective, every constraint as an equation
in ``x1 .. xn``, and each uncertainty (which coefficients move with which ``z_j``, and the
set ``z`` ranges over) in words, with exactly the numbers a modeller needs and nothing
else. Text-only tasks (the ``app`` splits) show this text and never the problem JSON; the
verifier alone reads the JSON.

The sheet is template-generated, so it has a fixed grammar: AutoREM's reference modeller
(``optiforge.agents.autorem.modeller``) parses it back (a test pins the round trip on every
application and on generated instances). Numbers are printed with 12 significant digits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from optiforge.solvers.robust.model import (
    BoxSet,
    BudgetSet,
    EllipsoidalSet,
    IntersectionSet,
    NormBallPart,
    PolyhedralSet,
    ROProblem,
)

SHEET_HEADER = "Model sheet (the data of the model, in words):"


def num(v: float) -> str:
    """A number as the sheet prints it (12 significant digits, no trailing zeros)."""
    v = float(v)
    if v == 0:
        return "0"
    return format(v, ".12g")


def linear_text(coefs: Sequence[float], var: str = "x", constant: float = 0.0) -> str:
    """``2 x1 - x3 + 4`` (zero terms omitted; ``0`` when everything is zero)."""
    parts: list[str] = []
    for j, c in enumerate(coefs):
        c = float(c)
        if c == 0:
            continue
        mag = "" if abs(c) == 1 else num(abs(c)) + " "
        sign = "-" if c < 0 else "+"
        parts.append(f"{sign} {mag}{var}{j + 1}")
    if constant:
        parts.append(f"{'-' if constant < 0 else '+'} {num(abs(constant))}")
    if not parts:
        return "0"
    text = " ".join(parts)
    return text[2:] if text.startswith("+ ") else "-" + text[2:]


def _bound_phrase(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        if lo == hi:
            return f"fixed at {num(lo)}"
        return f"between {num(lo)} and {num(hi)}"
    if lo is not None:
        return f"at least {num(lo)}"
    if hi is not None:
        return f"at most {num(hi)}"
    return "free"


def _bounds_text(problem: ROProblem) -> str:
    n = problem.n
    lower = list(problem.lower) if problem.lower is not None else [None] * n
    upper = list(problem.upper) if problem.upper is not None else [None] * n
    phrases = [_bound_phrase(lower[j], upper[j]) for j in range(n)]
    groups: list[str] = []
    j = 0
    while j < n:
        end = j
        while end + 1 < n and phrases[end + 1] == phrases[j]:
            end += 1
        who = f"x{j + 1}" if end == j else f"x{j + 1} to x{end + 1}"
        groups.append(f"{who} {phrases[j]}")
        j = end + 1
    return "Bounds: " + "; ".join(groups) + "."


def _perturbation_text(P: np.ndarray) -> str:
    """``x4 moves by -10 z1; x1 moves by 0.05 z1 + 0.1 z2`` (rows of ``P``, zero rows left out)."""
    rows = [
        f"x{i + 1} moves by {linear_text(P[i].tolist(), 'z')}"
        for i in range(P.shape[0])
        if np.any(P[i] != 0)
    ]
    return "; ".join(rows) if rows else "no coefficient moves"


def _polyhedron_text(D: Sequence[Sequence[float]], d: Sequence[float]) -> str:
    return "; ".join(
        f"{linear_text(list(row), 'z')} <= {num(rhs)}" for row, rhs in zip(D, d, strict=True)
    )


def _part_text(part: Any) -> str:
    if isinstance(part, NormBallPart):
        return f"the {part.norm}-norm ball ||z||_{part.norm} <= {num(part.rho)}"
    return f"the polyhedron {{{_polyhedron_text(part.D, part.d)}}}"


def uncertainty_text(unc: Any, what: str) -> str:
    """The uncertainty of a row (``what`` = "coefficient") or the objective, in words."""
    if isinstance(unc, BudgetSet):
        devs = "; ".join(
            f"x{j + 1} by up to {num(dv)}" for j, dv in enumerate(unc.delta) if dv != 0
        )
        return (
            f"Budget uncertainty (Bertsimas-Sim): each {what} may deviate from its nominal "
            f"value in either direction ({devs}; the others are certain), with at most "
            f"Gamma = {num(unc.gamma)} of them at their extremes at once (fractional "
            "deviations count proportionally): a_j = nominal_j + delta_j z_j, |z_j| <= 1, "
            f"sum_j |z_j| <= {num(unc.gamma)}."
        )
    P = unc.p_matrix()
    k = P.shape[1]
    zs = ", ".join(f"z{i + 1}" for i in range(k)) if k <= 3 else f"z1, ..., z{k}"
    head = (
        f"Uncertain {what}s: {what} = nominal + P z with z = ({zs}), k = {k}; "
        f"{_perturbation_text(P)}. "
    )
    if isinstance(unc, BoxSet):
        return head + f"z lies in the box |z_i| <= {num(unc.rho)} for every i."
    if isinstance(unc, EllipsoidalSet):
        return head + f"z lies in the ellipsoid ||z||_2 <= {num(unc.rho)}."
    if isinstance(unc, PolyhedralSet):
        return head + f"z lies in the polyhedron {{{_polyhedron_text(unc.D, unc.d)}}}."
    if isinstance(unc, IntersectionSet):
        parts = " and ".join(_part_text(p) for p in unc.parts)
        return head + f"z lies in the intersection of {parts}."
    raise TypeError(f"no text for uncertainty {type(unc).__name__}")


def problem_text(problem: ROProblem) -> str:
    """The model sheet of ``problem`` (see the module docstring)."""
    n = problem.n
    names = ", ".join(f"x{j + 1}" for j in range(n))
    lines = [
        SHEET_HEADER,
        f"Decision variables: {names} (n = {n}, continuous, in this order).",
        _bounds_text(problem),
    ]
    obj = problem.objective
    goal = "minimise" if obj.sense == "min" else "maximise"
    line = f"Objective: {goal} {linear_text(obj.c, 'x', obj.constant)}"
    if obj.Q is not None:
        Q = np.asarray(obj.Q, dtype=float)
        rows = "; ".join(f"row {i + 1}: {', '.join(num(v) for v in Q[i])}" for i in range(n))
        line += f", plus the quadratic term x^T Q x with Q given by rows ({rows})"
    lines.append(line + ".")
    if obj.uncertainty is not None:
        lines.append(
            "  " + uncertainty_text(obj.uncertainty, "objective coefficient")
            + " The objective is valued at its worst case over this set."
        )  # fmt: skip
    for i, con in enumerate(problem.constraints):
        label = f" ({con.name})" if con.name else ""
        lines.append(f"Constraint {i + 1}{label}: {linear_text(con.a)} {con.sense} {num(con.b)}.")
        if con.uncertainty is not None:
            lines.append(
                "  " + uncertainty_text(con.uncertainty, "coefficient")
                + " The constraint must hold for every such realisation."
            )  # fmt: skip
    for i, soc in enumerate(problem.soc_constraints):
        A = np.asarray(soc.A, dtype=float)
        comps = "; ".join(
            linear_text(A[r].tolist(), "x", float(soc.b[r])) for r in range(A.shape[0])
        )
        lines.append(
            f"Cone constraint {i + 1}: the 2-norm of the vector ({comps}) is at most "
            f"{linear_text(soc.c, 'x', soc.d)}."
        )
    return "\n".join(lines)
