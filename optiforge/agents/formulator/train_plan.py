"""The formulator on ``train`` tasks (``TrainPlanTask``): a training plan
``{"optimizer": NAME, "hparams": {...}}`` naming a catalogue method that applies to the
problem (``task.options``, the catalogue as data).

Offline, ``heuristic_plan`` applies stated rules to what the task declares (its problem
kind, ``facts`` and the applicable ``options``); it reads no data, no validation or
held-out score, and runs nothing:

- **method** by kind, the first of ``PREFERENCES[kind]`` the catalogue offers for this
  problem (methods built for that structure first, AdamW as the fall-back), else the first
  applicable option:
  ``lowrank``: ``imuon`` (intrinsic Muon: its rate does not depend on the factors'
  conditioning), then AdamW; ``bilevel``: ``bros`` then ``ma-soba`` (methods that actually
  learn the example weights), then AdamW (plain ERM, no cleaning); ``classify`` and ``lm``:
  AdamW (robust to the scale of each parameter).
- **learning rate** (a hyperparameter named ``lr``): the method's default times
  ``SMALL_MODEL_LR_FACTOR`` when the model is small (``n_params < SMALL_MODEL_PARAMS``) and the
  budget short (``steps <= SHORT_BUDGET_STEPS``), clipped to its range: catalogue defaults
  are set for large models and long runs, where a small step is safe; a model of a few
  thousand parameters trained for a few hundred steps tolerates, and needs, a larger one.
- every other hyperparameter: the method's default.

With an LLM, ``llm_plan`` asks for the plan with a schema whose ``optimizer`` is an enum of
the applicable methods and whose ``hparams`` fields are the hyperparameters those methods
have; a reply naming a hyperparameter its method lacks, or a value outside the range, is
refused with the reason (``task.check_plan``) and re-asked (``kit.ask.ask_valid``).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from optiforge.agents.kit import RunContext
from optiforge.agents.kit.ask import Invalid, ask_valid
from optiforge.evals.suites.train.protocol import TrainPlanTask
from optiforge.llm.types import Completion

PREFERENCES: dict[str, tuple[str, ...]] = {
    "lowrank": ("imuon", "adamw"),
    "bilevel": ("bros", "ma-soba", "adamw"),
    "classify": ("adamw",),
    "lm": ("adamw",),
}
"""Per problem kind, the methods the heuristic prefers, in order (names it does not find
among the task's options are skipped)."""
SMALL_MODEL_PARAMS = 100_000
SHORT_BUDGET_STEPS = 2_000
SMALL_MODEL_LR_FACTOR = 3.0


def heuristic_plan(task: TrainPlanTask) -> dict[str, Any]:
    """The rule-based plan (see the module doc), with a ``rationale``."""
    options = task.options
    if not options:
        raise ValueError(f"no catalogue method applies to a {task.problem_kind} problem")
    prefs = PREFERENCES.get(task.problem_kind, ("adamw",))
    name = next((n for n in prefs if n in options), next(iter(options)))
    why = [f"{name}: first of {', '.join(prefs)} offered for a {task.problem_kind} problem"]
    hp = {k: float(h["default"]) for k, h in options[name]["hparams"].items()}
    n_params, steps = float(task.facts.get("n_params", 0)), float(task.facts.get("steps", 0))
    if "lr" in hp and 0 < n_params < SMALL_MODEL_PARAMS and 0 < steps <= SHORT_BUDGET_STEPS:
        h = options[name]["hparams"]["lr"]
        hp["lr"] = min(max(hp["lr"] * SMALL_MODEL_LR_FACTOR, float(h["low"])), float(h["high"]))
        why.append(f"lr x{SMALL_MODEL_LR_FACTOR:g} (small model {n_params:.0f} params, "
                   f"{steps:.0f} steps)")  # fmt: skip
    return {"optimizer": name, "hparams": hp, "rationale": "; ".join(why)}


SYSTEM = (
    "You configure neural-network training: from a description of the problem you pick a "
    "training optimizer from a catalogue and set its hyperparameters for the step budget."
)


def plan_schema(options: dict[str, dict[str, Any]]) -> type[BaseModel]:
    """The reply's shape: ``optimizer`` an enum of ``options``, ``hparams`` the union of
    their hyperparameters (each optional), a short ``rationale``."""
    names: set[str] = set()
    for opt in options.values():
        names |= set(opt["hparams"])
    hp_fields: dict[str, Any] = {k: (float | None, None) for k in sorted(names)}
    hparams: Any = create_model("HParams", __config__=ConfigDict(extra="forbid"), **hp_fields)
    fields: dict[str, Any] = {
        "optimizer": (Literal[tuple(options)], ...),
        "hparams": (hparams, ...),
        "rationale": (str, Field(default="", max_length=300)),
    }
    model: type[BaseModel] = create_model("TrainPlan", __config__=ConfigDict(extra="forbid"), **fields)  # fmt: skip
    return model


def plan_prompt(task: TrainPlanTask) -> list[dict[str, Any]]:
    lines = [task.description, "", "Optimizers for this problem (hyperparameter: range, default):"]
    for name, opt in task.options.items():
        hps = ", ".join(f"{k} in [{h['low']:g}, {h['high']:g}]{' (log)' if h['log'] else ''} "
                        f"default {h['default']:g}" for k, h in opt["hparams"].items())  # fmt: skip
        lines.append(f"- {name}: {opt['description']}. {hps}")
    lines.append("Reply as JSON: optimizer (one of those names), hparams (only that optimizer's "
                 "hyperparameters, within their ranges; one you leave out keeps its default) and "
                 "a short rationale.")  # fmt: skip
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def llm_plan(task: TrainPlanTask, ctx: RunContext, max_reasks: int) -> tuple[dict[str, Any], int]:
    """``(plan, re-asks)`` from the LLM; ``ValueError`` when it never gave a valid one."""
    assert ctx.llm is not None
    schema = plan_schema(task.options)

    def parse(reply: Completion) -> dict[str, Any]:
        if reply.parsed is None:
            raise Invalid("the reply is not JSON of the asked shape")
        parsed = reply.parsed.model_dump()
        plan = {"optimizer": str(parsed["optimizer"]),
                "hparams": {k: v for k, v in parsed["hparams"].items() if v is not None}}  # fmt: skip
        why = task.check_plan(plan)
        if why:
            raise Invalid(why)
        return plan

    def invalid(attempt: int, error: str) -> None:
        ctx.tracer.event("plan_invalid", attempt=attempt, error=error)

    asked = ask_valid(ctx.llm, plan_prompt(task), parse, tries=max_reasks + 1,
                      params={"schema": schema},
                      reask=lambda error: f"That plan is invalid: {error}. Fix it.",
                      on_invalid=invalid, stop_on=())  # fmt: skip
    if not asked.valid or asked.value is None:
        raise ValueError(f"no valid plan after {max_reasks + 1} replies: {asked.errors[-1]}")
    return asked.value, asked.asks - 1
