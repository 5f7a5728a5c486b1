"""The formulator's LLM writer: reads the description, writes a search space and picks an
optimizer, re-asked on an invalid one (the offline writer: ``formulator.heuristic``)."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from optiforge.agents.formulator.problem import llm_schema, to_formulation
from optiforge.agents.kit import RunContext
from optiforge.agents.kit.ask import Invalid, ask_valid
from optiforge.evals.suites.bbowp.protocol import WordProblemTask
from optiforge.llm.types import Completion
from optiforge.solvers.blackbox.portfolio import PORTFOLIO

SYSTEM = (
    "You formulate black-box optimization problems: from a description you choose which "
    "knobs to search, their ranges and scales (log for quantities spanning orders of "
    "magnitude), and an optimizer suited to the budget."
)


def prompt(task: WordProblemTask) -> list[dict[str, Any]]:
    options = ", ".join(PORTFOLIO)
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{task.description}\n\nOptimizers: {options}. Reply as JSON "
         "with variables (name, kind float|int|categorical, low, high, log, choices), method and "
         "a short rationale. Search only the knobs that matter; a knob you leave out keeps its "
         "default; a bound you leave out is the knob's valid bound."},
    ]  # fmt: skip


def llm_formulation(
    task: WordProblemTask,
    ctx: RunContext,
    max_reasks: int,
    max_variables: int,
    messages: list[dict[str, Any]] | None = None,
) -> tuple[dict[str, Any], int]:
    """``(formulation, re-asks)`` from the LLM; ``ValueError`` when it never gave a valid one.

    ``messages``: the conversation to continue (default: the description's ``prompt``)."""
    assert ctx.llm is not None
    knobs = task.knobs
    schema = llm_schema(sorted(knobs), max_variables)
    messages = list(messages or prompt(task))

    def parse(reply: Completion) -> dict[str, Any]:
        try:
            return to_formulation(reply.parsed, knobs)
        except (ValueError, ValidationError) as e:
            raise Invalid(_why(e)) from e

    def invalid(attempt: int, error: str) -> None:
        ctx.tracer.event("formulation_invalid", attempt=attempt, error=error)

    asked = ask_valid(ctx.llm, messages, parse, tries=max_reasks + 1, params={"schema": schema},
                      reask=lambda error: f"That formulation is invalid: {error}. Fix it.",
                      on_invalid=invalid, stop_on=())  # fmt: skip
    if not asked.valid or asked.value is None:
        raise ValueError(f"no valid formulation after {max_reasks + 1} replies: {asked.errors[-1]}")
    return asked.value, asked.asks - 1


def _why(e: Exception) -> str:
    """One line the model can act on: the first invalid field and why."""
    if isinstance(e, ValidationError):
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        return f"{where}: {str(err['msg']).removeprefix('Value error, ')}"[:300]
    return str(e).splitlines()[0][:300]


def revision_prompt(
    task: WordProblemTask, form: dict[str, Any], evaluations: list[dict[str, Any]], reply: str
) -> list[dict[str, Any]]:
    """The conversation that asks for a revision: the first formulation (as the model's
    own reply) and what its pilot run found: the best configurations, how many failed,
    and the variables whose best values sit at an edge of their range."""
    seen = [e for e in evaluations if e.get("value") is not None]
    best = sorted(seen, key=lambda e: e["value"])[:5]
    left = task.budget - len(evaluations)
    lines = [f"A pilot run of that formulation ({form.get('method')}) made {len(evaluations)} "
             f"evaluations; {len(evaluations) - len(seen)} failed (no valid result)."]  # fmt: skip
    if best:
        lines.append("Best configurations (lower is better):")
        lines += [f"- {e['value']:.6g}: {json.dumps(e['config'], default=str)}" for e in best]
        edges = []
        for v in (form.get("space") or {}).get("variables", []):
            if v.get("low") is None:
                continue
            span = float(v["high"]) - float(v["low"])
            xs = [float(e["config"][v["name"]]) for e in best if v["name"] in e["config"]]
            if xs and span > 0:
                if max(xs) >= float(v["high"]) - 0.02 * span:
                    edges.append(f"{v['name']} at its upper bound {v['high']}")
                elif min(xs) <= float(v["low"]) + 0.02 * span:
                    edges.append(f"{v['name']} at its lower bound {v['low']}")
        if edges:
            lines.append("Best values at a range edge: " + "; ".join(edges) + ".")
    lines.append(f"Revise the formulation for the remaining {left} evaluations: widen a range "
                 "whose best values sit at an edge (within the knob's valid range), narrow ranges "
                 "around good regions, drop knobs that do not seem to matter, and pick the "
                 "optimizer for that budget. Reply as JSON in the same shape.")  # fmt: skip
    return [*prompt(task), {"role": "assistant", "content": reply},
            {"role": "user", "content": "\n".join(lines)}]  # fmt: skip
