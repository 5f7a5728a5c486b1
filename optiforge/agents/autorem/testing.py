"""Scripted base models for AutoREM (simulations, labelled so): ``scripted_ro_model("A")``,
and ``SimulatedReformulator`` (an oracle writer for AutoSaddler's AutoREM target).

A ``ScriptedROModel`` answers AutoREM's three kinds of request with fixed, seeded rules,
so the memory machinery (reflection, retrieval, consolidation, pruning, transfer between
base models) is exercised and measured without a real model. It is NOT a language model:

- modelling (``schema=ModelReply``): it reads the statement's model sheet with the
  reference modeller (a parser) and then applies its profile's modelling gaps (model A
  drops the objective's uncertainty) unless a retrieved lesson states the fix;
- writing code: for each set type in its model it writes the support rule it
  *believes* (its profile: A writes a 2-norm for boxes, the sum of deviations for
  budgets, ...); a retrieved lesson whose example is a support rule for that type
  replaces the belief with that rule, right or wrong. After a rejection it writes the
  textbook rules with probability ``p_repair`` (seeded by model, task and attempt);
- reflection (``schema=ExperienceEntry``): from its own trajectory. If a later attempt
  was accepted, the lesson is the rule that changed (correct); if none was, the lesson
  is a seeded guess (another rule for one of the set types, often wrong) - so lessons
  from unsolved trajectories are noise that pruning must remove.

Two profiles with different gaps (``A``, ``B``) are the two base models of the transfer
measurement: a memory built with A is used by B.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from optiforge.agents.autorem.experience import EntryTrigger, ExperienceEntry
from optiforge.agents.autorem.modeller import reference_modeller
from optiforge.agents.autorem.proposers import MODEL_MARKER, SUPPORT_RULES, counterpart_program
from optiforge.solvers.robust.model import ROProblem, parse_problem

# Wrong support rules a model may believe (same shape as ``SUPPORT_RULES``' branches).
WRONG_RULES: dict[str, dict[str, str]] = {
    "box": {
        "l2": (
            '    if t == "box":  # believed: sup over the box is rho ||w||_2\n'
            '        return u["rho"] * cp.norm2(w)\n'
        ),
        "nominal": (
            '    if t == "box":  # believed: a box needs no extra term\n        return 0\n'
        ),
    },
    "ellipsoidal": {
        "l1": (
            '    if t == "ellipsoidal":  # believed: sup over the ball is rho ||w||_1\n'
            '        return u["rho"] * cp.norm1(w)\n'
        ),
    },
    "budget": {
        "abs-sum": (
            '    if t == "budget":  # believed: every coefficient deviates at once\n'
            "        return cp.norm1(w)\n"
        ),
        "gamma-max": (
            '    if t == "budget":  # believed: gamma times the largest deviation\n'
            '        return u["gamma"] * cp.norm_inf(w)\n'
        ),
    },
    "polyhedral": {
        "nominal": (
            '    if t == "polyhedral":  # believed: the nominal row is enough\n        return 0\n'
        ),
    },
    "intersection": {
        "first-part": (
            '    if t == "intersection":  # believed: the first part alone bounds z\n'
            '        part = u["parts"][0]\n'
            '        if part["type"] == "norm_ball":\n'
            '            dual = {1: "inf", 2: 2, "inf": 1}[part["norm"]]\n'
            '            return part["rho"] * cp.norm(w, dual)\n'
            '        D = np.asarray(part["D"], dtype=float)\n'
            "        y = cp.Variable(D.shape[0], nonneg=True)\n"
            "        aux.append(D.T @ y == w)\n"
            '        return np.asarray(part["d"], dtype=float) @ y\n'
        ),
    },
}
OBJECTIVE_FIX = "keep that set in the model as objective.uncertainty"
"""The phrase of the modelling lesson (``experience.diagnose_model``) that fixes gap A."""


def variants(set_type: str) -> dict[str, str]:
    """Every rule a scripted model may write for ``set_type``: ``correct`` + the wrong ones."""
    return {"correct": SUPPORT_RULES[set_type], **WRONG_RULES.get(set_type, {})}


@dataclass(frozen=True)
class Profile:
    """A scripted base model's beliefs."""

    name: str
    beliefs: dict[str, str] = field(default_factory=dict)
    """Set type -> the rule variant it writes unprompted (absent: ``correct``)."""
    drops_objective_uncertainty: bool = False
    """Modelling gap: the objective's uncertainty is left out of the model."""
    p_repair: float = 0.5
    """Probability that a repair after a rejection writes the textbook rules."""


