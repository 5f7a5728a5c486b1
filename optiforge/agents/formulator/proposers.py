"""The formulator's two writers: the LLM (reads the description, writes a search space and
picks an optimizer, re-asked on an invalid one) and the fixed default (offline)."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from optiforge.agents.formulator.problem import llm_schema, to_formulation
from optiforge.agents.kit import RunContext
from optiforge.solvers.blackbox.portfolio import PORTFOLIO

SYSTEM = (
    "You formulate black-box optimization problems: from a description you choose which "
    "knobs to search, their ranges and scales (log for quantities spanning orders of "
    "magnitude), and an optimizer suited to the budget."
)


def prompt(task: Any) -> list[dict[str, Any]]:
    options = ", ".join(PORTFOLIO)
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": f"{task.description}\n\nOptimizers: {options}. Reply as JSON "
         "with variables (name, kind float|int|categorical, low, high, log, choices), method and "
         "a short rationale. Search only the knobs that matter; a knob you leave out keeps its "
         "default."},
    ]  # fmt: skip


def llm_formulation(
    task: Any, ctx: RunContext, max_reasks: int, max_variables: int
) -> tuple[dict[str, Any], int]:
    """``(formulation, re-asks)`` from the LLM; ``ValueError`` when it never gave a valid one."""
    assert ctx.llm is not None
    knobs = task.knobs
    schema = llm_schema(sorted(knobs), max_variables)
    messages = prompt(task)
    error = ""
    for attempt in range(max_reasks + 1):
        reply = ctx.llm.complete(messages, schema=schema)
        try:
            return to_formulation(reply.parsed, knobs), attempt
        except (ValueError, ValidationError) as e:
            error = _why(e)
            ctx.tracer.event("formulation_invalid", attempt=attempt, error=error)
            messages = [*messages, {"role": "assistant", "content": reply.text or ""},
                        {"role": "user", "content": f"That formulation is invalid: {error}. Fix it."}]  # fmt: skip
    raise ValueError(f"no valid formulation after {max_reasks + 1} replies: {error}")


def _why(e: Exception) -> str:
    """One line the model can act on: the first invalid field and why."""
    if isinstance(e, ValidationError):
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        return f"{where}: {str(err['msg']).removeprefix('Value error, ')}"[:300]
    return str(e).splitlines()[0][:300]
