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

With an LLM, ``llm_plan`` asks for the plan with a schema of one variant per applicable
method: ``optimizer`` that method's name, ``hparams`` exactly its hyperparameters, each an
enum of points of its range (``grid``), so a grammar-constrained model can neither name
another method's hyperparameter nor leave a range; a reply the catalogue still refuses
(``task.check_plan``) is re-asked with the reason (``kit.ask.ask_valid``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal, Union

from pydantic import BaseModel, ConfigDict, RootModel, create_model

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


def allowed(task: TrainPlanTask, optimizer: str | None) -> dict[str, dict[str, Any]]:
    """The task's options, or only ``optimizer`` (``FormulatorConfig.optimizer``);
    ``ValueError`` naming the applicable ones when it is not one of them."""
    options = task.options
    if not options:
        raise ValueError(f"no catalogue method applies to a {task.problem_kind} problem")
    if optimizer is None:
        return options
    if optimizer not in options:
        why = task.check_plan({"optimizer": optimizer}) or "not applicable"
        raise ValueError(f"agent.optimizer={optimizer}: {why}")
    return {optimizer: options[optimizer]}


def heuristic_plan(task: TrainPlanTask, optimizer: str | None = None) -> dict[str, Any]:
    """The rule-based plan (see the module doc), with a ``rationale``; ``optimizer``: use
    that method (only its hyperparameters are chosen)."""
    options = allowed(task, optimizer)
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


def grid(h: dict[str, Any]) -> tuple[float, ...]:
    """The values the LLM may write for a hyperparameter of range ``[low, high]``: on a log
    range the 1-3-10 steps inside it, else 5 evenly spaced points; with the default and
    both ends (rounded to 3 significant digits). An enum, so a grammar-constrained decoder
    cannot write a value outside the range (a free number it could: a schema's bounds on
    floats are checked only after the reply)."""
    low, high, default = float(h["low"]), float(h["high"]), float(h["default"])
    values = {low, high, default}
    if h.get("log") and low > 0:
        k = math.floor(math.log10(low))
        while 10**k <= high:
            values |= {v for v in (10.0**k, 3 * 10.0**k) if low <= v <= high}
            k += 1
    else:
        values |= {low + (high - low) * i / 4 for i in range(5)}
    if h.get("kind") == "int":
        values = {float(round(v)) for v in values}
    return tuple(
        sorted({float(f"{v:.3g}") for v in values if low <= float(f"{v:.3g}") <= high} | {default})
    )


def plan_schema(
    options: dict[str, dict[str, Any]],
    *,
    key: str = "optimizer",
    title: str = "TrainPlan",
    fields: Callable[[str, dict[str, Any]], dict[str, Any]] | None = None,
) -> type[BaseModel]:
    """The reply's shape: one variant per applicable method, ``{key: NAME, ...fields,
    "hparams": {...}}`` whose ``hparams`` are exactly that method's, each an enum of
    ``grid`` values inside its range (a constrained decoder can write nothing else).

    fields: per method (name, option) the further pydantic fields of its variant, between
    the name and ``hparams`` (the ``rl`` plans' posed problem); none for a training plan."""
    variants: list[Any] = []
    for name, opt in options.items():
        hp_fields: dict[str, Any] = {k: (Literal[grid(h)], ...) for k, h in opt["hparams"].items()}
        slug = "".join(c if c.isalnum() else "_" for c in name)
        hparams: Any = create_model(f"HParams_{slug}", __config__=ConfigDict(extra="forbid"), **hp_fields)  # fmt: skip
        more = fields(name, opt) if fields is not None else {}
        spec: dict[str, Any] = {key: (Literal[name], ...), **more, "hparams": (hparams, ...)}
        variants.append(create_model(f"Plan_{slug}", __config__=ConfigDict(extra="forbid"), **spec))  # fmt: skip
    union: Any = variants[0] if len(variants) == 1 else Union[tuple(variants)]  # noqa: UP007
    model: type[BaseModel] = type(title, (RootModel[union],), {"__module__": __name__})
    return model


def plan_prompt(
    task: TrainPlanTask, options: dict[str, dict[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """The request: the description, then each offered method with its grid of values."""
    lines = [task.description, "", "Optimizers for this problem and their hyperparameters:"]
    for name, opt in (task.options if options is None else options).items():
        hps = ", ".join(f"{k} one of {', '.join(f'{v:g}' for v in grid(h))} (default {h['default']:g})"
                        for k, h in opt["hparams"].items())  # fmt: skip
        lines.append(f"- {name}: {opt['description']}. {hps}")
    lines.append("Reply as JSON: optimizer (one of those names) and hparams (a value for each of "
                 "that optimizer's hyperparameters, one of the listed values).")  # fmt: skip
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def llm_plan(
    task: TrainPlanTask, ctx: RunContext, max_reasks: int, optimizer: str | None = None
) -> tuple[dict[str, Any], int]:
    """``(plan, re-asks)`` from the LLM; ``ValueError`` when it never gave a valid one.
    ``optimizer``: the only method the schema offers."""
    options = allowed(task, optimizer)

    def to_plan(parsed: dict[str, Any]) -> dict[str, Any]:
        return {"optimizer": str(parsed["optimizer"]), "hparams": dict(parsed["hparams"])}

    return ask_plan(ctx, plan_prompt(task, options), plan_schema(options), to_plan,
                    task.check_plan, max_reasks)  # fmt: skip


def ask_plan(ctx: RunContext, messages: list[dict[str, Any]], schema: type[BaseModel],
             to_plan: Callable[[dict[str, Any]], dict[str, Any]],
             check: Callable[[dict[str, Any]], str | None], max_reasks: int,
             ) -> tuple[dict[str, Any], int]:  # fmt: skip
    """Ask ``ctx.llm`` for a plan of ``schema``, turn the parsed reply into a plan
    (``to_plan``), re-ask with ``check``'s one-line reason while it is invalid:
    ``(plan, re-asks)``; ``ValueError`` when no reply was valid."""
    assert ctx.llm is not None

    def parse(reply: Completion) -> dict[str, Any]:
        if reply.parsed is None:
            raise Invalid("the reply is not JSON of the asked shape")
        plan = to_plan(reply.parsed.model_dump())
        why = check(plan)
        if why:
            raise Invalid(why)
        return plan

    def invalid(attempt: int, error: str) -> None:
        ctx.tracer.event("plan_invalid", attempt=attempt, error=error)

    asked = ask_valid(ctx.llm, messages, parse, tries=max_reasks + 1, params={"schema": schema},
                      reask=lambda error: f"That plan is invalid: {error}. Fix it.",
                      on_invalid=invalid, stop_on=())  # fmt: skip
    if not asked.valid or asked.value is None:
        raise ValueError(f"no valid plan after {max_reasks + 1} replies: {asked.errors[-1]}")
    return asked.value, asked.asks - 1
