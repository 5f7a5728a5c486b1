"""The search problem: a strategy (weighted expertise blocks) and its localized edits, the
offline proposer of the backward phase and of random mutation; and the monolithic
rewrite (the baseline).

An edit changes exactly one block: its weight (``reweight``: scale up, down, or off), one
upper-case numeric constant (``shift``: a threshold or margin moved by a factor), its
hydrophobicity scale (``swap-scale``: ``kd`` <-> ``eisenberg`` <-> ``ww``), or swaps an
alternative mechanism in (``add``, from ``blocks.ALTERNATIVES`` at weight 0.5). Constants
are rewritten in the source text (an AST-located assignment), so an edit is a diff of
one block's code.
"""

from __future__ import annotations

import ast
import copy
from typing import Any, TypedDict

import numpy as np

from optiforge.agents.knowevo.blocks import ALTERNATIVES
from optiforge.agents.knowevo.tree import Node

HYDRO_SCALES = ("kd", "eisenberg", "ww")
Edit = tuple[dict[str, Any], str, str]
"""``(strategy, block edited, what changed)``."""


class KnowEvoState(TypedDict, total=False):
    """KnowEvo's graph state (checkpointed after every step)."""

    nodes: list[Node]
    measured: dict[str, float]
    """Held-in variant id -> measured fitness."""
    rollouts: int
    expansions: int
    tests: int
    """Candidate tests spent (strategies run on the held-in pool and tested)."""
    best_found: list[float]
    """Best measured fitness after each measurement."""
    errors: list[str]
    llm: dict[str, int]
    """LLM replies asked for (turns), edits that ran (valid), and that became children."""
    recalled: list[str]
    """Memory block ids seeded into the tree."""
    library_z: dict[str, list[float]]
    """The library's alternative blocks' z-scored outputs on the held-in pool (evidence)."""
    done: bool


def constants(source: str) -> dict[str, Any]:
    """The block's upper-case module constants (numbers and strings)."""
    out: dict[str, Any] = {}
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id.isupper()
                and isinstance(node.value, ast.Constant)):  # fmt: skip
            out[node.targets[0].id] = node.value.value
    return out


def set_constant(source: str, name: str, value: float | str) -> str:
    """``source`` with the module constant ``name`` assigned ``value`` (one line changed)."""
    lines = source.split("\n")
    for node in ast.parse(source).body:
        if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == name):  # fmt: skip
            lines[node.lineno - 1] = f"{name} = {value!r}"
            return "\n".join(lines)
    raise KeyError(name)


def _with(strategy: dict[str, Any], block: str, source: str | None = None,
          weight: float | None = None) -> dict[str, Any]:  # fmt: skip
    s = copy.deepcopy(strategy)
    if source is not None:
        s["blocks"][block] = source
    if weight is not None:
        s["weights"][block] = float(round(weight, 4))
    return s


def edits_of_block(strategy: dict[str, Any], block: str, sign: float = 0.0) -> list[Edit]:
    """Every localized edit of ``block``; ``sign`` (the block's correlation with measured
    fitness) orders the reweights: a block that predicts fitness is scaled up, one that
    misleads is switched off or flipped first."""
    w = float(strategy["weights"].get(block, 1.0))
    src = strategy["blocks"][block]
    out: list[Edit] = []
    factors = (2.0, 0.5, 0.0, -0.5) if sign >= 0 else (0.0, -0.5, 0.5, 2.0)
    for f in factors:
        out.append(
            (_with(strategy, block, weight=w * f), block, f"reweight {block}: {w:g} -> {w * f:g}")
        )
    for name, value in constants(src).items():
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float):
            for f in (0.75, 1.33):
                new = (
                    type(value)(round(value * f, 3))
                    if isinstance(value, float)
                    else max(1, round(value * f))
                )
                if new != value:
                    out.append((_with(strategy, block, set_constant(src, name, new)), block,
                                f"shift {block}.{name}: {value} -> {new}"))  # fmt: skip
        elif name == "SCALE" and value in HYDRO_SCALES:
            for alt in HYDRO_SCALES:
                if alt != value:
                    out.append((_with(strategy, block, set_constant(src, name, alt)), block,
                                f"swap-scale {block}: {value} -> {alt}"))  # fmt: skip
    return out


def additions(strategy: dict[str, Any], rho: dict[str, float | None] | None = None) -> list[Edit]:
    """Swap in each alternative mechanism the strategy does not have (weight 0.5).

    ``rho``: each alternative's correlation with the measured fitness (the evidence):
    then the additions come most correlated first, and one that correlates negatively is
    added at weight -0.5 (its mechanism runs the other way on this landscape)."""
    out: list[tuple[float, Edit]] = []
    for k, (name, src) in enumerate(ALTERNATIVES.items()):
        if name not in strategy["blocks"]:
            r = (rho or {}).get(name)
            w = -0.5 if r is not None and r < 0 else 0.5
            s = copy.deepcopy(strategy)
            s["blocks"][name], s["weights"][name] = src, w
            order = -abs(r) if rho is not None and r is not None else float(k)
            out.append((order, (s, name, f"add {name} (weight {w:g})")))
    return [e for _, e in sorted(out, key=lambda x: x[0])]


def random_edit(strategy: dict[str, Any], rng: np.random.Generator) -> Edit:
    """One localized edit chosen uniformly: a random block's random edit, or an addition."""
    pool = additions(strategy)
    for block in strategy["blocks"]:
        pool += edits_of_block(strategy, block)
    return pool[int(rng.integers(len(pool)))]


def monolithic_rewrite(strategy: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    """The whole strategy rewritten at once (the monolithic-evolution baseline): every
    weight scaled by a log-normal factor (sign flipped with probability 0.1), every numeric
    constant shifted, each scale swapped with probability 0.3, an alternative block added
    with probability 0.3."""
    s = copy.deepcopy(strategy)
    for block, src in list(s["blocks"].items()):
        w = float(s["weights"].get(block, 1.0)) * float(rng.lognormal(0, 0.5))
        s["weights"][block] = round(-w if rng.random() < 0.1 else w, 4)
        for name, value in constants(src).items():
            if isinstance(value, bool):
                continue
            if isinstance(value, float):
                src = set_constant(src, name, round(value * float(rng.uniform(0.7, 1.4)), 3))
            elif isinstance(value, int):
                src = set_constant(src, name, max(1, round(value * float(rng.uniform(0.7, 1.4)))))
            elif name == "SCALE" and value in HYDRO_SCALES and rng.random() < 0.3:
                src = set_constant(
                    src, name, str(rng.choice([x for x in HYDRO_SCALES if x != value]))
                )
        s["blocks"][block] = src
    missing = [k for k in ALTERNATIVES if k not in s["blocks"]]
    if missing and rng.random() < 0.3:
        name = missing[int(rng.integers(len(missing)))]
        s["blocks"][name], s["weights"][name] = ALTERNATIVES[name], 0.5
    return s
