"""The offline formulator: a rule-based reading of the description and the typed knob list.

No LLM: a formulation is written from what a practitioner reads off the word problem and
the system's public knob API, with rules that name no instance:

- **prune** a knob that is a nuisance by its name (random seeds, logging and debug flags,
  scheduler hints, numerical tolerances and iteration caps, implementation choices that
  change speed and not the result: ``NUISANCE``) or by what the description says of it
  (a ``hint``, a speed ``heuristic``); a pruned knob keeps the system's default;
- **condition** a knob the description ties to one choice of another knob ("degree (poly
  only)": ``active_if {kernel: [poly]}``);
- **narrow** a numeric range to the one the description states for the knob ("tile_m,
  tile_n (16-256)", "each between 0.001 and 1") and a few common scikit-learn
  hyperparameters to their conventional ranges (``CONVENTIONAL``), within the valid range;
- **log scale** a positive range spanning more than two decades (not in a constrained
  design problem, where the feasible designs sit at the large end), or one decade when the
  description says such quantities span orders of magnitude;
- **pick the optimizer** by dimension and type: TPE when at least half the variables are
  discrete (ints and categoricals, natively), GP-BO for a mostly continuous space of at most
  ``GP_MAX_DIM`` variables with a budget of at least ``GP_MIN_EVALS_PER_DIM`` per
  dimension, TPE otherwise.

The fixed default (every knob, full ranges, linear scales, GP-BO) stays the baseline
(``default``); ``benchmarks/bbowp_heuristic.py`` measures one against the other.
"""

from __future__ import annotations

import re
from typing import Any

from optiforge.evals.suites.bbowp.protocol import WordProblemTask
from optiforge.solvers.blackbox import SearchSpace

NUISANCE = re.compile(
    r"(^|_)(seed|random_state|verbose|verbosity|debug|log_level|hint|n_jobs|tol|rtol|atol"
    r"|max_iter|leaf_size|algorithm|selection)($|_)"
)
"""Knob names that are nuisances to a practitioner: they change speed, logging or the
numerical path, not what is being optimized (a seed is noise, not a design choice)."""
NUISANCE_WORDS = re.compile(r"\b(hint|heuristic|logging|verbosity)\b", re.I)
"""Words in a knob's own annotation in the description that mark it as a nuisance."""
CONVENTIONAL: dict[str, tuple[float, float]] = {
    "C": (0.03125, 32768.0),
    "gamma": (3.0517578125e-05, 8.0),
    "min_samples_leaf": (1.0, 20.0),
}
"""Conventional ranges of common scikit-learn hyperparameters (auto-sklearn's search
spaces, Feurer et al. 2015), intersected with the knob's valid range."""
LOG_DECADES = 2.0
"""A positive range spanning more than this many decades is searched on a log scale."""
CONSTRAINED = re.compile(r"\bsubject to\b|\bconstraints?\b|\blimits?\b|\bpenali[sz]ed\b", re.I)
"""Words that make a description a constrained design problem."""
ORDERS = re.compile(r"orders? of magnitude|several decades", re.I)
GP_MAX_DIM = 8
"""GP-BO's RBF-ARD model is fit from a few dozen points; above this many variables TPE."""
GP_MIN_EVALS_PER_DIM = 3
"""A GP needs a few evaluations per dimension beyond its initial design to pay off."""
_NUM = r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?"
_RANGE = re.compile(rf"(?:between\s+)?({_NUM})\s*(?:-|–|to|and)\s*({_NUM})", re.I)


def heuristic_formulation(task: WordProblemTask) -> dict[str, Any]:
    """A formulation of ``task`` (a bbowp word problem) from its description and knobs.

    Returns ``{"space", "method", "rationale"}`` (``rationale``: one line per rule that
    fired, for the report; the harness reads only ``space`` and ``method``)."""
    desc: str = task.description
    knobs: dict[str, dict[str, Any]] = task.knobs
    notes = knob_notes(desc, list(knobs))
    constrained = bool(CONSTRAINED.search(desc))
    why: list[str] = []
    variables: list[dict[str, Any]] = []
    for name, knob in knobs.items():
        own, shared = notes.get(name, ("", ""))
        if NUISANCE.search(name.lower()) or NUISANCE_WORDS.search(own):
            why.append(f"pruned {name}")
            continue
        var: dict[str, Any] = {"name": name, "kind": knob["kind"]}
        parent = _condition(own, name, knobs)
        if parent:
            var["active_if"] = parent
            why.append(f"{name} only when {parent}")
        if knob["kind"] == "categorical":
            var["choices"] = list(knob["choices"])
        else:
            low, high = float(knob["low"]), float(knob["high"])
            for source, rng in (("as stated", _stated_range(own or shared)),
                                ("by convention", CONVENTIONAL.get(name))):  # fmt: skip
                if rng and max(low, rng[0]) < min(high, rng[1]):
                    nl, nh = max(low, rng[0]), min(high, rng[1])
                    if (nl, nh) != (low, high):
                        why.append(f"{name} narrowed to [{nl:g}, {nh:g}] {source}")
                    low, high = nl, nh
            if knob["kind"] == "int":
                low, high = float(round(low)), float(round(high))
            decades = _decades(low, high)
            said = bool(ORDERS.search(_sentence(desc, name)))
            # under constraints a wide design dimension stays linear unless the description
            # says it spans magnitudes: a log scale spends most samples on the small
            # designs, where the feasible region of a weight or cost problem rarely lies
            wide = (decades > LOG_DECADES and not constrained) or (decades >= 1 and said)
            var.update(low=int(low) if knob["kind"] == "int" else low,
                       high=int(high) if knob["kind"] == "int" else high, log=wide)  # fmt: skip
            if wide:
                why.append(f"{name} on a log scale ({decades:.1f} decades)")
        variables.append(var)
    if not variables:  # every knob looked like a nuisance: search them all rather than none
        return {**task.default_formulation(), "rationale": "no knob left: the default"}
    variables = _parents_kept(variables)
    space = SearchSpace.model_validate({"variables": variables})
    method = choose_method(variables, int(task.budget))
    why.append(f"{method} for {len(variables)} variables, budget {task.budget}")
    return {"space": space.model_dump(mode="json", exclude_none=True), "method": method,
            "rationale": "; ".join(why)}  # fmt: skip


