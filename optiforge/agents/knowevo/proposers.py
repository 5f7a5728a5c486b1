"""The backward phase's writers: evidence-guided rule edits (offline) and the LLM, which
reads the rollout evidence and rewrites one block (a localized edit).

Evidence (``evidence``): each block's Spearman correlation with the measured fitness, the
variants the strategy ranked high that measured poorly (false positives) and the reverse
(false negatives), with their substitutions and values.
"""

from __future__ import annotations

from typing import Any

from optiforge.agents.kit import RunContext
from optiforge.agents.kit.ask import code_rewrites
from optiforge.agents.knowevo.problem import Edit, additions, edits_of_block
from optiforge.agents.knowevo.tree import Node, spearman


def evidence(
    node: Node, measured: dict[str, float], heldin: list[dict[str, Any]]
) -> dict[str, Any]:
    """What the rollouts say about ``node``'s strategy (see the module doc)."""
    ids = sorted(int(i) for i in measured)
    scores = node["scores"]
    by_score = sorted(ids, key=lambda i: -scores[i])
    vals = sorted(measured[str(i)] for i in ids)
    median, top = vals[len(vals) // 2], vals[int(0.8 * (len(vals) - 1))]
    half = len(by_score) // 2
    fp = [i for i in by_score[: max(3, len(by_score) // 5)] if measured[str(i)] < median][:5]
    fn = [i for i in by_score[half:] if measured[str(i)] >= top][:5]

    def show(i: int) -> dict[str, Any]:
        return {"mutations": heldin[i]["mutations"], "fitness": round(measured[str(i)], 3)}

    return {
        "block_rho": {b: spearman(z, measured) for b, z in node["block_z"].items()},
        "false_positives": [show(i) for i in fp],
        "false_negatives": [show(i) for i in fn],
    }


def guided_edits(strategy: dict[str, Any], ev: dict[str, Any]) -> list[Edit]:
    """Every localized edit, each block's reweights ordered by its correlation with the
    measured fitness, plus the alternative mechanisms to swap in."""
    out: list[Edit] = []
    for block in strategy["blocks"]:
        rho = ev["block_rho"].get(block) or 0.0
        w = float(strategy["weights"].get(block, 1.0))
        out += edits_of_block(strategy, block, sign=rho * (1 if w >= 0 else -1))
    return out + additions(strategy)


def target_block(strategy: dict[str, Any], ev: dict[str, Any]) -> str:
    """The block the evidence blames most: the lowest correlation with fitness in the
    direction of its weight."""

    def blame(b: str) -> float:
        w = float(strategy["weights"].get(b, 1.0))
        return (ev["block_rho"].get(b) or 0.0) * (1 if w >= 0 else -1) * min(abs(w), 1.0)

    return min(strategy["blocks"], key=blame)


def llm_edits(
    strategy: dict[str, Any], ev: dict[str, Any], ctx: RunContext, task: Any, n: int
) -> tuple[list[Edit], list[str]]:
    """``n`` rewrites of the blamed block by the LLM: ``(edits, errors)``."""
    assert ctx.llm is not None
    block = target_block(strategy, ev)
    weights = ", ".join(f"{b} {w:g}" for b, w in strategy["weights"].items())
    rhos = ", ".join(f"{b} {'-' if r is None else f'{r:+.2f}'}" for b, r in ev["block_rho"].items())
    prompt = (
        f"{task.description}\n\nA ranking strategy sums z-normalized block scores with weights "
        f"({weights}). Each block's Spearman correlation with the measured fitness so far: {rhos}.\n"
        f"Ranked high but measured poorly: {ev['false_positives']}\n"
        f"Ranked low but measured well: {ev['false_negatives']}\n\n"
        f"Rewrite the block `{block}` so it captures the mechanism better. Current source:\n"
        f"```python\n{strategy['blocks'][block].strip()}\n```\n"
        "Keep `def score(variant, ctx)` returning a float (higher = better). variant has "
        "'mutations' ([position, wild_type_aa, new_aa], 0-based) and 'sequence'; ctx has 'wt', "
        "'burial' (0..1 per site), 'ss' (H/E/C per site). `props` (SCALES: kd, eisenberg, ww, "
        "helix, sheet, charge, volume; hydrophobic(aa, scale); blosum62()) and `math` are "
        "available; no imports. Reply with one python code block."
    )
    codes, errors = code_rewrites(ctx, prompt, n, "score(variant, ctx)")
    edits: list[Edit] = []
    for code in codes:
        new = {**strategy, "blocks": {**strategy["blocks"], block: code},
               "weights": dict(strategy["weights"])}  # fmt: skip
        edits.append((new, block, f"rewrite {block} (LLM)"))
    return edits, errors
