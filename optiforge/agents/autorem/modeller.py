"""AutoREM's modelling step: from a natural-language statement to the nominal model (``ROProblem``).

Text-only tasks (the ``app`` splits) give the agent words, never the problem JSON. Before
it reformulates, the agent writes the model it reads in the text as an ``ROProblem``
(the schema of the candidate I/O protocol): the LLM answers it as structured output
(``model_messages`` + ``model_with_llm``; schema violations are re-asked by the LLM
layer). The model it wrote is what the counterpart program reads as ``instance.json``;
the verifier judges the program's answer against the hidden ground truth, so a wrong
model costs the instance.

Offline the modeller is ``reference_modeller``: a parser of the model sheet's fixed
grammar (``optiforge.evals.suites.autoro.text``). It reads the TEXT, never the hidden JSON
(a test feeds it the text alone). Because the sheet is template-generated, offline
modelling accuracy measures the round trip of that grammar, not language understanding:
it is labelled ``reference-modeller`` everywhere it is reported.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pydantic import model_validator

from optiforge.errors import InvalidTask, StructuredOutputError
from optiforge.solvers.robust.model import ROProblem

if TYPE_CHECKING:
    from optiforge.llm.base import LLM
    from optiforge.llm.types import Completion

SHEET_HEADER = "Model sheet (the data of the model, in words):"
"""The first line of the sheet (``evals.suites.autoro.text.SHEET_HEADER``; a test pins them equal)."""

MODEL_SYSTEM_PROMPT = (
    "You are an expert operations-research modeller. Read the problem statement and write "
    "its nominal model, WITH its uncertainty sets, as one JSON object of the ROProblem "
    "schema: n, lower, upper, objective {c, sense, constant, Q, uncertainty}, constraints "
    "[{a, b, sense, uncertainty, name}], soc_constraints. Variables keep the order the "
    "statement gives (x1 is index 0). An uncertain row a^T x (sense) b with a = a_bar + P z "
    "lists a_bar as 'a' and its set as 'uncertainty' (P is n x k: one row per variable); "
    "set types: box {P, rho}, ellipsoidal {P, rho}, polyhedral {P, D, d}, budget {delta, "
    'gamma}, intersection {P, parts: [{type: norm_ball, norm: 1|2|"inf", rho} | {type: '
    "polyhedron, D, d}]}. Reply with the JSON object only."
)


class ModelReply(ROProblem):
    """The modelling step's output schema: an ``ROProblem`` whose problems are re-askable.

    ``ROProblem`` raises ``InvalidTask`` on an inconsistent model (wrong lengths, empty
    set); here it becomes a validation error, so the LLM layer re-asks with the message.
    """

    @model_validator(mode="wrap")
    @classmethod
    def _invalid_as_value_error(cls, data: Any, handler: Any) -> Any:
        try:
            return handler(data)
        except InvalidTask as exc:
            raise ValueError(str(exc)) from None


def model_messages(text: str, lessons_block: str = "") -> list[dict[str, Any]]:
    """The modelling prompt: the statement (and lessons about modelling, if any)."""
    user = f"Problem statement:\n{text}"
    if lessons_block:
        user += "\n\n" + lessons_block
    return [
        {"role": "system", "content": MODEL_SYSTEM_PROMPT},
        {"role": "user", "content": user},
    ]


def model_with_llm(llm: LLM, messages: list[dict[str, Any]]) -> tuple[ROProblem, Completion]:
    """One structured-output call; returns the model and the reply (for calls/tokens).

    Raises ``StructuredOutputError`` when the reply does not parse after the re-asks.
    """
    reply = llm.complete(messages, schema=ModelReply)
    if not isinstance(reply.parsed, ROProblem):
        raise StructuredOutputError(f"{llm.model}: modelling reply did not parse into ROProblem")
    return ROProblem.model_validate(reply.parsed.model_dump()), reply


# ----------------------------------------------------------------------------- reference

_UNUM = r"(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?"
_NUM = r"[-+]?" + _UNUM


def _expr(text: str, n: int, var: str = "x") -> tuple[list[float], float]:
    """``2 x1 - x3 + 4`` -> coefficients (length ``n``) and the constant."""
    coefs = [0.0] * n
    const = 0.0
    text = text.strip()
    if text == "0":
        return coefs, const
    for term in text.replace(" - ", " + -").split(" + "):
        m = re.fullmatch(rf"(-?)\s*({_UNUM})?\s*(?:{var}(\d+))?", term.strip())
        if m is None or (m.group(2) is None and m.group(3) is None):
            raise InvalidTask(f"model sheet: cannot read the term {term!r}")
        val = float(m.group(2)) if m.group(2) else 1.0
        val = -val if m.group(1) else val
        if m.group(3) is None:
            const += val
            continue
        j = int(m.group(3)) - 1
        if not 0 <= j < n:
            raise InvalidTask(f"model sheet: {var}{j + 1} is out of range (size {n})")
        coefs[j] += val
    return coefs, const


def _norm(tok: str) -> Any:
    return "inf" if tok == "inf" else int(tok)


def _polyhedron(body: str, k: int) -> tuple[list[list[float]], list[float]]:
    D: list[list[float]] = []
    d: list[float] = []
    for ineq in body.split("; "):
        lhs, rhs = ineq.rsplit(" <= ", 1)
        row, c = _expr(lhs, k, "z")
        D.append(row)
        d.append(float(rhs) - c)
    return D, d


def _uncertainty(line: str, n: int) -> dict[str, Any]:
    line = line.strip()
    if line.startswith("Budget uncertainty"):
        m = re.search(r"in either direction \((.*?); the others are certain\)", line)
        g = re.search(rf"Gamma = ({_NUM})", line)
        if m is None or g is None:
            raise InvalidTask("model sheet: unreadable budget uncertainty")
        delta = [0.0] * n
        for dev in filter(None, (s.strip() for s in m.group(1).split(";"))):
            dm = re.fullmatch(rf"x(\d+) by up to ({_NUM})", dev)
            if dm is None:
                raise InvalidTask(f"model sheet: unreadable deviation {dev!r}")
            delta[int(dm.group(1)) - 1] = float(dm.group(2))
        return {"type": "budget", "delta": delta, "gamma": float(g.group(1))}
    m = re.search(
        r"k = (\d+); (.*?)\. z lies in the (box|ellipsoid|polyhedron|intersection)(.*)$", line
    )
    if m is None:
        raise InvalidTask(f"model sheet: unreadable uncertainty {line[:80]!r}")
    k = int(m.group(1))
    P = [[0.0] * k for _ in range(n)]
    if m.group(2) != "no coefficient moves":
        for mv in m.group(2).split("; "):
            mm = re.fullmatch(r"x(\d+) moves by (.*)", mv.strip())
            if mm is None:
                raise InvalidTask(f"model sheet: unreadable perturbation {mv!r}")
            P[int(mm.group(1)) - 1] = _expr(mm.group(2), k, "z")[0]
    kind, rest = m.group(3), m.group(4)
    if kind == "box":
        rho = re.search(rf"\|z_i\| <= ({_NUM})", rest)
        assert rho is not None
        return {"type": "box", "P": P, "rho": float(rho.group(1))}
    if kind == "ellipsoid":
        rho = re.search(rf"\|\|z\|\|_2 <= ({_NUM})", rest)
        assert rho is not None
        return {"type": "ellipsoidal", "P": P, "rho": float(rho.group(1))}
    if kind == "polyhedron":
        body = re.search(r"\{(.*)\}", rest)
        assert body is not None
        D, d = _polyhedron(body.group(1), k)
        return {"type": "polyhedral", "P": P, "D": D, "d": d}
    parts: list[dict[str, Any]] = []
    for pm in re.finditer(
        rf"the (1|2|inf)-norm ball \|\|z\|\|_\S+ <= ({_NUM})|the polyhedron \{{([^}}]*)\}}", rest
    ):
        if pm.group(1):
            parts.append(
                {"type": "norm_ball", "norm": _norm(pm.group(1)), "rho": float(pm.group(2))}
            )
        else:
            D, d = _polyhedron(pm.group(3), k)
            parts.append({"type": "polyhedron", "D": D, "d": d})
    return {"type": "intersection", "P": P, "parts": parts}


def _bounds(line: str, n: int) -> tuple[list[float | None], list[float | None]]:
    lower: list[float | None] = [None] * n
    upper: list[float | None] = [None] * n
    for group in line.removeprefix("Bounds: ").rstrip(".").split("; "):
        m = re.fullmatch(r"x(\d+)(?: to x(\d+))? (.*)", group.strip())
        if m is None:
            raise InvalidTask(f"model sheet: unreadable bounds {group!r}")
        a = int(m.group(1)) - 1
        b = int(m.group(2)) - 1 if m.group(2) else a
        phrase = m.group(3)
        lo: float | None = None
        hi: float | None = None
        if (pm := re.fullmatch(rf"between ({_NUM}) and ({_NUM})", phrase)) is not None:
            lo, hi = float(pm.group(1)), float(pm.group(2))
        elif (pm := re.fullmatch(rf"fixed at ({_NUM})", phrase)) is not None:
            lo = hi = float(pm.group(1))
        elif (pm := re.fullmatch(rf"at least ({_NUM})", phrase)) is not None:
            lo = float(pm.group(1))
        elif (pm := re.fullmatch(rf"at most ({_NUM})", phrase)) is not None:
            hi = float(pm.group(1))
        elif phrase != "free":
            raise InvalidTask(f"model sheet: unreadable bound {phrase!r}")
        for j in range(a, b + 1):
            lower[j], upper[j] = lo, hi
    return lower, upper


def reference_modeller(text: str) -> ROProblem:
    """The offline modeller: parse the model sheet in ``text`` into an ``ROProblem``.

    It reads the words only (no JSON anywhere); text without a model sheet, or a sheet it
    cannot read, raises ``InvalidTask``.
    """
    if SHEET_HEADER not in text:
        raise InvalidTask(
            "no model sheet in the statement (the reference modeller reads only sheets)"
        )
    lines = text.split(SHEET_HEADER, 1)[1].strip().splitlines()
    n = 0
    lower: list[float | None] = []
    upper: list[float | None] = []
    objective: dict[str, Any] = {}
    constraints: list[dict[str, Any]] = []
    socs: list[dict[str, Any]] = []
    last: dict[str, Any] | None = None
    for raw in lines:
        line = raw.rstrip()
        if line.startswith("Decision variables:"):
            m = re.search(r"\(n = (\d+),", line)
            if m is None:
                raise InvalidTask("model sheet: no variable count")
            n = int(m.group(1))
        elif line.startswith("Bounds: "):
            lower, upper = _bounds(line, n)
        elif line.startswith("Objective: "):
            m = re.fullmatch(
                r"Objective: (minimise|maximise) (.*?)(?:, plus the quadratic term x\^T Q x with Q given by rows \((.*)\))?\.",
                line,
            )
            if m is None:
                raise InvalidTask("model sheet: unreadable objective")
            c, const = _expr(m.group(2), n)
            objective = {
                "c": c,
                "constant": const,
                "sense": "min" if m.group(1) == "minimise" else "max",
            }
            if m.group(3):
                objective["Q"] = [
                    [float(v) for v in row.split(": ", 1)[1].split(", ")]
                    for row in m.group(3).split("; ")
                ]
            last = objective
        elif line.startswith("Constraint "):
            m = re.fullmatch(rf"Constraint \d+(?: \((.*?)\))?: (.*) (<=|>=|==) ({_NUM})\.", line)
            if m is None:
                raise InvalidTask(f"model sheet: unreadable constraint {line[:80]!r}")
            a, const = _expr(m.group(2), n)
            con = {
                "a": a,
                "b": float(m.group(4)) - const,
                "sense": m.group(3),
                "name": m.group(1) or "",
            }
            constraints.append(con)
            last = con
        elif line.startswith("Cone constraint "):
            m = re.fullmatch(
                r"Cone constraint \d+: the 2-norm of the vector \((.*)\) is at most (.*)\.", line
            )
            if m is None:
                raise InvalidTask(f"model sheet: unreadable cone {line[:80]!r}")
            rows = [_expr(comp, n) for comp in m.group(1).split("; ")]
            cc, d = _expr(m.group(2), n)
            socs.append({"A": [r for r, _ in rows], "b": [b for _, b in rows], "c": cc, "d": d})
        elif line.startswith("  ") and last is not None:
            last["uncertainty"] = _uncertainty(line, n)
    if n == 0 or not objective:
        raise InvalidTask("model sheet: no variables or no objective")
    from optiforge.solvers.robust.model import parse_problem

    return parse_problem(
        {
            "n": n,
            "lower": lower or None,
            "upper": upper or None,
            "objective": objective,
            "constraints": constraints,
            "soc_constraints": socs,
        }
    )
