"""The formulator on ``rl`` tasks (``RLPlanTask``): a control plan that poses the problem
the words describe and picks a catalogue RL method for it::

    {"kind": "cmdp", "limits": [2, 1], "method": "locu", "hparams": {...}}

Offline, ``heuristic_rl_plan`` applies stated rules to the words and what the task declares
(``facts``: the environment, its number of constraint costs; ``options``: the methods that
import here, as data); it reads no score, runs nothing and never sees the task's truth:

- **kind** from the words: a logged dataset / offline data -> ``mo-offline``; a bound that
  holds at every step ("never", "in any step", "at every step") -> ``statewise``; else
  ``cmdp`` (budgets on expected episode costs).
- **limits** (online): the numbers after "at most", in the order the words give them (the
  environment's cost order); a ``statewise`` "never" with no such numbers is the bound 0
  on each of the ``n_costs`` costs.
- **objective** (offline): "worse of" / "minimum of" / "max-min" -> ``min``; "worth a ...
  and b" / "weights a, b" -> ``linear:a,b``; "worst x%" / CVaR -> ``cvar:x/100``; "fair" /
  "balanced" -> ``fair``.
- **method** by kind (``PREFERENCES``): several constraints -> ``locu``; one -> ``cpo``;
  ``statewise`` -> ``ascpo``; ``mo-offline`` with a nonlinear objective -> ``aetdice``,
  linear -> ``linear-scalarization``; each followed by fall-backs, the first the task
  offers (imports here and solves the kind) is taken, else any offered method that solves it
  (none: ``ValueError``, the run fails with that line).
- every hyperparameter: the method's default.

With an LLM, ``llm_rl_plan`` asks for the plan with a schema of one variant per offered
method (``formulator.train_plan.plan_schema`` with the posed problem's fields: ``kind`` an
enum of the kinds that method solves, ``limits`` a list of numbers for online kinds,
``objective`` a string for ``mo-offline``; hyperparameters enums of their ``grid``; with the
system's declared cost count, ``limits`` has exactly that many entries, each one of the
numbers the words write or 0: ``stated_numbers``); a reply
the task refuses (``check_plan``: wrong numbers, a method not for the kind, ...) is re-asked
with the reason (``kit.ask.ask_valid``).
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import BaseModel, Field

from optiforge.agents.formulator.train_plan import ask_plan, grid, plan_schema
from optiforge.agents.kit import RunContext
from optiforge.evals.suites.rl.protocol import RLPlanTask

PREFERENCES: dict[str, tuple[str, ...]] = {
    "cmdp-multi": ("locu", "cpo", "pcpo", "ppo-lag"),
    "cmdp": ("cpo", "pcpo", "ppo-lag", "locu"),
    "statewise": ("ascpo", "cpo", "ppo-lag"),
    "mo-nonlinear": ("aetdice", "markov-dice", "linear-scalarization"),
    "mo-linear": ("linear-scalarization", "aetdice"),
}
"""Per posed structure, the methods the heuristic prefers, in order (names the task does
not offer are skipped): methods built for that structure first, the baselines after."""

OFFLINE = re.compile(r"\b(dataset|logged|offline)\b", re.I)
STATEWISE = re.compile(r"\b(never|in any step|at every step|in every step|at no step)\b", re.I)
_NUM = r"(\d+(?:\.\d+)?)"
AT_MOST = re.compile(rf"\bat most {_NUM}", re.I)
MIN_OBJ = re.compile(r"\b(worse of|worst of|minimum of|max-?min|maximin)\b", re.I)
LINEAR_OBJ = re.compile(r"\b(worth|weights?|weighted)\b", re.I)
CVAR_OBJ = re.compile(rf"\bworst {_NUM}\s*%|\bcvar\b", re.I)
FAIR_OBJ = re.compile(r"\b(fair|fairness|balanced|equitable)\b", re.I)


def read_words(text: str, n_costs: int) -> dict[str, Any]:
    """The posed problem read off the words: ``kind`` and ``limits`` or ``objective``,
    with a ``why`` per choice (module doc)."""
    why: list[str] = []
    if OFFLINE.search(text):
        kind, why = "mo-offline", ["mo-offline: the words name a logged dataset"]
        cvar = CVAR_OBJ.search(text)
        if MIN_OBJ.search(text):
            objective = "min"
        elif cvar:
            objective = f"cvar:{float(cvar.group(1)) / 100:g}" if cvar.group(1) else "cvar:0.1"
        elif LINEAR_OBJ.search(text):
            at = LINEAR_OBJ.search(text)
            assert at is not None
            sentence = re.split(r"\.(?:\s|$)", text[at.start() :])[0]
            weights = re.findall(r"\d+\.\d+|\d+", sentence)
            objective = "linear:" + ",".join(f"{float(w):g}" for w in weights)
        elif FAIR_OBJ.search(text):
            objective = "fair"
        else:
            objective = "linear:" + ",".join(["1"] * 2)
        why.append(f"objective {objective}")
        return {"kind": kind, "objective": objective, "why": why}
    numbers = [float(v) for v in AT_MOST.findall(text)]
    if STATEWISE.search(text):
        kind = "statewise"
        why.append("statewise: the bound holds at every step")
        limits = numbers if numbers else [0.0] * n_costs
    else:
        kind = "cmdp"
        why.append("cmdp: budgets on expected episode costs")
        limits = numbers
    why.append(f"limits {', '.join(f'{v:g}' for v in limits) or 'none'}")
    return {"kind": kind, "limits": limits, "why": why}


def allowed(task: RLPlanTask, method: str | None) -> dict[str, dict[str, Any]]:
    """The task's options that fit its data (offline methods for a logged dataset, online
    ones otherwise), or only ``method`` (``FormulatorConfig.rl_method``);
    ``ValueError`` naming the offered ones when it is not one of them."""
    options = task.options
    if not options:
        raise ValueError("no catalogue RL method imports here")
    if method is None:
        # a logged dataset (the task's public facts) rules out the online methods and no
        # dataset the offline ones; which online kind (cmdp or statewise) stays the LLM's
        offline = task.facts.get("data") == "offline"
        fit = {n: o for n, o in options.items() if ("mo-offline" in o["kinds"]) == offline}
        return fit or options
    if method not in options:
        raise ValueError(f"agent.rl_method={method}: not offered here (offered: {', '.join(options)})")  # fmt: skip
    return {method: options[method]}


def structure(posed: dict[str, Any]) -> str:
    """The key of ``PREFERENCES`` for a posed problem."""
    if posed["kind"] == "mo-offline":
        return "mo-linear" if str(posed["objective"]).startswith("linear") else "mo-nonlinear"
    if posed["kind"] == "cmdp":
        return "cmdp-multi" if len(posed["limits"]) >= 2 else "cmdp"
    return "statewise"


def heuristic_rl_plan(task: RLPlanTask, method: str | None = None) -> dict[str, Any]:
    """The rule-based plan (module doc), with a ``rationale``; ``method``: use that method
    (only the problem and its hyperparameters are chosen)."""
    options = allowed(task, method)
    posed = read_words(task.description, int(task.facts.get("n_costs", 0) or 0))
    why = posed.pop("why")
    key = structure(posed)
    solves = [n for n, o in options.items() if posed["kind"] in o["kinds"]]
    prefs = PREFERENCES[key]
    if not solves:
        raise ValueError(f"no offered RL method solves a {posed['kind']} problem (offered: {', '.join(options)})")  # fmt: skip
    name = next((n for n in prefs if n in solves), solves[0])
    why.append(f"{name}: first of {', '.join(prefs)} offered for {key}")
    hp = {k: float(h["default"]) for k, h in options[name]["hparams"].items()}
    return {**posed, "method": name, "hparams": hp, "rationale": "; ".join(why)}


SYSTEM = (
    "You formulate control problems for reinforcement learning: from a description in words "
    "you pose the problem (constrained with budgets on expected episode costs, constrained at "
    "every step, or offline multi-objective from a dataset), state its limits or objective as "
    "the words give them, and pick a method from a catalogue with its hyperparameters."
)

KIND_HELP = (
    "Kinds: cmdp (maximize return with E[episode cost_i] <= limits[i]), statewise (every "
    "step's cost_i <= limits[i]; 'never' is a bound of 0), mo-offline (from a logged dataset, "
    "maximize an objective of the return vector: linear:w1,...,wk, min, cvar:alpha, fair)."
)


def stated_numbers(text: str) -> tuple[float, ...]:
    """Every number the words write, and 0 ("never"): what a limit may be."""
    found = {float(v) for v in re.findall(r"(?<![\w.])\d+(?:\.\d+)?", text)}
    return tuple(sorted(found | {0.0}))


def rl_schema(options: dict[str, dict[str, Any]], n_costs: int | None = None,
              numbers: tuple[float, ...] | None = None) -> type[BaseModel]:  # fmt: skip
    """One variant per offered method: ``method``, the posed problem's fields (``kind`` an
    enum of the kinds it solves; ``limits``, for online kinds, exactly ``n_costs`` numbers
    (the system's declared cost count), each one of ``numbers`` (the words' own, so a
    constrained decoder cannot invent one); ``objective`` for ``mo-offline``), ``hparams``."""

    def fields(name: str, opt: dict[str, Any]) -> dict[str, Any]:
        kinds = tuple(opt["kinds"])
        out: dict[str, Any] = {"kind": (Literal[kinds], ...)}
        online = any(k != "mo-offline" for k in kinds)
        offline = "mo-offline" in kinds
        if online:
            item: Any = Literal[numbers] if numbers else float
            lo, hi = (n_costs, n_costs) if n_costs else (0, 8)
            default: Any = ... if not offline else []
            out["limits"] = (list[item], Field(default, min_length=lo, max_length=hi))
        if offline:
            out["objective"] = (str, Field(... if not online else "", max_length=40))
        return out

    return plan_schema(options, key="method", title="ControlPlan", fields=fields)


def rl_prompt(task: RLPlanTask, options: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """The request: the description, what the system declares, the kinds, then each offered
    method with the kinds it solves and its grid of values."""
    facts = ", ".join(f"{k}={v}" for k, v in task.facts.items())
    lines = [task.description, "", f"The system: {facts}.", KIND_HELP, "",
             "Methods and their hyperparameters:"]  # fmt: skip
    for name, opt in (task.options if options is None else options).items():
        hps = ", ".join(f"{k} one of {', '.join(f'{v:g}' for v in grid(h))} (default {h['default']:g})"
                        for k, h in opt["hparams"].items())  # fmt: skip
        lines.append(f"- {name} (solves {', '.join(opt['kinds'])}): {opt['description']}. {hps}")
    lines.append("Reply as JSON: method, kind, limits (one number per constraint cost, in the "
                 "order the description gives them; online kinds) or objective (mo-offline), "
                 "and hparams (a value for each of that method's hyperparameters, one of the "
                 "listed values).")  # fmt: skip
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n".join(lines)}]


def llm_rl_plan(
    task: RLPlanTask, ctx: RunContext, max_reasks: int, method: str | None = None
) -> tuple[dict[str, Any], int]:
    """``(plan, re-asks)`` from the LLM; ``ValueError`` when it never gave a valid one.
    ``method``: the only method the schema offers."""
    assert ctx.llm is not None
    options = allowed(task, method)
    n_costs = int(task.facts.get("n_costs", 0) or 0) or None
    schema = rl_schema(options, n_costs, stated_numbers(task.description))

    def to_plan(parsed: dict[str, Any]) -> dict[str, Any]:
        plan: dict[str, Any] = {"kind": str(parsed["kind"]), "method": str(parsed["method"])}
        if parsed["kind"] == "mo-offline":
            plan["objective"] = str(parsed.get("objective") or "")
        else:
            plan["limits"] = [float(v) for v in parsed.get("limits") or []]
        plan["hparams"] = dict(parsed["hparams"])
        return plan

    return ask_plan(ctx, rl_prompt(task, options), schema, to_plan, task.check_plan, max_reasks)
