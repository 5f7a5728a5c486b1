"""KnowEvo's graph: ``step`` repeated until the measurement budget is spent.

One ``step`` is a forward rollout and, every ``expand_every`` rollouts, an expansion:

- **forward**: the allocation (UCB1 over the tree's strategies, or round robin) picks a
  strategy; its top unmeasured held-in variants are measured (``task.measure``: the
  oracle, counted against the budget); the rollout's reward is the picks' mean fitness
  as z-scores of everything measured so far. Every strategy's Spearman correlation with
  the measured fitness (``rho``) is updated (its ranking of the held-in pool was computed
  once, in the sandbox, when it joined the tree).
- **backward** (``backward=True``): the strategy the allocation just rolled out (so
  revisions follow the bandit's credit and the tree branches) is revised from the rollout
  evidence (``proposers.evidence``): offline, every localized rule edit
  (``problem``: reweight, threshold shift, scale swap, an alternative mechanism swapped in),
  with an LLM, rewrites of the block the evidence blames; all are run in the sandbox on
  the held-in pool in one batch and tested on the measured variants: the best on a
  selection split becomes a child only if it beats its parent by ``margin`` there and at
  all on the check split. Accepted blocks are stored in memory as ``KnowledgeBlock``
  records with their parent block as lineage.
- without backward, an expansion is a random localized edit of the allocated strategy,
  untested (random mutation); ``mode="monolithic"`` instead rewrites the whole current
  best strategy at once and keeps it only if it correlates better.

The candidate is the strategy with the best ``rho`` at the end; the harness scores it on
the hidden test pool (``Task.evaluate``). The agent never sees a test variant's fitness.
"""

from __future__ import annotations

import json
import statistics
from typing import Any, TypedDict

import numpy as np
from langgraph.graph import END, START, StateGraph
from pydantic import BaseModel

from optiforge.agents.kit import AgentRun, RunContext
from optiforge.agents.knowevo.blocks import initial_strategy
from optiforge.agents.knowevo.config import KnowEvoConfig
from optiforge.agents.knowevo.problem import Edit, monolithic_rewrite, random_edit
from optiforge.agents.knowevo.proposers import evidence, guided_edits, llm_edits
from optiforge.agents.knowevo.tree import Node, choose, render, spearman
from optiforge.agents.spec import AgentOutcome

TREE = "tree.json"


class KnowEvoState(TypedDict, total=False):
    nodes: list[Node]
    measured: dict[str, float]
    """Held-in variant id -> measured fitness."""
    rollouts: int
    best_found: list[float]
    """Best measured fitness after each measurement."""
    errors: list[str]
    llm: dict[str, int]
    """LLM rewrites asked for, that ran (valid), and that became children."""
    done: bool


def _node(nid: int, parent: int | None, strategy: dict[str, Any], out: dict[str, Any],
          edit: str, block: str | None, by: str, block_ids: dict[str, str]) -> Node:  # fmt: skip
    return {"id": nid, "parent": parent, "strategy": strategy, "edit": edit, "block": block,
            "by": by, "scores": out["scores"], "block_z": out["blocks"], "pulls": 0,
            "reward": 0.0, "rho": None, "block_ids": block_ids}  # fmt: skip


def _remember(
    ctx: RunContext, task: Any, node: Node, blocks: list[str], parent: Node | None
) -> dict[str, str]:
    """Store ``blocks`` of ``node`` as memory ``KnowledgeBlock`` records (lineage: the same
    block of the parent); the node's block-name -> record-id map."""
    ids = dict(parent["block_ids"]) if parent else {}
    if ctx.memory is None:
        return ids
    from optiforge.memory.records import KnowledgeBlock

    for b in blocks:
        parents = [ids[b]] if b in ids else []
        kb = KnowledgeBlock(agent="knowevo", title=b, content=node["strategy"]["blocks"][b],
                            description=node["edit"], parent_ids=parents,
                            metrics={"weight": float(node["strategy"]["weights"].get(b, 1.0))},
                            tags=[task.suite, task.name, str(getattr(task.landscape, "property", ""))])  # fmt: skip
        ids[b] = ctx.memory.add_block(kb, parents)
    return ids


