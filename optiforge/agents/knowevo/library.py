"""Expertise blocks across runs: accepted blocks are stored in memory (``KnowledgeBlock``
records with their parent block as lineage and their measured effect), and a later run
reads them back and seeds its tree with them.

A record's ``metrics``: ``weight`` (in its strategy), ``effect`` (the Spearman gain over
its parent on the selection split when it was accepted; 0 for a root block) and ``rho``
(its strategy's Spearman on all measurements then). Recall (``recall_blocks``): records
of ``knowevo`` for the same property (tag), made before this run started, with a positive
effect, one per distinct (title, source, weight), best effect first. Their text is shown
to an LLM quoted unless its provenance is trusted (a block an LLM wrote is ``candidate``).
"""

from __future__ import annotations

from typing import Any

from optiforge.agents.kit import RunContext
from optiforge.agents.kit.recall import run_started
from optiforge.agents.knowevo.tree import Node
from optiforge.evals.suites.protein.protocol import ProteinTask
from optiforge.memory.provenance import TRUSTED


def remember(ctx: RunContext, task: ProteinTask, node: Node, blocks: list[str], parent: Node | None,
             effect: float = 0.0) -> dict[str, str]:  # fmt: skip
    """Store ``blocks`` of ``node`` as ``KnowledgeBlock`` records (lineage: the same block
    of the parent); the node's block-name -> record-id map."""
    ids = dict(parent["block_ids"]) if parent else {}
    if ctx.memory is None:
        return ids
    from optiforge.memory.records import KnowledgeBlock

    untrusted = set(node.get("untrusted") or [])
    for b in blocks:
        parents = [ids[b]] if b in ids else []
        kb = KnowledgeBlock(
            agent="knowevo", title=b, content=node["strategy"]["blocks"][b],
            description=node["edit"], parent_ids=parents,
            provenance="candidate" if b in untrusted else "agent",
            metrics={"weight": float(node["strategy"]["weights"].get(b, 1.0)),
                     "effect": float(round(effect, 5)), "rho": float(node.get("rho") or 0.0)},
            tags=[task.suite, task.name, str(task.landscape.property)],
        )  # fmt: skip
        ids[b] = ctx.memory.add_block(kb, parents)
    return ids


def recall_blocks(
    ctx: RunContext, task: ProteinTask, root: dict[str, Any], k: int
) -> list[dict[str, Any]]:
    """Up to ``k`` blocks of earlier runs to seed the tree with (see the module doc)."""
    store = ctx.memory
    if store is None or k <= 0:
        return []
    prop = str(task.landscape.property)
    cutoff = run_started(ctx)
    try:
        hits = store.search(prop, 2000, kind="block", agent="knowevo", tags=[prop],
                            method="lexical")  # fmt: skip
    except Exception as e:  # noqa: BLE001 - memory is advisory; a broken store must not stop a run
        ctx.tracer.event("memory_recall", ids=[], error=f"{type(e).__name__}: {e}"[:300])
        return []
    from optiforge.memory.records import KnowledgeBlock

    seen: set[tuple[str, str, float]] = set()
    found: list[dict[str, Any]] = []
    for h in hits:
        rec = h.record
        if not isinstance(rec, KnowledgeBlock):
            continue
        effect = float(rec.metrics.get("effect", 0.0))
        if effect <= 0 or (cutoff is not None and rec.created_at >= cutoff):
            continue
        weight = float(rec.metrics.get("weight", 1.0))
        key = (rec.title, rec.content, weight)
        same_as_root = (root["blocks"].get(rec.title) == rec.content
                        and root["weights"].get(rec.title) == weight)  # fmt: skip
        if key in seen or same_as_root:
            continue
        seen.add(key)
        found.append({"id": rec.id, "title": key[0], "content": key[1], "weight": weight,
                      "effect": effect, "trusted": rec.provenance in TRUSTED})  # fmt: skip
    found.sort(key=lambda r: (-r["effect"], r["id"]))
    found = found[:k]
    ctx.tracer.event("memory_recall", ids=[r["id"] for r in found], record_kind="block",
                     effects=[r["effect"] for r in found])  # fmt: skip
    return found
