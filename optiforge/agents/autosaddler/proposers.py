"""Proposing patches: the rule-based library (offline) and the LLM diagnoser.

Rules: each failure category maps to an ordered list of patch makers (``harness ->
Patch | None``); a proposal takes, for the most frequent root cause among the batch's
failures (``scope="one_part"``), the first patch not tried before, or for every category
seen, its first untried patch at once (``scope="whole"``, the unconstrained ablation).

LLM: the model reads the harness's files, the parts it may change, up to
``traces_per_prompt`` failed trajectories (whole, or only their end for the shallow
ablation) and the patches already tried with their results, and answers a
``Proposal``: root cause, category, evidence and one structured patch (``whole``: up to
six patches, any parts, e.g. a rewritten system prompt).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from optiforge.agents.kit.harness import Patch
from optiforge.errors import BudgetExceeded, ConfigError, LLMError

Maker = Callable[[Any], Patch | None]


def patch_key(p: Patch) -> str:
    return json.dumps([p.target, p.op, p.value], sort_keys=True, default=str)


def choose_rules(
    categories: list[str],
    harness: Any,
    library: dict[str, list[Maker]],
    tried: set[str],
    scope: str,
) -> list[Patch]:
    """The rule proposal for a batch whose failures have these root-cause categories."""
    order = [c for c, _ in Counter(categories).most_common()]
    chosen: list[Patch] = []
    for cat in order:
        for make in library.get(cat, []):
            p = make(harness)
            if p is None or patch_key(p) in tried:
                continue
            try:
                harness.apply(p)
            except ConfigError:
                continue
            chosen.append(p)
            break
        if chosen and scope == "one_part":
            break
    return chosen


class PatchSpec(BaseModel):
    target: str = Field(description="the part to change")
    op: str = Field(
        default="set", description="set, append (to a list or a prompt) or remove (from a list)"
    )
    value: Any = Field(description="the new value, the item to append, or the item to remove")
    why: str = Field(description="the root cause this patch answers")


class Proposal(BaseModel):
    root_cause: str = Field(description="the first thing that went wrong and made the rest fail")
    category: str
    evidence: str = Field(description="turns of the trajectories that show it")
    patch: PatchSpec


class WholeProposal(BaseModel):
    root_cause: str
    category: str
    evidence: str
    patches: list[PatchSpec] = Field(min_length=1, max_length=6)


INTRO = (
    "You improve the harness of an LLM agent (its prompts, tools, limits and control hooks) "
    "from trajectories where it failed. The harness is code: you change it with structured "
    "patches."
)
DEEP = (
    "Read each whole trajectory and name its ROOT CAUSE: the first thing that went wrong and "
    "made the rest fail, not the last error shown. Then propose ONE patch to ONE part of the "
    "harness that removes that cause for future tasks (not a fix for this one task)."
)
SHALLOW = "Each failure's last error is shown. Reflect on it and propose ONE patch to ONE part."
WHOLE = "Propose the changes you think best: you may change any parts, several at once (up to six patches)."


def proposal_prompt(
    harness: Any,
    parts_doc: str,
    categories: dict[str, str],
    failures: list[str],
    history: list[dict[str, Any]],
    *,
    mode: str,
    scope: str,
) -> str:
    files = "\n\n".join(f"--- {name} ---\n{text}" for name, text in harness.files().items())
    cats = "\n".join(f"- {k}: {v}" for k, v in categories.items())
    tried = (
        "\n".join(
            f"- {h['patches']} -> {'accepted' if h['accepted'] else 'rejected'} ({h['result']})"
            for h in [h for h in history if h.get("patches")][-8:]
        )
        or "(none yet)"
    )
    task = WHOLE if scope == "whole" else (DEEP if mode == "trace" else SHALLOW)
    traces = "\n\n".join(f"Failure {i + 1}:\n{f}" for i, f in enumerate(failures))
    return (f"{INTRO}\n\n{task}\n\nThe harness now:\n{files}\n\nParts you may patch:\n{parts_doc}\n\n"
            f"Failure categories (pick one):\n{cats}\n\nPatches tried so far:\n{tried}\n\n{traces}")  # fmt: skip


def llm_propose(
    llm: Any, harness: Any, prompt: str, *, scope: str
) -> tuple[dict[str, Any], list[Patch], str]:
    """Ask ``llm`` with ``prompt`` (``proposal_prompt``): (diagnosis, patches, error), the
    patches ``harness`` accepts in order, and why the others (or all) were refused."""
    schema: type[BaseModel] = WholeProposal if scope == "whole" else Proposal
    try:
        reply = llm.complete([{"role": "user", "content": prompt}], schema=schema, temperature=0.2)
    except (LLMError, BudgetExceeded) as e:
        return {}, [], f"{type(e).__name__}: {e}"[:300]
    parsed = reply.parsed
    if parsed is None:
        return {}, [], "the reply matched no proposal"
    specs = parsed.patches if isinstance(parsed, WholeProposal) else [parsed.patch]  # type: ignore[attr-defined]
    diag = {"category": str(parsed.category), "root_cause": str(parsed.root_cause)[:400],  # type: ignore[attr-defined]
            "evidence": str(parsed.evidence)[:400]}  # type: ignore[attr-defined]  # fmt: skip
    patches: list[Patch] = []
    errors: list[str] = []
    h = harness
    for spec in specs:
        try:
            why = spec.why or diag["root_cause"]
            p = Patch.model_validate(
                {"target": spec.target, "op": spec.op, "value": spec.value, "why": why}
            )
            h = h.apply(p)
            patches.append(p)
        except (ConfigError, ValueError) as e:
            errors.append(str(e).splitlines()[0][:200])
    return diag, patches, "; ".join(errors)