def build(task: Any, config: BaseModel, budget: int | None) -> AgentRun:
    assert isinstance(config, KnowEvoConfig)
    total = int(budget or task.budget)
    rollouts_max = total // config.picks_per_rollout + 2

    def score(ctx: RunContext, strategies: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return task.score_strategies(strategies, ctx.sandbox)

    def step(state: KnowEvoState, runtime: Any) -> dict[str, Any]:
        ctx: RunContext = runtime.context
        nodes = [dict(n) for n in state.get("nodes", [])]
        measured = dict(state.get("measured", {}))
        errors = list(state.get("errors", []))
        llm_counts = dict(state.get("llm") or {"asked": 0, "valid": 0, "accepted": 0})
        best_found = list(state.get("best_found", []))
        rollouts = int(state.get("rollouts", 0))
        if not nodes:
            root = initial_strategy()
            out = score(ctx, [root])[0]
            if out["errors"]:
                raise RuntimeError(f"the initial strategy fails: {out['errors']}")
            nodes.append(_node(0, None, root, out, "initial expert heuristics", None, "root", {}))
            nodes[0]["block_ids"] = _remember(ctx, task, nodes[0], list(root["blocks"]), None)
        left = total - len(measured)
        if left <= 0:
            return {"nodes": nodes, "done": True}
        # ---- forward: one rollout
        if config.mode == "monolithic":
            nid = max(nodes, key=lambda n: (n["rho"] if n["rho"] is not None else -2, -n["id"]))[
                "id"
            ]
        else:
            nid = choose(nodes, config.allocation, config.ucb_c)
        scores = nodes[nid]["scores"]
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        picks = [i for i in order if str(i) not in measured][: min(config.picks_per_rollout, left)]
        values = task.measure(picks)
        for i, v in zip(picks, values, strict=True):
            measured[str(i)] = float(v)
            best_found.append(max(best_found[-1], v) if best_found else float(v))
        allv = list(measured.values())
        mu, sd = statistics.fmean(allv), (statistics.pstdev(allv) or 1.0)
        reward = statistics.fmean((v - mu) / sd for v in values)
        nodes[nid]["pulls"] += 1
        nodes[nid]["reward"] += reward
        for n in nodes:
            n["rho"] = spearman(n["scores"], measured)
        rollouts += 1
        ctx.tracer.event("rollout", node=nid, picks=picks, reward=round(reward, 4),
                         measured=len(measured))  # fmt: skip
        # ---- expansion
        if rollouts % config.expand_every == 0 and len(measured) < total:
            rng = ctx.rng("expand", rollouts)
            if config.mode == "monolithic":
                _monolithic(ctx, nodes, measured, rng, errors)
            elif config.backward:
                if len(measured) >= config.min_measured:
                    _backward(ctx, task, nodes, nodes[nid], measured, rng, errors, llm_counts)
            else:
                parent = nodes[choose(nodes, config.allocation, config.ucb_c)]
                new, block, what = random_edit(parent["strategy"], rng)
                out = score(ctx, [new])[0]
                if out["errors"]:
                    errors.append(f"{what}: {out['errors']}")
                else:
                    _add(ctx, task, nodes, parent, (new, block, what), out, "random", measured)
        if ctx.progress:
            best_rho = max((n["rho"] for n in nodes if n["rho"] is not None), default=None)
            ctx.progress({"evaluations": len(measured), "max_evaluations": total, "best": best_rho})
        return {"nodes": nodes, "measured": measured, "rollouts": rollouts, "errors": errors[-20:],
                "best_found": best_found, "llm": llm_counts, "done": len(measured) >= total}  # fmt: skip

    def _add(ctx: RunContext, task: Any, nodes: list[Node], parent: Node, edit: Edit,
             out: dict[str, Any], by: str, measured: dict[str, float]) -> Node:  # fmt: skip
        strategy, block, what = edit
        node = _node(len(nodes), parent["id"], strategy, out, what, block, by, {})
        node["rho"] = spearman(node["scores"], measured)
        node["block_ids"] = _remember(
            ctx, task, node, [block] if block in strategy["blocks"] else [], parent
        )
        nodes.append(node)
        ctx.tracer.event("tree_child", node=node["id"], parent=parent["id"], edit=what, by=by,
                         rho=node["rho"])  # fmt: skip
        return node

    def _backward(ctx: RunContext, task: Any, nodes: list[Node], target: Node,
                  measured: dict[str, float], rng: np.random.Generator, errors: list[str],
                  llm_counts: dict[str, int]) -> None:  # fmt: skip
        ev = evidence(target, measured, task.heldin)
        if ctx.llm is not None:
            edits, errs = llm_edits(target["strategy"], ev, ctx, task, config.llm_edits)
            errors += errs
            llm_counts["asked"] += len(edits) + len(errs)
            by = "llm"
        else:
            edits, by = guided_edits(target["strategy"], ev), "guided"
        if not edits:
            return
        outs = score(ctx, [e[0] for e in edits])
        ids = sorted(measured)
        rng.shuffle(ids)
        cut = (2 * len(ids)) // 3
        sel = {i: measured[i] for i in ids[:cut]}
        chk = {i: measured[i] for i in ids[cut:]}
        base_sel = spearman(target["scores"], sel) or 0.0
        base_chk = spearman(target["scores"], chk) or 0.0
        ranked = []
        for edit, out in zip(edits, outs, strict=True):
            if out["errors"]:
                errors.append(f"{edit[2]}: {next(iter(out['errors'].values()))}"[:300])
                continue
            ranked.append(((spearman(out["scores"], sel) or 0.0), edit, out))
            llm_counts["valid"] += by == "llm"
        if not ranked:
            return
        ranked.sort(key=lambda r: -r[0])
        best_sel, edit, out = ranked[0]
        best_chk = spearman(out["scores"], chk) or 0.0
        accepted = best_sel >= base_sel + config.margin and best_chk > base_chk
        ctx.tracer.event("backward", target=target["id"], candidates=len(edits), best=edit[2],
                         sel=round(best_sel, 4), parent_sel=round(base_sel, 4),
                         chk=round(best_chk, 4), parent_chk=round(base_chk, 4), accepted=accepted)  # fmt: skip
        if accepted:
            _add(ctx, task, nodes, target, edit, out, by, measured)
            llm_counts["accepted"] += by == "llm"

    def _monolithic(ctx: RunContext, nodes: list[Node], measured: dict[str, float],
                    rng: np.random.Generator, errors: list[str]) -> None:  # fmt: skip
        best = max(nodes, key=lambda n: (n["rho"] if n["rho"] is not None else -2, -n["id"]))
        new = monolithic_rewrite(best["strategy"], rng)
        out = score(ctx, [new])[0]
        if out["errors"]:
            errors.append(f"rewrite: {out['errors']}")
            return
        rho = spearman(out["scores"], measured)
        if rho is not None and rho > (best["rho"] or -2):
            _add(ctx, task, nodes, best, (new, "*", "rewrite the whole strategy"), out,
                 "rewrite", measured)  # fmt: skip

    g: StateGraph[Any, Any, Any, Any] = StateGraph(KnowEvoState, context_schema=RunContext)
    g.add_node("step", step)  # type: ignore[call-overload]
    g.add_edge(START, "step")
    g.add_conditional_edges("step", lambda s: END if s.get("done") else "step")

    def outcome(state: dict[str, Any], ctx: RunContext) -> AgentOutcome:
        nodes = [dict(n) for n in state.get("nodes", [])]
        if not nodes:
            return AgentOutcome(stop_reason="no strategy", failure="the run made no strategy")
        final = max(nodes, key=lambda n: (n["rho"] if n["rho"] is not None else -2, -n["id"]))
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
        if ctx.llm is not None and counts.get("asked") and not counts.get("valid"):
            failure = (f"not one of the {counts['asked']} LLM block rewrites ran "
                       f"({(state.get('errors') or ['?'])[-1]}); the strategy is the initial one")  # fmt: skip
        return AgentOutcome(
            best_candidate=final["strategy"], claimed_value=final["rho"],
            n_evaluations=len(measured), stop_reason="budget spent" if state.get("done") else "stopped",
            extra={"mode": config.mode, "allocation": config.allocation, "backward": config.backward,
                   "nodes": len(nodes), "final_node": final["id"], "final_rho": final["rho"],
                   "final_path": path[::-1], "rollouts": state.get("rollouts", 0),
                   "best_measured": (state.get("best_found") or [None])[-1],
                   "errors": (state.get("errors") or [])[-5:], "tree": TREE, "llm": counts},
            failure=failure,
        )  # fmt: skip

    return AgentRun(graph=g, outcome=outcome, what="a knowevo run",
                    recursion_limit=2 * rollouts_max + 20, checkpoints="knowevo_checkpoints.sqlite")  # fmt: skip
