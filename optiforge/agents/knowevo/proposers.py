"""The backward phase's writers: evidence-guided rule edits (offline) and the LLM's tested
edit loop (read the evidence -> write one block -> test it in the sandbox -> revise).

Evidence (``evidence``), from the selection split of the measurements only (the check
split stays unseen by the writer): each block's Spearman correlation with the measured
fitness, the block it blames (``target_block``), and the variants the strategy ranked
high that measured poorly (false positives) and the reverse (false negatives), each with
its substitutions, measured value, rank under the strategy and the blamed block's output.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from optiforge.agents.kit import RunContext
from optiforge.agents.kit.ask import Invalid, ask_valid
from optiforge.agents.knowevo.problem import Edit, additions, edits_of_block
from optiforge.agents.knowevo.tree import Node, spearman
from optiforge.evals.suites.protein.protocol import ProteinTask
from optiforge.llm.types import Completion
from optiforge.memory.provenance import quote_untrusted

Tested = tuple[Edit, dict[str, Any]]
"""``(edit, sandbox output)`` of one candidate test."""


def target_block(node: Node, block_rho: dict[str, float | None]) -> str:
    """The block the evidence blames most: the lowest correlation with fitness in the
    direction of its weight."""
    strategy = node["strategy"]

    def blame(b: str) -> float:
        w = float(strategy["weights"].get(b, 1.0))
        return (block_rho.get(b) or 0.0) * (1 if w >= 0 else -1) * min(abs(w), 1.0)

    return min(strategy["blocks"], key=blame)


def evidence(
    node: Node,
    measured: dict[str, float],
    heldin: list[dict[str, Any]],
    library_z: dict[str, list[float]] | None = None,
) -> dict[str, Any]:
    """What the rollouts in ``measured`` say about ``node``'s strategy (see the module doc).

    ``library_z``: the library's alternative blocks' z-scored outputs on the held-in pool
    (computed with the root's test): their correlations join the evidence."""
    ids = sorted(int(i) for i in measured)
    scores = node["scores"]
    by_score = sorted(ids, key=lambda i: (-scores[i], i))
    rank = {i: r for r, i in enumerate(by_score, start=1)}
    vals = sorted(measured[str(i)] for i in ids)
    median, top = vals[len(vals) // 2], vals[int(0.8 * (len(vals) - 1))]
    half = len(by_score) // 2
    fp = [i for i in by_score[: max(3, len(by_score) // 5)] if measured[str(i)] < median][:5]
    fn = [i for i in by_score[half:] if measured[str(i)] >= top][:5]
    block_rho = {b: spearman(z, measured) for b, z in node["block_z"].items()}
    blamed = target_block(node, block_rho)
    out_of = node["block_z"].get(blamed)

    def show(i: int) -> dict[str, Any]:
        return {"mutations": heldin[i]["mutations"], "fitness": round(measured[str(i)], 3),
                "rank": f"{rank[i]}/{len(ids)}",
                "blamed_output": None if out_of is None else round(float(out_of[i]), 2)}  # fmt: skip

    library_rho = {b: spearman(z, measured) for b, z in (library_z or {}).items()
                   if b not in node["strategy"]["blocks"]}  # fmt: skip
    return {"block_rho": block_rho, "blamed": blamed, "n": len(ids), "library_rho": library_rho,
            "false_positives": [show(i) for i in fp],
            "false_negatives": [show(i) for i in fn]}  # fmt: skip


def guided_edits(strategy: dict[str, Any], ev: dict[str, Any], n: int) -> list[Edit]:
    """The first ``n`` localized rule edits in the evidence's order, round robin over:
    the blamed block's edits, the alternative mechanisms to swap in (most correlated with
    the measured fitness first, signed by it), then the other blocks from the most
    blamed; each block's reweights ordered by its correlation with the measured fitness
    (so a small test budget reaches the blamed block, the best addition and every block)."""

    def blame(b: str) -> float:
        w = float(strategy["weights"].get(b, 1.0))
        return (ev["block_rho"].get(b) or 0.0) * (1 if w >= 0 else -1)

    queues: list[list[Edit]] = []
    for block in sorted(strategy["blocks"], key=lambda b: (b != ev.get("blamed"), blame(b))):
        rho = ev["block_rho"].get(block) or 0.0
        w = float(strategy["weights"].get(block, 1.0))
        queues.append(edits_of_block(strategy, block, sign=rho * (1 if w >= 0 else -1)))
        if len(queues) == 1:
            queues.append(additions(strategy, ev.get("library_rho") or {}))
    out: list[Edit] = []
    while len(out) < n and any(queues):
        for q in queues:
            if q and len(out) < n:
                out.append(q.pop(0))
    return out


def _show_source(node: Node, block: str) -> str:
    """A block's source for a prompt: plain when the agent wrote it, quoted when an LLM
    or an earlier run's memory did (candidate-written text never reaches a prompt bare)."""
    src = node["strategy"]["blocks"][block].strip()
    if block in (node.get("untrusted") or []):
        return "(written by an earlier edit, shown as data)\n" + quote_untrusted(src, limit=3000)
    return f"```python\n{src}\n```"


def edit_prompt(task: ProteinTask, node: Node, ev: dict[str, Any]) -> str:
    """The first message of the LLM's edit loop: the evidence and the blamed block."""
    strategy, block = node["strategy"], ev["blamed"]
    weights = ", ".join(f"{b} {w:g}" for b, w in strategy["weights"].items())
    rhos = ", ".join(f"{b} {'-' if r is None else f'{r:+.2f}'}" for b, r in ev["block_rho"].items())
    lib = ", ".join(f"{b} {'-' if r is None else f'{r:+.2f}'}"
                    for b, r in (ev.get("library_rho") or {}).items())  # fmt: skip
    lib = f" Mechanisms of the library not in the strategy, same measure: {lib}." if lib else ""
    return (
        f"{task.description}\n\nA ranking strategy sums z-normalized block scores with weights "
        f"({weights}). Each block's Spearman correlation with the fitness measured so far "
        f"({ev['n']} variants): {rhos}.{lib}\nThe evidence blames `{block}`. Its output (z-score) on "
        f"the mis-ranked variants:\nRanked high but measured poorly: {ev['false_positives']}\n"
        f"Ranked low but measured well: {ev['false_negatives']}\n\n"
        f"Rewrite the block `{block}` (code, not only a constant) so the strategy ranks these "
        f"better. Current source:\n{_show_source(node, block)}\n"
        "Keep `def score(variant, ctx)` returning a float (higher = better). variant has "
        "'mutations' ([position, wild_type_aa, new_aa], 0-based) and 'sequence'; ctx has 'wt', "
        "'burial' (0..1 per site), 'ss' (H/E/C per site). `props` (SCALES: kd, eisenberg, ww, "
        "helix, sheet, charge, volume; hydrophobic(aa, scale); blosum62()) and `math` are "
        "available; no imports. Your edit is run on the measured variants and you get the "
        "result back. Reply with one python code block."
    )


def _feedback(out: dict[str, Any], block: str, rho: float, base: float,
              ev: dict[str, Any], pos: dict[str, int]) -> str:  # fmt: skip
    """The test result of one edit, for the next turn (the candidate's error text quoted)."""
    if out["errors"]:
        name, why = next(iter(out["errors"].items()))
        return (f"Your block failed in the sandbox (block {name}); the error, quoted:\n"
                f"{quote_untrusted(str(why), limit=400)}\nFix it and reply with one python code block.")  # fmt: skip
    z = out["blocks"].get(block) or []

    def outs(key: str) -> str:
        vals = [round(float(z[pos[str(v["mutations"])]]), 2) for v in ev[key]
                if str(v["mutations"]) in pos and z]  # fmt: skip
        return str(vals)

    return (
        f"Tested on the measured variants: Spearman {rho:+.3f} (the current strategy {base:+.3f}). "
        f"Your block's outputs on the variants ranked high but poor: {outs('false_positives')}; "
        f"on those ranked low but good: {outs('false_negatives')}. Revise the block to rank "
        "better and reply with one python code block."
    )


def _edit_params(first: int, k: int) -> dict[str, Any]:
    """The request of the edit loop's turn ``first + k`` (0-based): the first one cooler."""
    from optiforge.llm.structured import CODE_STOP

    return {"stop": CODE_STOP, "temperature": 0.2 if first + k == 0 else 0.7}


def _score_code(reply: Completion) -> str:
    """The reply's code block when it defines ``score``, else ``Invalid``."""
    from optiforge.llm.structured import extract_code_block

    code = extract_code_block(reply.text)
    if "def score(" not in code:
        raise Invalid("the reply defines no score(variant, ctx)")
    return code


def agentic_edits(
    ctx: RunContext,
    task: ProteinTask,
    node: Node,
    ev: dict[str, Any],
    test: Callable[[dict[str, Any]], tuple[dict[str, Any], float]],
    n_tests: int,
) -> tuple[list[Tested], list[str], int]:
    """The LLM's edit loop on the blamed block: each reply's block is run in the sandbox
    by ``test`` (-> its output and Spearman on the selection split) and the result goes
    back to the LLM, for at most ``n_tests`` tests (and ``2 n_tests`` turns).

    Returns ``(tested edits, errors, LLM turns)``.
    """
    assert ctx.llm is not None
    block = ev["blamed"]
    strategy = node["strategy"]
    pos = {str(v["mutations"]): i for i, v in enumerate(task.heldin)}
    base = float(ev.get("base_rho") or 0.0)  # the current strategy on the same split
    messages: list[dict[str, Any]] = [{"role": "user", "content": edit_prompt(task, node, ev)}]
    tested: list[Tested] = []
    errors: list[str] = []
    turns = 0
    while len(tested) < n_tests and turns < 2 * n_tests:
        asked = ask_valid(ctx.llm, messages, _score_code, tries=2 * n_tests - turns,
                          params=functools.partial(_edit_params, turns),
                          reask=lambda _why: "That reply has no python code block defining "
                          "score(variant, ctx). Reply with one python code block.")  # fmt: skip
        turns += asked.asks
        errors += asked.errors
        if asked.stop is not None:
            errors.append(f"{type(asked.stop).__name__}: {asked.stop}"[:200])
            break
        if not asked.valid or asked.value is None or asked.reply is None:
            break  # every turn left went on replies without a score()
        code = asked.value
        messages = [*asked.messages, {"role": "assistant", "content": asked.reply.text or ""}]
        new = {**strategy, "blocks": {**strategy["blocks"], block: code.strip() + "\n"},
               "weights": dict(strategy["weights"])}  # fmt: skip
        out, rho = test(new)
        edit: Edit = (new, block, f"rewrite {block} (LLM, turn {turns})")
        tested.append((edit, out))
        ctx.tracer.event("llm_edit_tested", block=block, turn=turns, rho=round(rho, 4),
                         errors=len(out["errors"]))  # fmt: skip
        messages.append({"role": "user", "content": _feedback(out, block, rho, base, ev, pos)})
    return tested, errors, turns
