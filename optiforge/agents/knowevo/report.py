"""Report lines for knowevo evals: tree sizes and how the final strategies were reached."""

from __future__ import annotations

from collections import Counter
from typing import Any


def summary_notes(rows: list[dict[str, Any]]) -> list[str]:
    """Per method: mean tree size, and which kinds of edit the final strategies carry."""
    out = []
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        extra = r.get("extra") or {}
        if "nodes" in extra:
            by.setdefault(str(r.get("method")), []).append(extra)
    for method, extras in sorted(by.items()):
        kinds: Counter[str] = Counter()
        for e in extras:
            kinds.update(str(p).split(" ")[0] for p in e.get("final_path") or [])
        size = sum(e["nodes"] for e in extras) / len(extras)
        depth = sum(len(e.get("final_path") or []) for e in extras) / len(extras)
        edits = ", ".join(f"{k} x{v}" for k, v in kinds.most_common()) or "none"
        out.append(f"{method}: {size:.1f} strategies per tree, final strategy {depth:.1f} edits "
                   f"from the root ({edits})")  # fmt: skip
    return out
