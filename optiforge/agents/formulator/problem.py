"""What the formulator writes: a formulation (a ``SearchSpace`` and an optimizer), and the
shape the LLM is asked for (its variable names an enum of the system's knobs)."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from optiforge.solvers.blackbox import PORTFOLIO, SearchSpace

Scalar = str | int | float | bool


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
    """The LLM's reply as a formulation; ``ValueError`` naming what is wrong."""
    variables = []
    for v in parsed.variables:
        d: dict[str, Any] = {"kind": v.kind, "name": v.name}
        if v.kind == "categorical":
            d["choices"] = list(v.choices or knobs[v.name].get("choices") or [])
        else:
            if v.low is None or v.high is None:
                raise ValueError(f"{v.name}: a {v.kind} variable needs low and high")
            low, high = v.low, v.high
            if v.kind == "int":  # an integer range written with fractional bounds: the ints in it
                low, high = math.ceil(low - 1e-9), math.floor(high + 1e-9)
            d.update(low=low, high=high, log=v.log)
        variables.append(d)
    space = SearchSpace.model_validate({"variables": variables})
    return {"space": space.model_dump(mode="json"), "method": str(parsed.method)}