def choose_method(variables: list[dict[str, Any]], budget: int) -> str:
    """The optimizer for a space: see the module doc."""
    d = len(variables)
    discrete = sum(v["kind"] != "float" for v in variables)
    if discrete < d / 2 and d <= GP_MAX_DIM and budget >= GP_MIN_EVALS_PER_DIM * d:
        return "gp"
    return "tpe"


def knob_notes(desc: str, names: list[str]) -> dict[str, tuple[str, str]]:
    """What the description says of each knob: ``(own, shared)``. ``own``: the parenthesis
    right after its name and the clause up to the next knob name or sentence end;
    ``shared``: what follows a list of knob names it belongs to ("tile_m, tile_n (16-256)":
    16-256 is tile_m's shared note, not its own)."""
    pattern = re.compile(
        r"\b(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")\b"
    )
    hits = list(pattern.finditer(desc))
    joiner = re.compile(r"[\s,]*(?:and|or|\.\.\.|…)?[\s,]*")
    out: dict[str, tuple[str, str]] = {}
    for i, m in enumerate(hits):
        j = i
        # a run of knob names joined by commas, "and" or "...": they share what follows it
        while j + 1 < len(hits) and joiner.fullmatch(desc[hits[j].end() : hits[j + 1].start()]):
            j += 1
        own = _note(desc, hits, i) if j == i else ""
        shared = _note(desc, hits, j)
        out.setdefault(m.group(1), (own, shared))
    return out


def _note(desc: str, hits: list[re.Match[str]], i: int) -> str:
    """The parenthesis after hit ``i`` and its clause up to the next hit or sentence end."""
    rest = desc[hits[i].end() : hits[i + 1].start() if i + 1 < len(hits) else len(desc)]
    clause = re.split(r"(?<=[a-z0-9)])\.\s", rest)[0]
    return _paren(clause) + " " + clause


def _paren(text: str) -> str:
    """The balanced parenthesis ``text`` starts with (after spaces), or ''."""
    s = text.lstrip()
    if not s.startswith("("):
        return ""
    depth = 0
    for k, ch in enumerate(s):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth == 0:
            return s[1:k]
    return s[1:]


def _stated_range(note: str) -> tuple[float, float] | None:
    """The first ``a-b`` / ``between a and b`` range in a knob's annotation (a < b)."""
    for m in _RANGE.finditer(note):
        a, b = float(m.group(1)), float(m.group(2))
        if a < b:
            return a, b
    return None


def _condition(
    note: str, name: str, knobs: dict[str, dict[str, Any]]
) -> dict[str, list[Any]] | None:
    """``{parent: [choice]}`` when the annotation says "<choice> only" of another knob's choice."""
    m = re.search(r"\b(\w+)\s+only\b", note)
    if not m:
        return None
    word = m.group(1).lower()
    for parent, k in knobs.items():
        if parent != name and k["kind"] == "categorical":
            hit = [c for c in k["choices"] if str(c).lower() == word]
            if hit:
                return {parent: hit}
    return None


def _parents_kept(variables: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop a condition whose parent was pruned (the child then is always active)."""
    names = {v["name"] for v in variables}
    for v in variables:
        if v.get("active_if") and not set(v["active_if"]) <= names:
            del v["active_if"]
    return variables


def _decades(low: float, high: float) -> float:
    import math

    return math.log10(high / low) if low > 0 else 0.0


def _sentence(desc: str, name: str) -> str:
    """The sentences of ``desc`` that name ``name``, joined ('' when none does)."""
    return " ".join(
        s for s in re.split(r"(?<=\.)\s+", desc) if re.search(rf"\b{re.escape(name)}\b", s)
    )
