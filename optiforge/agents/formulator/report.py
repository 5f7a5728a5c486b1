"""Report lines for formulator evals: which optimizers the formulations chose."""

from __future__ import annotations

from collections import Counter
from typing import Any


def summary_notes(rows: list[dict[str, Any]]) -> list[str]:
    """One line per method: the optimizers its formulations named."""
    out = []
    by_method: dict[str, Counter[str]] = {}
    for r in rows:
        form = (r.get("extra") or {}).get("formulation") or {}
        if form.get("method"):
            by_method.setdefault(str(r.get("method")), Counter())[str(form["method"])] += 1
    for method, counts in sorted(by_method.items()):
        out.append(f"{method} chose: " + ", ".join(f"{k} x{v}" for k, v in counts.most_common()))
    return out
