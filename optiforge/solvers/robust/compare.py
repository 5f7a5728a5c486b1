"""Does a model someone wrote match the ground truth? (the modelling step's score)

``model_differences(candidate, truth)`` compares two ``ROProblem`` objects field by field
(names ignored, bounds compared as ``-inf``/``inf`` arrays, numbers within ``rtol``
relative / ``atol`` absolute) and lists what differs; ``[]`` means the model matches. Rows
are compared in order: a statement numbers its constraints, and a model that reorders
them is reported as different (the verifier still judges its solution on its merits).
"""

from __future__ import annotations

import math
from typing import Any

from optiforge.solvers.robust.model import ROProblem

_IGNORED = frozenset({"name"})


def _diff(a: Any, b: Any, path: str, out: list[str], rtol: float, atol: float) -> None:
    if len(out) >= 20:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in _IGNORED:
                _diff(a.get(key), b.get(key), f"{path}.{key}" if path else key, out, rtol, atol)
        return
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        if len(a) != len(b):
            out.append(f"{path}: length {len(a)} vs {len(b)}")
            return
        for i, (u, v) in enumerate(zip(a, b, strict=True)):
            _diff(u, v, f"{path}[{i}]", out, rtol, atol)
        return
    num = (int, float)
    if isinstance(a, num) and isinstance(b, num) and not isinstance(a, bool | str):
        fa, fb = float(a), float(b)
        if math.isinf(fa) or math.isinf(fb):
            if fa != fb:
                out.append(f"{path}: {fa:g} vs {fb:g}")
        elif abs(fa - fb) > max(atol, rtol * max(abs(fa), abs(fb))):
            out.append(f"{path}: {fa:.9g} vs {fb:.9g}")
        return
    if a != b:
        out.append(f"{path}: {str(a)[:40]} vs {str(b)[:40]}")


def _normal_form(p: ROProblem) -> dict[str, Any]:
    d = p.model_dump(mode="json")
    lo, hi = p.bounds()
    d["lower"], d["upper"] = lo.tolist(), hi.tolist()
    d.pop("integer", None)
    return d


def model_differences(
    candidate: ROProblem, truth: ROProblem, *, rtol: float = 1e-6, atol: float = 1e-9
) -> list[str]:
    """What differs between ``candidate`` and ``truth`` (at most 20 lines; ``[]`` = match)."""
    out: list[str] = []
    if candidate.n != truth.n:
        return [f"n: {candidate.n} vs {truth.n}"]
    _diff(_normal_form(candidate), _normal_form(truth), "", out, rtol, atol)
    return out


def models_match(candidate: ROProblem, truth: ROProblem, **tol: float) -> bool:
    """``model_differences`` is empty."""
    return not model_differences(candidate, truth, **tol)


__all__ = ["model_differences", "models_match"]
