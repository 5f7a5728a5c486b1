"""What the formulator writes: a formulation (a ``SearchSpace`` and an optimizer), and the
shape the LLM is asked for (its variable names an enum of the system's knobs)."""

from __future__ import annotations

import math
from typing import Any, Literal, TypedDict

from pydantic import BaseModel, ConfigDict, Field, create_model

from optiforge.solvers.blackbox import PORTFOLIO, SearchSpace

Scalar = str | int | float | bool


class FormulatorState(TypedDict, total=False):
    """The formulator graph's state (serializable only)."""

    formulation: dict[str, Any]
    by: str
    """Who wrote the formulation: ``llm``, ``heuristic`` or ``default``."""
    reasks: int
    error: str
    pilot: dict[str, Any]
    """What the revision step did: ``{"evals", "best"}`` or ``{"evals": 0, "error"}``."""
    plan: dict[str, Any]
    """On a ``train`` task: the training plan ``{"optimizer", "hparams"}``."""
    rationale: str


def llm_schema(knobs: list[str], max_variables: int) -> type[BaseModel]:
    """The formulation schema for a system with ``knobs`` (names and method are enums)."""
    fields_var: dict[str, Any] = {
        "name": (Literal[tuple(knobs)], ...),
        "kind": (Literal["float", "int", "categorical"], ...),
        "low": (float | None, None),
        "high": (float | None, None),
        "log": (bool, False),
        "choices": (list[Scalar] | None, Field(default=None, max_length=16)),
    }
    var: Any = create_model("Variable", __config__=ConfigDict(extra="forbid"), **fields_var)
    fields: dict[str, Any] = {
        "variables": (list[var], Field(min_length=1, max_length=max_variables)),
        "method": (Literal[PORTFOLIO], ...),
        "rationale": (str, Field(default="", max_length=300)),
    }
    model: type[BaseModel] = create_model(
        "Formulation", __config__=ConfigDict(extra="forbid"), **fields
    )
    return model


def to_formulation(parsed: Any, knobs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The LLM's reply as a formulation; ``ValueError`` naming what is wrong.

    Read against the system's public knob API: a numeric knob keeps the type the API
    states (an int knob written as float is searched as int), an omitted bound is the
    knob's valid bound (the prompt says so), an integer range with fractional bounds keeps
    the integers in it, and a knob named twice keeps its first entry."""
    variables, seen = [], set()
    for v in parsed.variables:
        if v.name in seen:
            continue
        seen.add(v.name)
        knob = knobs[v.name]
        kind = knob["kind"] if v.kind != "categorical" and knob["kind"] != "categorical" else v.kind
        d: dict[str, Any] = {"kind": kind, "name": v.name}
        if kind == "categorical":
            d["choices"] = list(v.choices or knob.get("choices") or [])
        else:
            low = v.low if v.low is not None else knob.get("low")
            high = v.high if v.high is not None else knob.get("high")
            if low is None or high is None:
                raise ValueError(f"{v.name}: a {kind} variable needs low and high")
            if kind == "int":  # an integer range written with fractional bounds: the ints in it
                low, high = math.ceil(low - 1e-9), math.floor(high + 1e-9)
            d.update(low=low, high=high, log=v.log)
        variables.append(d)
    space = SearchSpace.model_validate({"variables": variables})
    return {"space": space.model_dump(mode="json"), "method": str(parsed.method)}
