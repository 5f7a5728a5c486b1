"""The LLM-evolution baseline (OpenEvolve-style): the whole strategy is one program that
the LLM rewrites at once, evolved as a population on islands.

A strategy as a program (``render_program``): every block's source under a header line
``# === block NAME weight W``; ``parse_program`` reads such a program back (a rewrite may
change, add or drop blocks and weights). One proposal: an island (rotating), its best
program as the parent and the island's next best as an inspiration, the LLM asked for a
whole new program; offline the rewrite is the rule-based whole-strategy rewrite
(``problem.monolithic_rewrite``). Every valid child joins its parent's island (the
population keeps all, as OpenEvolve's database does); every ``migrate_every`` expansions
each island's best also joins the next island.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from optiforge.agents.kit import RunContext
from optiforge.agents.knowevo.problem import monolithic_rewrite
from optiforge.agents.knowevo.tree import Node
from optiforge.evals.suites.protein.protocol import ProteinTask
from optiforge.memory.provenance import quote_untrusted

HEADER = re.compile(r"^# === block ([A-Za-z_]\w*) weight ([-+0-9.eE]+)[ \t]*$", re.M)


def render_program(strategy: dict[str, Any]) -> str:
    """The strategy as one program (see the module doc)."""
    return "\n\n".join(
        f"# === block {b} weight {float(strategy['weights'].get(b, 1.0)):g}\n{src.strip()}"
        for b, src in strategy["blocks"].items()
    )


def parse_program(text: str) -> dict[str, Any] | None:
    """The strategy a program states; None when it has no block header."""
    heads = list(HEADER.finditer(text))
    if not heads:
        return None
    blocks: dict[str, str] = {}
    weights: dict[str, float] = {}
    for k, m in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(text)
        body = text[m.end() : end].strip()
        if "def score(" not in body:
            continue
        try:
            w = float(m.group(2))
        except ValueError:
            continue
        blocks[m.group(1)], weights[m.group(1)] = body + "\n", w
    return {"blocks": blocks, "weights": weights} if blocks else None


def island_members(nodes: list[Node], island: int) -> list[Node]:
    """The programs of ``island`` (the root belongs to every island), best ``rho`` first."""
    members = [n for n in nodes if n["id"] == 0 or island in (n.get("islands") or [])]
    return sorted(members, key=lambda n: (-(n["rho"] if n["rho"] is not None else -2), n["id"]))


def _shown(node: Node) -> str:
    program = render_program(node["strategy"])
    if node.get("untrusted"):
        return quote_untrusted(program, limit=6000)
    return f"```python\n{program}\n```"


def program_prompt(
    task: ProteinTask, parent: Node, inspiration: Node | None, n_measured: int
) -> str:
    """The LLM's request for one whole-program rewrite."""
    rho = "-" if parent["rho"] is None else f"{parent['rho']:+.3f}"
    insp = ""
    if inspiration is not None:
        r = "-" if inspiration["rho"] is None else f"{inspiration['rho']:+.3f}"
        insp = f"\n\nAnother program of the population (Spearman {r}):\n{_shown(inspiration)}"
    return (
        f"{task.description}\n\nA ranking program is a list of blocks, each under a header "
        "line `# === block NAME weight W` and defining `def score(variant, ctx)` (higher = "
        "better); the program ranks variants by the weighted sum of each block's z-normalized "
        "scores. variant has 'mutations' ([position, wild_type_aa, new_aa], 0-based) and "
        "'sequence'; ctx has 'wt', 'burial' (0..1 per site), 'ss' (H/E/C per site). `props` "
        "(SCALES: kd, eisenberg, ww, helix, sheet, charge, volume; hydrophobic(aa, scale); "
        "blosum62()) and `math` are available; no imports.\n\n"
        f"The parent program (Spearman {rho} with the fitness of {n_measured} measured "
        f"variants):\n{_shown(parent)}{insp}\n\n"
        "Rewrite the whole program to rank the variants better: change, add or drop blocks "
        "and weights. Keep the header lines. Reply with one python code block."
    )


def evolution_proposals(
    ctx: RunContext, task: ProteinTask, nodes: list[Node], expansion: int, n: int,
    islands: int, n_measured: int, rng: np.random.Generator,
) -> tuple[list[tuple[dict[str, Any], int, int]], list[str]]:  # fmt: skip
    """``n`` whole-program rewrites: ``([(strategy, parent id, island)], errors)``."""
    from optiforge.errors import BudgetExceeded, LLMError
    from optiforge.llm.structured import CODE_STOP, extract_code_block

    out: list[tuple[dict[str, Any], int, int]] = []
    errors: list[str] = []
    calls = 0
    # like the tree's edit loop: at most n tests and 2 n LLM calls (a reply without a
    # program costs a call, not a test), so both spend the same budgets
    while len(out) < n and calls < 2 * n:
        j = calls
        calls += 1
        island = (expansion * n + j) % islands
        members = island_members(nodes, island)
        parent = members[0]
        if ctx.llm is None:
            out.append((monolithic_rewrite(parent["strategy"], rng), parent["id"], island))
            continue
        inspiration = members[1] if len(members) > 1 else None
        prompt = program_prompt(task, parent, inspiration, n_measured)
        try:
            reply = ctx.llm.complete([{"role": "user", "content": prompt}], stop=CODE_STOP,
                                     temperature=0.7)  # fmt: skip
        except (LLMError, BudgetExceeded) as e:
            errors.append(f"{type(e).__name__}: {e}"[:200])
            break
        strategy = parse_program(extract_code_block(reply.text))
        if strategy is None:
            errors.append("the reply states no block (`# === block NAME weight W` + score)")
            continue
        out.append((strategy, parent["id"], island))
    return out, errors
