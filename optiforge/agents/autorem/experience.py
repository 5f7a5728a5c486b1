"""AutoREM experience entries: structure, storage in memory, retrieval, diagnosis.

An ``ExperienceEntry`` is one reusable lesson distilled from a failed trajectory:
``trigger`` (when it applies: set types, structure features), ``error_pattern`` (what
went wrong), ``corrective_rule`` (what to do instead) and ``example`` (a short code
snippet). Entries are stored as ``memory.Experience`` records of agent ``autorem``:
``lesson`` is the rendered text of the four fields (what prompts show), ``tags`` are
``autorem`` + the trigger's set types and features, and ``trajectory_summary`` is a JSON
object ``{"entry": {...}, "trajectory": [...], "model": ...}`` so the structured entry
parses back (``entry_from_experience``), also after ``memory export``/``import``.

Two diagnosers turn a failed trajectory into entries:

- ``diagnose_llm``: one LLM call with structured output (``schema=ExperienceEntry``)
  that sees the instance's structure, the attempted code and the verifier's reasons,
  never the reference answer or code (the agent must not copy answers).
- ``diagnose_rules`` (no LLM): maps verifier reasons plus the failing row's set type to
  a fixed entry (the dualisation rule of that set type and its code snippet). It is a
  hand-written rule table, honest and deterministic, used offline and in replay/transfer
  tests; it does not discover anything new.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from optiforge.agents.autorem.proposers import redact_reasons, support_rule
from optiforge.errors import MemoryStoreError, StructuredOutputError
from optiforge.memory.provenance import Provenance, quote_untrusted
from optiforge.solvers.robust.instance import ROInstance

if TYPE_CHECKING:  # the handles' modules are imported by whoever builds the context
    from optiforge.llm.base import LLM
    from optiforge.memory.store import Store

AGENT = "autorem"
GENERAL_TAG = "general"
"""Tag of entries that apply to every instance (I/O protocol, crashes)."""
MODELLING = "modelling"
"""Feature (and tag) of lessons about the modelling step (text to ``ROProblem``)."""
CURATED_TAG = "curated"
"""Tag of consolidated, validated lessons (``curate.py``); when a store holds any, retrieval
reads only those."""


class EntryTrigger(BaseModel):
    """When an entry applies."""

    model_config = ConfigDict(extra="forbid")

    set_types: list[str] = Field(default_factory=list, max_length=8)
    """Uncertainty set types the lesson is about (empty: any instance)."""
    features: list[str] = Field(default_factory=list, max_length=8)
    """Structure features (``ge_rows``, ``soc``, ``uncertain_objective``...)."""
    description: str = Field(default="", max_length=300)
    """The situation in words (e.g. "a >= row with box uncertainty")."""


class ExperienceEntry(BaseModel):
    """One structured AutoREM lesson (also the LLM reflection's output schema)."""

    model_config = ConfigDict(extra="forbid")

    trigger: EntryTrigger
    error_pattern: str = Field(min_length=1, max_length=500)
    """What went wrong, as a recognisable pattern."""
    corrective_rule: str = Field(min_length=1, max_length=500)
    """What to do instead, phrased as an instruction."""
    example: str = Field(default="", max_length=1500)
    """A short code snippet showing the rule (no instance data, no answers)."""

    def render(self) -> str:
        """The lesson text shown in prompts."""
        when = ", ".join(self.trigger.set_types) or "any set"
        if self.trigger.features:
            when += f"; features {', '.join(self.trigger.features)}"
        if self.trigger.description:
            when += f" ({self.trigger.description})"
        lines = [
            f"When: {when}",
            f"Error pattern: {self.error_pattern}",
            f"Rule: {self.corrective_rule}",
        ]
        if self.example.strip():
            lines.append(f"Example:\n```python\n{self.example.rstrip()}\n```")
        return "\n".join(lines)

    def key(self) -> str:
        """Content hash: the same lesson from two runs (or two models) is stored once."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:24]

    def tags(self) -> list[str]:
        """Memory tags: ``autorem``, the set types, the features (``general`` if none)."""
        tags = [AGENT, *self.trigger.set_types, *self.trigger.features]
        if not self.trigger.set_types:
            tags.append(GENERAL_TAG)
        return tags


class Attempt(BaseModel):
    """One code attempt of a trajectory and the verifier's judgement."""

    model_config = ConfigDict(extra="forbid")

    index: int
    code: str
    passed: bool
    reasons: list[str] = Field(default_factory=list)
    origin: str = "llm"
    """``llm``, ``repair`` or ``reference`` (the offline code generator)."""
    tokens: int = 0


def experience_id(entry: ExperienceEntry) -> str:
    """Deterministic memory id of an entry (content-addressed)."""
    return f"exp_autorem_{entry.key()}"


def to_experience(
    entry: ExperienceEntry,
    instance: ROInstance,
    trajectory: list[Attempt],
    model: str,
    *,
    provenance: Provenance = "unknown",
) -> Any:
    """The ``memory.Experience`` record holding ``entry`` (structured JSON kept inside).

    ``provenance``: ``distilled`` for an LLM's reflection (it read the verifier's reasons,
    which quote candidate output), ``agent`` for the rule table's. The summary keeps the
    number of reasons per attempt, not their text (candidate output stays out of memory;
    the run directory has it)."""
    from optiforge.memory import Experience

    summary = {
        "entry": entry.model_dump(mode="json"),
        "trajectory": [
            {
                "attempt": a.index,
                "origin": a.origin,
                "passed": a.passed,
                "n_reasons": len(a.reasons),
            }
            for a in trajectory
        ],
        "model": model,
        "instance": instance.id,
    }
    solved = any(a.passed for a in trajectory)
    return Experience(
        id=experience_id(entry),
        agent=AGENT,
        task_signature=signature(instance),
        trajectory_summary=json.dumps(summary, sort_keys=True),
        outcome=("repaired" if solved else "failed") + f" after {len(trajectory)} attempt(s)",
        score=1.0 if solved else 0.0,
        lesson=entry.render(),
        tags=entry.tags(),
        provenance=provenance,
    )


def entry_from_experience(exp: Any) -> ExperienceEntry:
    """Parse the structured entry back out of an ``Experience`` written by ``to_experience``."""
    try:
        data = json.loads(exp.trajectory_summary)
        return ExperienceEntry.model_validate(data["entry"])
    except (json.JSONDecodeError, KeyError, TypeError, ValidationError) as exc:
        raise MemoryStoreError(
            f"experience {exp.id} is not an AutoREM entry ({type(exc).__name__})"
        ) from None


def signature(instance: ROInstance) -> str:
    """Task signature: suite, set types and structure features (what retrieval matches)."""
    sets = ",".join(sorted(set(instance.set_types))) or "none"
    feats = ",".join(instance.features) or "plain"
    return f"autoro robust counterpart; sets: {sets}; features: {feats}"


def retrieval_query(instance: ROInstance) -> str:
    """Query text for memory search: structure words, not numbers."""
    words = [*sorted(set(instance.set_types)), *instance.features]
    return " ".join(words) + " uncertainty robust counterpart " + instance.description[:400]


def has_curated(memory: Store) -> bool:
    """Whether ``memory`` holds curated AutoREM lessons (then retrieval reads only those)."""
    hits = memory.search(
        CURATED_TAG, k=1, kind="experience", agent=AGENT, tags=[AGENT, CURATED_TAG]
    )
    return bool(hits)


def retrieve_entries(
    memory: Store, instance: ROInstance, k: int = 4
) -> list[tuple[str, ExperienceEntry]]:
    """Up to ``k`` ``(id, entry)`` pairs relevant to ``instance``, best first.

    One tag-filtered search per set type of the instance (so every set type gets its
    lessons), then general entries; duplicates dropped. Records that are not AutoREM
    entries are skipped, and so are modelling lessons (``retrieve_modelling_entries``).
    A store with curated lessons serves only those.
    """
    if memory is None or k < 1:
        return []
    query = retrieval_query(instance)
    found: dict[str, tuple[float, ExperienceEntry]] = {}
    extra = [CURATED_TAG] if has_curated(memory) else []
    groups = [[AGENT, t, *extra] for t in sorted(set(instance.set_types))]
    groups.append([AGENT, GENERAL_TAG, *extra])
    for tags in groups:
        for hit in memory.search(query, k=k, kind="experience", agent=AGENT, tags=tags):
            rec = hit.record
            if rec.id in found:
                continue
            try:
                entry = entry_from_experience(rec)
            except MemoryStoreError:
                continue
            # a feature-specific entry applies only where the feature is present
            if not set(entry.trigger.features) <= set(instance.features):
                continue
            found[rec.id] = (hit.score, entry)
    ranked = sorted(found.items(), key=lambda kv: -kv[1][0])
    return [(rid, e) for rid, (_, e) in ranked[:k]]


def retrieve_modelling_entries(
    memory: Store | None, statement: str, k: int = 4
) -> list[tuple[str, ExperienceEntry]]:
    """Up to ``k`` modelling lessons for a statement (tag ``modelling``), best first."""
    if memory is None or k < 1:
        return []
    tags = [AGENT, MODELLING, *([CURATED_TAG] if has_curated(memory) else [])]
    out: list[tuple[str, ExperienceEntry]] = []
    for hit in memory.search("modelling model " + statement[:400], k=k, kind="experience",
                             agent=AGENT, tags=tags):  # fmt: skip
        try:
            out.append((hit.record.id, entry_from_experience(hit.record)))
        except MemoryStoreError:
            continue
    return out


# ----------------------------------------------------------------------------- modelling

_MODEL_RULES: tuple[tuple[str, str, str], ...] = (
    (
        "objective.uncertainty",
        "the model dropped (or changed) the uncertainty of the objective coefficients",
        "When the statement says the objective coefficients are uncertain, keep that set in "
        "the model as objective.uncertainty (the objective is valued at its worst case over "
        "it); never model the nominal objective alone.",
    ),
    (
        ".uncertainty",
        "an uncertainty set of a constraint was written wrongly (type, P, rho, delta/gamma, D/d)",
        "Write each set exactly as stated: the type named (a Bertsimas-Sim budget 'at most "
        "Gamma at once' is {type: budget, delta, gamma}, not a box); P is n x k with row i "
        "the movement of x_i's coefficient; polyhedra as D z <= d row by row.",
    ),
    (
        "lower|upper",
        "variable bounds were written wrongly",
        "Bounds: 'between l and u' gives lower l and upper u, 'fixed at v' gives lower = "
        "upper = v, 'at least l' only a lower bound, 'free' null.",
    ),
    (
        "",
        "the model differs from the statement (coefficients, senses or right-hand sides)",
        "Copy every coefficient, sense and right-hand side of the statement into the model, "
        "constraints in the statement's order, variables x1..xn as indices 0..n-1.",
    ),
)


def diagnose_model(fields: list[str]) -> list[ExperienceEntry]:
    """Modelling lessons from the model fields that differed from the ground truth.

    ``fields`` are paths (``objective.uncertainty``, ``constraints[2].uncertainty.P[4][0]``)
    without values: the training label of a text-only task during adaptation. A fixed rule
    table (first match per field), like ``diagnose_rules``.
    """
    entries: dict[str, ExperienceEntry] = {}
    for f in fields:
        for pattern, error, rule in _MODEL_RULES:
            if pattern and not any(
                f.startswith(p) or (p.startswith(".") and p in f) for p in pattern.split("|")
            ):
                continue
            e = ExperienceEntry(
                trigger=EntryTrigger(features=[MODELLING], description="modelling step"),
                error_pattern=error,
                corrective_rule=rule,
            )
            entries.setdefault(e.key(), e)
            break
    return list(entries.values())


# ----------------------------------------------------------------------------- rules

_RULES: dict[str, str] = {
    "box": (
        "For a row a^T x <= b with a = a_bar + P z, ||z||_inf <= rho, add the support term "
        "rho * ||P^T x||_1 to the left side: a_bar^T x + rho * cp.norm1(P.T @ x) <= b."
    ),
    "ellipsoidal": (
        "For a row with ||z||_2 <= rho, add rho * ||P^T x||_2 (a second-order cone): "
        "a_bar^T x + rho * cp.norm2(P.T @ x) <= b."
    ),
    "polyhedral": (
        "For a row with {z : D z <= d}, dualise the inner LP: introduce y >= 0 with "
        "D^T y = P^T x and use a_bar^T x + d^T y <= b."
    ),
    "budget": (
        "For a Bertsimas-Sim budget row (|z_j| <= 1, sum |z_j| <= gamma, a_j = a_bar_j + "
        "delta_j z_j) introduce dual variables lam >= 0, mu >= 0 with lam + mu_j >= "
        "delta_j |x_j| and use a_bar^T x + gamma lam + sum_j mu_j <= b."
    ),
    "intersection": (
        "For an intersection of sets, split w = P^T x = sum_i w_i and add the sum of the "
        "parts' supports (dual norms: 1 <-> inf, 2 <-> 2; polyhedra by LP duality)."
    ),
}


def _row_set(instance: ROInstance, row: int) -> tuple[str | None, str]:
    cons = instance.problem.constraints
    if row >= len(cons) or cons[row].uncertainty is None:
        return None, "<="
    return cons[row].uncertainty.type, cons[row].sense  # type: ignore[union-attr]


def diagnose_rules(instance: ROInstance, trajectory: list[Attempt]) -> list[ExperienceEntry]:
    """Rule-based diagnosis of the failed attempts: verifier reasons -> fixed entries.

    A hand-written table (see the module docstring), not learning: each reason class
    maps to the textbook dualisation rule of the failing row's set type.
    """
    entries: dict[str, ExperienceEntry] = {}

    def add(e: ExperienceEntry) -> None:
        entries.setdefault(e.key(), e)

    for att in trajectory:
        if att.passed:
            continue
        infeasible_rows = False
        for reason in att.reasons:
            m = re.search(r"not robust-feasible: row (\d+)", reason)
            if m:
                infeasible_rows = True
                kind, sense = _row_set(instance, int(m.group(1)))
                if kind is None:
                    continue
                feats = ["ge_rows"] if sense == ">=" else []
                rule = _RULES[kind]
                if sense == ">=":
                    rule += (
                        " A '>=' row is the '<=' row of (-a, -b): negate a, b AND P before "
                        "adding the support term."
                    )
                add(
                    ExperienceEntry(
                        trigger=EntryTrigger(
                            set_types=[kind],
                            features=feats,
                            description=f"uncertain {sense} row with {kind} uncertainty",
                        ),
                        error_pattern=(
                            f"not robust-feasible in a {kind} row: the counterpart was too "
                            "loose (support term missing, wrong norm or wrong sign)"
                        ),
                        corrective_rule=rule,
                        example=support_rule(kind),
                    )
                )
            elif reason.startswith("candidate program failed") or reason.startswith(
                "candidate program timed out"
            ):
                add(
                    ExperienceEntry(
                        trigger=EntryTrigger(description="program crashed"),
                        error_pattern="the program raised before printing a result: "
                        + _error_class(reason),
                        corrective_rule=(
                            "Read instance.json exactly as the I/O protocol says: bounds may be "
                            "null, 'uncertainty' may be null, budget sets have 'delta'/'gamma' "
                            "and no 'P'; use cvxpy atoms (cp.norm1, cp.norm2, cp.abs) on affine "
                            "expressions only."
                        ),
                    )
                )
            elif reason.startswith("candidate output has no final JSON line"):
                add(
                    ExperienceEntry(
                        trigger=EntryTrigger(description="output format"),
                        error_pattern="no final JSON line with x and objective",
                        corrective_rule=(
                            "Print exactly one JSON object as the LAST stdout line: "
                            'print(json.dumps({"x": x.value.tolist(), "objective": float(prob.value)})).'
                        ),
                    )
                )
            elif reason.startswith("candidate reported objective inconsistent"):
                add(
                    ExperienceEntry(
                        trigger=EntryTrigger(description="reported objective"),
                        error_pattern="reported objective differs from the robust objective at x",
                        corrective_rule=(
                            "Report the robust (worst-case) objective at x: prob.value of the "
                            "counterpart including the objective constant and, for an uncertain "
                            "objective, its worst-case term."
                        ),
                    )
                )
            elif reason.startswith("infeasible nominal constraints"):
                what = "SOC constraints" if "SOC" in reason else "bounds and certain rows"
                feats = ["soc"] if "SOC" in reason else []
                add(
                    ExperienceEntry(
                        trigger=EntryTrigger(features=feats, description="nominal feasibility"),
                        error_pattern=f"violated {what} of the nominal model",
                        corrective_rule=(
                            "Keep every nominal constraint: variable bounds (null = unbounded), "
                            "certain rows with their sense, and ||A x + b||_2 <= c^T x + d cones."
                        ),
                    )
                )
        objective_off = any(r.startswith("objective mismatch") for r in att.reasons)
        if objective_off and not infeasible_rows:
            # robust-feasible but not optimal: too conservative, or the objective's
            # uncertainty was mishandled
            if instance.problem.objective.uncertainty is not None:
                kind = instance.problem.objective.uncertainty.type
                add(
                    ExperienceEntry(
                        trigger=EntryTrigger(
                            set_types=[kind],
                            features=["uncertain_objective"],
                            description="uncertain objective coefficients",
                        ),
                        error_pattern="robust objective wrong: worst case of c = c_bar + P z "
                        "not optimised",
                        corrective_rule=(
                            "min: add sup_z (P^T x)^T z to the objective; max: subtract "
                            "sup_z (-P^T x)^T z, with the set's support rule."
                        ),
                        example=support_rule(kind),
                    )
                )
            else:
                for kind in sorted(set(instance.set_types)):
                    add(
                        ExperienceEntry(
                            trigger=EntryTrigger(set_types=[kind], description="too conservative"),
                            error_pattern=(
                                f"robust-feasible but objective worse than the optimum with "
                                f"{kind} sets: the counterpart was too conservative"
                            ),
                            corrective_rule=_RULES[kind]
                            + " Use exactly this set's support, not a larger set's.",
                            example=support_rule(kind),
                        )
                    )
    return list(entries.values())


def _error_class(reason: str) -> str:
    m = re.search(r"(\w+(?:Error|Exception))", reason)
    return m.group(1) if m else "error"


# ----------------------------------------------------------------------------- LLM

_REFLECT_SYSTEM = (
    "You diagnose failed attempts at writing robust-optimization counterparts in cvxpy "
    "and distill ONE reusable lesson for future, different instances. Do not copy "
    "numbers from the instance; the rule must be general."
)


def reflection_messages(instance: ROInstance, trajectory: list[Attempt]) -> list[dict[str, str]]:
    """The reflection prompt: instance structure, attempts and verdict reasons (no answer)."""
    lines = [
        f"Instance structure: set types {sorted(set(instance.set_types))}, "
        f"features {instance.features or ['none']}.",
        instance.description,
        "",
        "Failed trajectory:",
    ]
    for att in trajectory:
        status = "ACCEPTED" if att.passed else "REJECTED"
        lines.append(f"Attempt {att.index} ({status}):\n```python\n{att.code.strip()[:3000]}\n```")
        reasons = redact_reasons(att.reasons[:5])
        if reasons:  # they may quote the program's own output: shown as data
            lines += ["- verifier (reasons quoted below):", quote_untrusted("\n".join(reasons))]
    lines.append(
        "\nWrite the lesson as JSON: trigger (set_types, features, description), "
        "error_pattern, corrective_rule, example (a short generic cvxpy snippet)."
    )
    return [
        {"role": "system", "content": _REFLECT_SYSTEM},
        {"role": "user", "content": "\n".join(lines)},
    ]


def diagnose_llm(
    llm: LLM, instance: ROInstance, trajectory: list[Attempt]
) -> tuple[ExperienceEntry, int, int]:
    """One structured-output LLM call reflecting on the failed trajectory.

    Returns the entry, the provider calls it took (1 + schema re-asks) and its tokens.
    """
    reply = llm.complete(reflection_messages(instance, trajectory), schema=ExperienceEntry)
    if not isinstance(reply.parsed, ExperienceEntry):
        raise StructuredOutputError(f"{llm.model}: reflection did not parse into ExperienceEntry")
    return reply.parsed, 1 + int(reply.reasks), int(reply.record.tokens)
