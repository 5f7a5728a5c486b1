"""KnowEvo's graph node (``step``) and the tree seeding, expansion and evolution it
drives, as module-level functions reading the run from ``runtime.context`` (``Ctx``).

One ``step`` is a forward rollout and, every ``expand_every`` rollouts, an expansion that
spends ``tests_per_expansion`` candidate tests (one test: one strategy run in the sandbox
on the held-in pool and correlated with the measurements) in every mode:

- **forward**: the allocation (UCB1 over the tree's strategies, or round robin) picks a
  strategy; its top unmeasured held-in variants are measured (``task.measure``: the
  oracle, counted against the budget); the rollout's reward is the picks' mean fitness
  as z-scores of everything measured so far. Every strategy's Spearman correlation with
  the measured fitness (``rho``) is updated (its ranking of the held-in pool was computed
  once, in the sandbox, when it joined the tree).
- **backward** (``backward=True``, ``expand``): the measurements are split (selection 2/3,
  check 1/3); the strategy the allocation just rolled out is revised from the evidence of
  the selection split (``proposers.evidence``: block correlations, the mis-ranked
  variants, the blamed block's outputs on them). Offline the edits are evidence-guided
  rule edits of one block (``proposers.guided_edits``); with an LLM it is an agentic
  loop: the LLM reads the evidence, writes a new version of the blamed block, which is
  run in the sandbox on the held-in pool and tested, and the result goes back for a
  revision (``proposers.agentic_edits``). The best tested edit on the selection split
  becomes a child only if it beats its parent by ``margin`` there and at all on the
  check split. Accepted blocks are stored in memory (``library.remember``: lineage,
  measured effect).
- without backward: the same tests and rule spent on random localized edits (random
  mutation); ``mode="monolithic"``: on rule-based whole-strategy rewrites of the best
  strategy; ``mode="llm-evolution"`` (``evolve``): on whole-program rewrites by the LLM
  over a population on islands (``evolution.py``), every valid child kept.

At the start (``seed_tree``), blocks that earlier runs stored (``library.recall_blocks``)
are seeded into the tree as children of the root (their tests count too). The candidate
is the strategy with the best ``rho`` at the end; the harness scores it on the hidden test
pool (``Task.evaluate``). The agent never sees a test variant's fitness.
"""

from __future__ import annotations

import statistics
from functools import partial
from typing import Any

import numpy as np
from langgraph.graph import END
from langgraph.runtime import Runtime

from optiforge.agents.kit.context import AgentContext, RunContext
from optiforge.agents.knowevo.blocks import ALTERNATIVES, initial_strategy
from optiforge.agents.knowevo.config import KnowEvoConfig
from optiforge.agents.knowevo.evolution import evolution_proposals, island_members
from optiforge.agents.knowevo.library import recall_blocks, remember
from optiforge.agents.knowevo.problem import Edit, KnowEvoState, monolithic_rewrite, random_edit
from optiforge.agents.knowevo.proposers import Tested, agentic_edits, evidence, guided_edits
from optiforge.agents.knowevo.tree import Node, choose, spearman
from optiforge.evals.suites.protein.protocol import ProteinTask

Ctx = AgentContext[ProteinTask, KnowEvoConfig]
"""KnowEvo's runtime context: the run's handles, its ``ProteinTask``, config and budget."""


def context_of(ctx: RunContext) -> Ctx:
    """``ctx`` as a knowevo run's context (``AgentRun`` hands its outcome the context it
    drove the graph with: ``AgentRun.context``).

    Raises:
        TypeError: ``ctx`` is a bare ``RunContext`` (no task, config or budget).
    """
    if not isinstance(ctx, AgentContext):
        raise TypeError("a knowevo outcome needs the run's AgentContext (AgentRun.context)")
    return ctx


def total_measurements(task: ProteinTask, budget: int | None) -> int:
    """Measurements a run spends (its budget; None: the task's)."""
    return int(budget or task.budget)