PROFILES: dict[str, Profile] = {
    "A": Profile(
        "scripted-A",
        beliefs={
            "box": "l2",
            "budget": "abs-sum",
            "polyhedral": "nominal",
            "intersection": "first-part",
        },
        drops_objective_uncertainty=True,
    ),  # fmt: skip
    "B": Profile(
        "scripted-B",
        beliefs={
            "box": "nominal",
            "ellipsoidal": "l1",
            "polyhedral": "nominal",
            "intersection": "first-part",
        },
    ),  # fmt: skip
}


def _draw(*key: Any) -> random.Random:
    digest = hashlib.sha256(json.dumps(key, default=str).encode()).hexdigest()
    return random.Random(int(digest[:16], 16))


def used_variant(code: str, set_type: str) -> str | None:
    """Which rule for ``set_type`` a program (or prompt) contains first, if any."""
    found = [
        (code.find(snippet.strip()), name)
        for name, snippet in variants(set_type).items()
        if snippet.strip() in code
    ]
    return min(found)[1] if found else None


class ScriptedROModel:
    """The scripted base model (see the module docstring); ``llm()`` wraps it as an LLM."""

    def __init__(self, profile: Profile, seed: int = 0) -> None:
        self.profile, self.seed = profile, seed

    def llm(self) -> Any:
        from optiforge.testing.scripted import FunctionLLM

        return FunctionLLM(self, model=self.profile.name)

    def __call__(self, messages: list[dict[str, Any]], tools: Any, schema: Any) -> Any:
        name = getattr(schema, "__name__", "")
        if name == "ModelReply":
            return self._model(messages)
        if name == "ExperienceEntry":
            return self._reflect(messages)
        return self._write(messages)

    # -- modelling
    def _model(self, messages: list[dict[str, Any]]) -> str:
        user = str(messages[-1]["content"])
        statement = user.removeprefix("Problem statement:\n").split("\nLessons from earlier", 1)[0]
        problem = reference_modeller(statement)
        if self.profile.drops_objective_uncertainty and OBJECTIVE_FIX not in user:
            data = problem.model_dump(mode="json")
            data["objective"]["uncertainty"] = None
            problem = parse_problem(data)
        return problem.to_json()

    # -- code
    @staticmethod
    def _problem(user: str) -> ROProblem:
        if MODEL_MARKER in user:
            return parse_problem(user.split(MODEL_MARKER, 1)[1].strip().splitlines()[0])
        line = user.split("Problem JSON (instance.json):\n", 1)[1].splitlines()[0]
        return parse_problem(line)

    def _write(self, messages: list[dict[str, Any]]) -> str:
        users = [str(m["content"]) for m in messages if m["role"] == "user"]
        problem = self._problem(users[0])
        repairs = sum(1 for u in users if u.startswith("The verifier rejected"))
        fixed = repairs > 0 and (
            _draw(self.profile.name, self.seed, users[0][:300], repairs).random()
            < self.profile.p_repair
        )
        lessons = (
            users[0].split("Lessons from earlier failures", 1)[1]
            if "Lessons from" in users[0]
            else ""
        )
        rules: dict[str, str] = {}
        for t in sorted(set(problem.set_types())):
            belief = "correct" if fixed else self.profile.beliefs.get(t, "correct")
            told = used_variant(lessons, t) if lessons else None
            rules[t] = variants(t)[told or belief]
        return f"```python\n{counterpart_program(problem, rules=rules)}```"

    # -- reflection
    def _reflect(self, messages: list[dict[str, Any]]) -> str:
        text = str(messages[-1]["content"])
        m = re.search(r"set types \[(.*?)\]", text)
        types = re.findall(r"'(\w+)'", m.group(1)) if m else []
        blocks = re.findall(
            r"Attempt \d+ \((ACCEPTED|REJECTED)\):\n```python\n(.*?)\n```", text, re.S
        )
        entry: ExperienceEntry | None = None
        accepted = [code for status, code in blocks if status == "ACCEPTED"]
        rejected = [code for status, code in blocks if status == "REJECTED"]
        if accepted and rejected:
            for t in types:
                good, bad = used_variant(accepted[0], t), used_variant(rejected[0], t)
                if good and good != bad:
                    entry = self._entry(t, good, f"the {bad} rule for {t} sets was rejected")
                    break
        elif rejected and types:
            rng = _draw(self.profile.name, self.seed, "reflect", text[:400])
            t = rng.choice(sorted(set(types)))
            last = used_variant(rejected[-1], t)
            guess = rng.choice(sorted(v for v in variants(t) if v != last) or ["correct"])
            entry = self._entry(t, guess, f"the {last} rule for {t} sets was rejected (unsolved)")
        if entry is None:
            entry = ExperienceEntry(
                trigger=EntryTrigger(description="any failed program"),
                error_pattern="the program was rejected",
                corrective_rule="Re-read the statement and check the program before answering.",
            )
        return entry.model_dump_json()

    @staticmethod
    def _entry(set_type: str, variant: str, error: str) -> ExperienceEntry:
        return ExperienceEntry(
            trigger=EntryTrigger(set_types=[set_type], description=f"rows with {set_type} sets"),
            error_pattern=error,
            corrective_rule=f"For {set_type} uncertainty use this support term ({variant}).",
            example=variants(set_type)[variant],
        )


