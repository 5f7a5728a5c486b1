"""Report lines for epb evals: portfolio sizes and what evolution accepted."""

from __future__ import annotations

from collections import Counter
from typing import Any


def summary_notes(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        extra = r.get("extra") or {}
        if "portfolio" in extra:
            by.setdefault(str(r.get("method")), []).append(extra)
    for method, extras in sorted(by.items()):
        size = sum(len(e["portfolio"]) for e in extras) / len(extras)
        kinds: Counter[str] = Counter(
            str(a).split(" ")[0] for e in extras for a in e.get("accepted") or []
        )
        out.append(f"{method}: {size:.1f} programs per portfolio; accepted: "
                   + (", ".join(f"{k} x{v}" for k, v in kinds.most_common()) or "none"))  # fmt: skip
    return out