def first_llm_budget(config: KnowEvoConfig) -> int:
    """The smallest budget whose run asks the LLM: an expansion comes every
    ``expand_every`` rollouts once ``min_measured`` variants are measured, and only while
    measurements are left."""
    rollouts = -(-config.min_measured // config.picks_per_rollout)  # ceil
    rollouts = -(-rollouts // config.expand_every) * config.expand_every
    return rollouts * config.picks_per_rollout + 1


def new_node(nid: int, parent: int | None, strategy: dict[str, Any], out: dict[str, Any],
             edit: str, block: str | None, by: str, block_ids: dict[str, str],
             untrusted: list[str]) -> Node:  # fmt: skip
    """A tree node for ``strategy`` with its held-in ``out``put (no rollouts yet)."""
    return {"id": nid, "parent": parent, "strategy": strategy, "edit": edit, "block": block,
            "by": by, "scores": out["scores"], "block_z": out["blocks"], "pulls": 0,
            "reward": 0.0, "rho": None, "block_ids": block_ids, "untrusted": untrusted,
            "islands": []}  # fmt: skip


def best_node(nodes: list[Node]) -> Node:
    """The node with the best ``rho`` (ties: the oldest)."""
    return max(nodes, key=lambda n: (n["rho"] if n["rho"] is not None else -2, -n["id"]))


def split(measured: dict[str, float], rng: np.random.Generator) -> tuple[dict[str, float], ...]:
    """Selection (2/3) and check (1/3) splits of the measurements."""
    ids = sorted(measured, key=int)
    rng.shuffle(ids)
    cut = (2 * len(ids)) // 3
    return {i: measured[i] for i in ids[:cut]}, {i: measured[i] for i in ids[cut:]}


def score(ctx: Ctx, strategies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``strategies`` run on the held-in pool in the sandbox (one candidate test each)."""
    return ctx.task.score_strategies(strategies, ctx.sandbox) if strategies else []


def seed_tree(
    ctx: Ctx, nodes: list[Node], errors: list[str]
) -> tuple[int, list[str], dict[str, list[float]]]:
    """The root and the blocks recalled from memory: ``(tests, recalled ids, library
    outputs)``. The root's test also runs the library's alternative blocks at weight 0
    (the same ranking; their outputs are evidence for the backward phase), in every
    mode, so every method spends the same tests."""
    task, config = ctx.task, ctx.config
    root = initial_strategy()
    probe = {"blocks": {**root["blocks"], **ALTERNATIVES},
             "weights": {**root["weights"], **{a: 0.0 for a in ALTERNATIVES}}}  # fmt: skip
    found = recall_blocks(ctx, task, root, config.recall_blocks)
    seeds = []
    for r in found:
        s = {"blocks": {**root["blocks"], r["title"]: r["content"]},
             "weights": {**root["weights"], r["title"]: r["weight"]}}  # fmt: skip
        seeds.append(s)
    outs = score(ctx, [probe, *seeds])
    if outs[0]["errors"]:
        raise RuntimeError(f"the initial strategy fails: {outs[0]['errors']}")
    library = {a: outs[0]["blocks"].pop(a) for a in ALTERNATIVES if a in outs[0]["blocks"]}
    nodes.append(
        new_node(0, None, root, outs[0], "initial expert heuristics", None, "root", {}, [])
    )
    nodes[0]["block_ids"] = remember(ctx, task, nodes[0], list(root["blocks"]), None)
    for k, (r, s, out) in enumerate(zip(found, seeds, outs[1:], strict=True)):
        if out["errors"]:
            errors.append(f"recalled {r['title']}: {next(iter(out['errors'].values()))}"[:300])
            continue
        node = new_node(len(nodes), 0, s, out, f"recall {r['title']} from memory "
                        f"(effect {r['effect']:+.3f}, {r['id']})", r["title"], "memory",
                        {**nodes[0]["block_ids"], r["title"]: r["id"]},
                        [] if r["trusted"] else [r["title"]])  # fmt: skip
        node["islands"] = [k % config.islands]
        nodes.append(node)
        ctx.tracer.event("tree_child", node=node["id"], parent=0, edit=node["edit"],
                         by="memory", rho=None)  # fmt: skip
    return 1 + len(seeds), [r["id"] for r in found], library


def step(state: KnowEvoState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """One forward rollout, and an expansion every ``expand_every`` rollouts."""
    ctx = runtime.context
    task, config = ctx.task, ctx.config
    total = total_measurements(task, ctx.eval_budget)
    nodes = [dict(n) for n in state.get("nodes", [])]
    measured = dict(state.get("measured", {}))
    errors = list(state.get("errors", []))
    llm_counts = dict(state.get("llm") or {"asked": 0, "valid": 0, "accepted": 0})
    best_found = list(state.get("best_found", []))
    rollouts = int(state.get("rollouts", 0))
    expansions = int(state.get("expansions", 0))
    tests = int(state.get("tests", 0))
    recalled = list(state.get("recalled", []))
    library = dict(state.get("library_z") or {})
    if not nodes:
        tests, recalled, library = seed_tree(ctx, nodes, errors)
    left = total - len(measured)
    if left <= 0:
        return {"nodes": nodes, "done": True, "tests": tests, "recalled": recalled,
                "library_z": library}  # fmt: skip
    # ---- forward: one rollout
    if config.mode == "tree":
        nid = choose(nodes, config.allocation, config.ucb_c)
    else:
        nid = best_node(nodes)["id"]
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
    # ---- expansion: tests_per_expansion candidate tests, whatever the mode
    if (rollouts % config.expand_every == 0 and len(measured) < total
            and len(measured) >= config.min_measured):  # fmt: skip
        rng = ctx.rng("expand", rollouts)
        sel, chk = split(measured, rng)
        if config.mode == "llm-evolution":
            tests += evolve(ctx, nodes, measured, expansions, rng, errors, llm_counts)
        else:
            tests += expand(
                ctx, nodes, nodes[nid], measured, sel, chk, rng, errors, llm_counts, library
            )
        expansions += 1
    if ctx.progress:
        best_rho = max((n["rho"] for n in nodes if n["rho"] is not None), default=None)
        ctx.progress({"evaluations": len(measured), "max_evaluations": total, "best": best_rho})
    return {"nodes": nodes, "measured": measured, "rollouts": rollouts, "errors": errors[-20:],
            "best_found": best_found, "llm": llm_counts, "done": len(measured) >= total,
            "expansions": expansions, "tests": tests, "recalled": recalled,
            "library_z": library}  # fmt: skip


def add_child(ctx: Ctx, nodes: list[Node], parent: Node, edit: Edit, out: dict[str, Any],
              by: str, measured: dict[str, float], effect: float) -> Node:  # fmt: skip
    """``edit`` of ``parent`` as a new node of the tree (its blocks remembered)."""
    strategy, block, what = edit
    untrusted = [b for b in parent.get("untrusted") or [] if b != block]
    if by == "llm":
        untrusted.append(block)
    node = new_node(len(nodes), parent["id"], strategy, out, what, block, by, {}, untrusted)
    node["rho"] = spearman(node["scores"], measured)
    node["block_ids"] = remember(
        ctx, ctx.task, node, [block] if block in strategy["blocks"] else [], parent, effect
    )
    nodes.append(node)
    ctx.tracer.event("tree_child", node=node["id"], parent=parent["id"], edit=what, by=by,
                     rho=node["rho"])  # fmt: skip
    return node


def candidate_test(
    ctx: Ctx, sel: dict[str, float], strategy: dict[str, Any]
) -> tuple[dict[str, Any], float]:
    """One candidate test of ``strategy``: its held-in output and Spearman on ``sel``."""
    out = score(ctx, [strategy])[0]
    return out, (spearman(out["scores"], sel) or 0.0) if not out["errors"] else 0.0


def expand(ctx: Ctx, nodes: list[Node], target: Node, measured: dict[str, float],
           sel: dict[str, float], chk: dict[str, float], rng: np.random.Generator,
           errors: list[str], llm_counts: dict[str, int],
           library: dict[str, list[float]]) -> int:  # fmt: skip
    """One expansion of the tree (backward phase, random mutation or monolithic);
    returns the candidate tests spent."""
    task, config = ctx.task, ctx.config
    n = config.tests_per_expansion
    base_sel = spearman(target["scores"], sel) or 0.0
    tested: list[Tested]
    if config.mode == "monolithic":
        target = best_node(nodes)
        base_sel = spearman(target["scores"], sel) or 0.0
        edits = [(monolithic_rewrite(target["strategy"], rng), "*",
                  "rewrite the whole strategy") for _ in range(n)]  # fmt: skip
        tested, by = list(zip(edits, score(ctx, [e[0] for e in edits]), strict=True)), "rewrite"
    elif not config.backward:
        edits = [random_edit(target["strategy"], rng) for _ in range(n)]
        tested, by = list(zip(edits, score(ctx, [e[0] for e in edits]), strict=True)), "random"
    elif ctx.llm is not None:
        ev = evidence(target, sel, task.heldin, library) | {"base_rho": base_sel}
        tested, errs, turns = agentic_edits(
            ctx, task, target, ev, partial(candidate_test, ctx, sel), n
        )
        errors += errs
        llm_counts["asked"] += turns
        by = "llm"
    else:
        edits = guided_edits(target["strategy"], evidence(target, sel, task.heldin, library), n)
        tested, by = list(zip(edits, score(ctx, [e[0] for e in edits]), strict=True)), "guided"
    base_chk = spearman(target["scores"], chk) or 0.0
    ranked = []
    for edit, out in tested:
        if out["errors"]:
            errors.append(f"{edit[2]}: {next(iter(out['errors'].values()))}"[:300])
            continue
        ranked.append(((spearman(out["scores"], sel) or 0.0), edit, out))
        llm_counts["valid"] += by == "llm"
    if ranked:
        ranked.sort(key=lambda r: -r[0])
        best_sel, edit, out = ranked[0]
        best_chk = spearman(out["scores"], chk) or 0.0
        accepted = best_sel >= base_sel + config.margin and best_chk > base_chk
        ctx.tracer.event("backward", target=target["id"], candidates=len(tested), best=edit[2],
                         sel=round(best_sel, 4), parent_sel=round(base_sel, 4), by=by,
                         chk=round(best_chk, 4), parent_chk=round(base_chk, 4), accepted=accepted)  # fmt: skip
        if accepted:
            add_child(ctx, nodes, target, edit, out, by, measured, best_sel - base_sel)
            llm_counts["accepted"] += by == "llm"
    return len(tested)


def evolve(ctx: Ctx, nodes: list[Node], measured: dict[str, float], expansion: int,
           rng: np.random.Generator, errors: list[str], llm_counts: dict[str, int]) -> int:  # fmt: skip
    """One generation of the LLM-evolution baseline; returns the tests spent."""
    config = ctx.config
    if expansion and expansion % config.migrate_every == 0:
        for island in range(config.islands):  # each island's best also joins the next
            best = island_members(nodes, island)[0]
            nxt = (island + 1) % config.islands
            if best["id"] != 0 and nxt not in best["islands"]:
                best["islands"] = [*best["islands"], nxt]
    props, errs = evolution_proposals(ctx, ctx.task, nodes, expansion, config.tests_per_expansion,
                                      config.islands, len(measured), rng)  # fmt: skip
    errors += errs
    if ctx.llm is not None:
        llm_counts["asked"] += len(props) + len(errs)
    outs = score(ctx, [p[0] for p in props])
    for (strategy, pid, island), out in zip(props, outs, strict=True):
        if out["errors"]:
            errors.append(f"program: {next(iter(out['errors'].values()))}"[:300])
            continue
        by = "llm" if ctx.llm is not None else "rewrite"
        llm_counts["valid"] += by == "llm"
        parent = nodes[pid]
        node = new_node(len(nodes), pid, strategy, out, "rewrite the whole program", "*", by,
                        {}, list(strategy["blocks"]) if by == "llm" else [])  # fmt: skip
        node["rho"], node["islands"] = spearman(node["scores"], measured), [island]
        rho_p = parent["rho"] if parent["rho"] is not None else 0.0
        if node["rho"] is not None and node["rho"] > rho_p:  # the improved blocks are kept
            changed = [b for b in strategy["blocks"]
                       if parent["strategy"]["blocks"].get(b) != strategy["blocks"][b]]  # fmt: skip
            node["block_ids"] = remember(ctx, ctx.task, node, changed, parent, node["rho"] - rho_p)
        nodes.append(node)
        ctx.tracer.event("tree_child", node=node["id"], parent=pid, edit=node["edit"], by=by,
                         rho=node["rho"], island=island)  # fmt: skip
    return len(props)


def after(state: KnowEvoState) -> str:
    """The next node after ``step``: another step, or the end."""
    return END if state.get("done") else "step"