def scripted_ro_model(profile: str = "A", seed: int = 0) -> Any:
    """The scripted base model ``profile`` (``A`` or ``B``) as an LLM (a ``FunctionLLM``)."""
    return ScriptedROModel(PROFILES[profile], seed).llm()


def _uniform(*salt: Any) -> float:
    """A uniform draw in [0, 1) that is a function of ``salt`` (numpy's generator seeded by
    its hash, as the terminal agent's simulated models draw)."""
    h = hashlib.sha256(json.dumps([str(x) for x in salt]).encode()).hexdigest()
    return float(np.random.default_rng(int(h[:16], 16)).random())


@functools.cache
def _autoro_programs() -> dict[str, str]:
    from optiforge.evals.registry import get_benchmark

    bench = get_benchmark("autoro")
    out: dict[str, str] = {}
    for split in ("dev", "heldout"):
        for t in bench.tasks(split):
            out[t.description] = counterpart_program(t.instance.problem)
    return out


class SimulatedReformulator:
    """A simulated AutoREM writer (an oracle like ``SimulatedShellModel``, labelled so):
    it knows the reference counterpart program of every ``autoro`` dev/heldout task. Its
    first draft has a syntax error with probability ``p_broken``; after the verifier
    rejects a draft it answers the right program with probability ``p_repair`` (else
    another broken one); when it may call ``run_python`` it runs each draft first and
    answers the right program when the draft fails. Draws depend on (seed, task, attempt)."""

    def __init__(self, seed: int = 0, *, p_broken: float = 0.7, p_repair: float = 0.4) -> None:
        self.seed, self.p_broken, self.p_repair = seed, p_broken, p_repair

    def llm(self) -> Any:
        from optiforge.testing.scripted import FunctionLLM

        return FunctionLLM(self, model=f"simulated-reformulator-s{self.seed}")

    def __call__(self, messages: list[dict[str, Any]], tools: Any, schema: Any) -> Any:
        users = [str(m["content"]) for m in messages if m["role"] == "user"]
        good = next(
            (p for d, p in _autoro_programs().items() if users and users[0].startswith(d)), None
        )
        if good is None:
            return "```python\nprint('no idea')\n```"
        repairs = sum(1 for u in users if u.startswith("The verifier rejected"))
        p = self.p_broken if repairs == 0 else 1.0 - self.p_repair
        broken = _uniform("reformulator", self.seed, users[0][:200], repairs) < p
        text = (
            good.replace("import cvxpy as cp", "import cvxpy as cp\nx = = 1", 1) if broken else good
        )
        results = [str(m["content"]) for m in messages if m["role"] == "tool"]
        if tools and not results and broken:
            return {
                "content": None,
                "tool_calls": [{"name": "run_python", "arguments": {"code": text}}],
            }
        if results and '"returncode": 0' not in results[-1]:
            text = good
        return f"```python\n{text}\n```"


def simulated_reformulator(seed: int = 0, **rates: float) -> Any:
    return SimulatedReformulator(seed, **rates).llm()


__all__ = [
    "PROFILES",
    "WRONG_RULES",
    "Profile",
    "ScriptedROModel",
    "SimulatedReformulator",
    "scripted_ro_model",
    "simulated_reformulator",
    "variants",
]
