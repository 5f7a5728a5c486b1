"""Memory that flows: experience of earlier runs, recalled into every LLM proposer's prompt.

At the start of a search (round 0) the loop recalls up to ``SearchConfig.memory_recall``
lessons for the task from the run's memory: lessons of the same task signature and of
other tasks of the same suite, written by any agent (a pipeline's Kernel Discovery node
reads what an earlier node learned), ranked by embedding similarity to the task (lexical
where no embedding model is installed), distilled lessons (a pipeline's ``reflect`` and
``diagnose`` steps) first. Only records made before this run started count
(its own lessons would otherwise change its prompts between rounds and between a run and
its resume). The recalled ids go to the event log (``memory_recall``) and into the
checkpointed search state, so a resumed run shows the same lessons.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterable
from typing import Any

from optiforge.agents.kit.context import RunContext
from optiforge.memory.provenance import TRUSTED, render_lesson

DISTILLED = {"reflection", "diagnosis"}
"""Tags of lessons written to be reused (the ``reflect`` and ``diagnose`` steps)."""


def run_started(ctx: RunContext) -> _dt.datetime | None:
    """When this run started (its manifest's ``started_at``: the same on every resume)."""
    if ctx.run_dir is None:
        return None
    try:
        raw = json.loads((ctx.run_dir / "manifest.json").read_text()).get("started_at")
        return _dt.datetime.fromisoformat(raw) if raw else None
    except (OSError, ValueError):
        return None


def recall(
    ctx: RunContext, task: Any, k: int = 4, *, provenance: Iterable[str] | None = None
) -> list[dict[str, Any]]:
    """Up to ``k`` lessons for ``task`` from ``ctx.memory`` (see the module doc), logged.

    Args:
        provenance: only lessons of these provenances (None: any; untrusted ones are
            shown quoted by ``lessons_block``).
    """
    store = ctx.memory
    if store is None or k <= 0:
        return []
    suite = str(getattr(task, "suite", ""))
    cutoff = run_started(ctx)
    try:
        provs = None if provenance is None else sorted(set(provenance))
        if not store.experiences(limit=1, provenance=provs):
            return []  # nothing to recall: no embedding model load
        query = f"{suite} {getattr(task, 'description', '')}"
        hits = store.search(query, 8 * k, kind="experience", provenance=provs)
    except Exception as e:  # noqa: BLE001 - memory is advisory; a broken store must not stop a run
        ctx.tracer.event("memory_recall", ids=[], error=f"{type(e).__name__}: {e}"[:300])
        return []
    out: list[dict[str, Any]] = []
    from optiforge.memory.records import Experience

    for h in hits:
        rec = h.record
        if not isinstance(rec, Experience):
            continue
        sig = rec.task_signature
        if not (sig == suite or sig.startswith(suite + "/")):
            continue
        if cutoff is not None and rec.created_at >= cutoff:
            continue
        out.append({"id": rec.id, "agent": rec.agent, "task": sig, "lesson": rec.lesson[:400],
                    "provenance": rec.provenance, "tags": list(rec.tags),
                    "score": round(float(h.score), 4)})  # fmt: skip
    # distilled lessons (a pipeline's reflect/diagnose steps) first, then by similarity
    out.sort(key=lambda r: not (DISTILLED & set(r["tags"])))
    out = out[:k]
    ctx.tracer.event("memory_recall", ids=[r["id"] for r in out], agents=sorted({r["agent"] for r in out}),
                     method=hits[0].method if hits else None, query=query[:200])  # fmt: skip
    return out


def render_recalled(r: dict[str, Any], limit: int | None = None) -> str:
    """One recalled lesson as a prompt line: ``- (agent) text`` when its provenance is
    trusted, else the agent and a labelled, escaped block (``memory.provenance``). A
    recall checkpointed before provenance existed has none: shown as ``unknown``."""
    prov = r.get("provenance")
    text = render_lesson(str(r["lesson"]), prov, limit=limit)
    # a quoted block starts on its own line, under its label
    return f"- ({r['agent']}) " + (text if prov in TRUSTED else "lesson quoted below\n" + text)


def lessons_block(ctx: RunContext) -> str:
    """The recalled lessons as a prompt section ("" when none were recalled)."""
    if not ctx.recalled:
        return ""
    lines = "\n".join(render_recalled(r) for r in ctx.recalled)
    return f"\n\nLessons from earlier runs (memory):\n{lines}"
