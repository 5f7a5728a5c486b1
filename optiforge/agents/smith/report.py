"""Report lines for smith evals: tools built per episode and the build axes' means."""

from __future__ import annotations

from typing import Any


def summary_notes(rows: list[dict[str, Any]]) -> list[str]:
    out = []
    by: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        extra = r.get("extra") or {}
        if "built" in extra:
            by.setdefault(str(r.get("method")), []).append(extra)
    for method, extras in sorted(by.items()):
        built = sum(e["built"] for e in extras)
        tasks = sum(e.get("build_tasks") or 0 for e in extras)
        axes = [f"{ax} {sum(e[f'build_{ax}'] for e in extras) / len(extras):.2f}"
                for ax in ("schema", "code", "outcome") if all(f"build_{ax}" in e for e in extras)]  # fmt: skip
        line = f"{method}: {built} of {tasks} build tasks produced a validated tool"
        out.append(line + (f"; mean build-attempt rewards: {', '.join(axes)}" if axes else ""))
    return out
