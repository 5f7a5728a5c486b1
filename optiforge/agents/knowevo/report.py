"""What a knowevo run reports: its ``AgentOutcome`` (with ``KnowEvoExtra``) from the final
state, the tree files in the run directory, and the report lines of knowevo evals (tree
sizes and how the final strategies were reached)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from pydantic import BaseModel, ConfigDict

from optiforge.agents.kit import RunContext
from optiforge.agents.knowevo.nodes import (
    best_node,
    context_of,
    first_llm_budget,
    total_measurements,
)
from optiforge.agents.knowevo.tree import render
from optiforge.agents.spec import AgentOutcome

TREE = "tree.json"


class KnowEvoExtra(BaseModel):
    """``AgentOutcome.extra`` of knowevo (and of its baselines that run it)."""

    model_config = ConfigDict(extra="forbid")

    mode: str
    allocation: str
    backward: bool
    nodes: int
    """Strategies in the tree."""
    final_node: int
    final_rho: float | None
    """The final strategy's Spearman correlation with the measured fitness."""
    final_path: list[str]
    """The edits from the root to the final strategy."""
    rollouts: int
    expansions: int
    candidate_tests: int
    recalled_blocks: list[str]
    best_measured: float | None
    errors: list[str]
    tree: str
    """The tree's file in the run directory."""
    llm: dict[str, int]
    """LLM replies asked for, edits that ran (valid), and that became children."""


def outcome(state: dict[str, Any], ctx: RunContext) -> AgentOutcome:
    """The strategy with the best ``rho``; writes ``tree.json`` and ``tree.txt``."""
    run = context_of(ctx)
    config, total = run.config, total_measurements(run.task, run.eval_budget)
    nodes = [dict(n) for n in state.get("nodes", [])]
    if not nodes:
        return AgentOutcome(stop_reason="no strategy", failure="the run made no strategy")
    final = best_node(nodes)
    final["final"] = True
    nodes[final["id"]] = final
    path, cur = [], final
    while cur["parent"] is not None:
        path.append(cur["edit"])
        cur = nodes[cur["parent"]]
    if ctx.run_dir is not None:
        slim = [{k: v for k, v in n.items() if k not in ("scores", "block_z")} for n in nodes]
        (ctx.run_dir / TREE).write_text(json.dumps({"nodes": slim}, indent=1) + "\n")
        (ctx.run_dir / "tree.txt").write_text(render(nodes) + "\n")
    measured = state.get("measured", {})
    counts = state.get("llm") or {}
    failure = None
    notes = []
    first = first_llm_budget(config)
    if ctx.llm is not None and not counts.get("asked") and total < first:
        notes.append(f"budget {total} < {first}: the LLM is first asked after "
                     f"{config.min_measured} measurements (min_measured), so this run never "
                     f"called it and measured the offline search; use --budget {first} or more")  # fmt: skip
    if ctx.llm is not None and counts.get("asked") and not counts.get("valid"):
        failure = (f"not one of the {counts['asked']} LLM block rewrites ran "
                   f"({(state.get('errors') or ['?'])[-1]}); the strategy is the initial one")  # fmt: skip
    extra = KnowEvoExtra(
        mode=config.mode, allocation=config.allocation, backward=config.backward,
        nodes=len(nodes), final_node=final["id"], final_rho=final["rho"],
        final_path=path[::-1], rollouts=state.get("rollouts", 0),
        expansions=state.get("expansions", 0), candidate_tests=state.get("tests", 0),
        recalled_blocks=state.get("recalled", []),
        best_measured=(state.get("best_found") or [None])[-1],
        errors=(state.get("errors") or [])[-5:], tree=TREE, llm=counts,
    )  # fmt: skip
    return AgentOutcome(
        best_candidate=final["strategy"], claimed_value=final["rho"],
        n_evaluations=len(measured), stop_reason="budget spent" if state.get("done") else "stopped",
        extra=extra.model_dump(), failure=failure, notes=notes,
        llm_proposals={"made": int(counts.get("asked") or 0), "valid": int(counts.get("valid") or 0)}
        if ctx.llm is not None else None,
    )  # fmt: skip


def summary_notes(rows: list[dict[str, Any]]) -> list[str]:
    """Per method: mean tree size, and which kinds of edit the final strategies carry."""
    out = []
    by: dict[str, list[KnowEvoExtra]] = {}
    for r in rows:
        extra = r.get("extra") or {}
        if "nodes" in extra:
            by.setdefault(str(r.get("method")), []).append(KnowEvoExtra.model_validate(extra))
    for method, extras in sorted(by.items()):
        kinds: Counter[str] = Counter()
        for e in extras:
            kinds.update(str(p).split(" ")[0] for p in e.final_path)
        size = sum(e.nodes for e in extras) / len(extras)
        depth = sum(len(e.final_path) for e in extras) / len(extras)
        edits = ", ".join(f"{k} x{v}" for k, v in kinds.most_common()) or "none"
        out.append(f"{method}: {size:.1f} strategies per tree, final strategy {depth:.1f} edits "
                   f"from the root ({edits})")  # fmt: skip
    return out
