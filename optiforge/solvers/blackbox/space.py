"""A formulated search space: typed variables (float, int, categorical), ranges, log
scales and conditionals, and its encoding as the unit cube the model-based optimizers
search.

A point ``u`` in ``[0, 1]^d`` (one coordinate per variable, in declaration order) decodes
to a configuration: a float is ``low + u (high - low)`` (in ``log`` space when ``log``), an
int the same rounded, a categorical the ``floor(u k)``-th of its ``k`` choices. A
variable with ``active_if`` is in the configuration only when its parent's value is one
of the listed ones (a conditional: e.g. ``gamma`` only for ``kernel: rbf``); inactive
coordinates are ignored.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

Scalar = str | int | float | bool


class _Var(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z_][A-Za-z0-9_.]{0,63}$")
    active_if: dict[str, list[Scalar]] | None = None
    """``{parent: [values]}``: the variable exists only when the parent takes one of them."""


class FloatVar(_Var):
    kind: Literal["float"] = "float"
    low: float
    high: float
    log: bool = False

    @model_validator(mode="after")
    def _range(self) -> FloatVar:
        _check_range(self.name, self.low, self.high, self.log)
        return self


class IntVar(_Var):
    kind: Literal["int"] = "int"
    low: int
    high: int
    log: bool = False

    @model_validator(mode="after")
    def _range(self) -> IntVar:
        _check_range(self.name, self.low, self.high, self.log)
        return self


class CategoricalVar(_Var):
    kind: Literal["categorical"] = "categorical"
    choices: list[Scalar] = Field(min_length=1)


Variable = Annotated[FloatVar | IntVar | CategoricalVar, Field(discriminator="kind")]


def _check_range(name: str, low: float, high: float, log: bool) -> None:
    if not (math.isfinite(low) and math.isfinite(high)) or not low < high:
        raise ValueError(f"{name}: needs finite low < high, got [{low}, {high}]")
    if log and low <= 0:
        raise ValueError(f"{name}: a log scale needs low > 0, got {low}")


class SearchSpace(BaseModel):
    """The variables an optimizer searches (see the module doc)."""

    model_config = ConfigDict(extra="forbid")

    variables: list[Variable] = Field(min_length=1, max_length=200)

    @model_validator(mode="after")
    def _names_and_conditions(self) -> SearchSpace:
        seen: dict[str, Any] = {}
        for v in self.variables:
            if v.name in seen:
                raise ValueError(f"variable {v.name!r} is declared twice")
            for parent, values in (v.active_if or {}).items():
                p = seen.get(parent)
                if p is None:
                    raise ValueError(
                        f"{v.name}: active_if parent {parent!r} must be declared before it"
                    )
                if isinstance(p, CategoricalVar) and not set(values) <= set(p.choices):
                    raise ValueError(
                        f"{v.name}: active_if values {values} are not choices of {parent!r}"
                    )
            seen[v.name] = v
        return self

    @property
    def dim(self) -> int:
        return len(self.variables)

    @property
    def names(self) -> list[str]:
        return [v.name for v in self.variables]

    def decode(self, u: Any) -> dict[str, Scalar]:
        """A unit-cube point (`d`) -> the configuration (active variables only)."""
        u = np.clip(np.asarray(u, dtype=float).reshape(-1), 0.0, 1.0)
        if u.shape[0] != self.dim:
            raise ValueError(f"a point of this space has {self.dim} coordinates, got {u.shape[0]}")
        full: dict[str, Scalar] = {}
        for x, v in zip(u, self.variables, strict=True):
            full[v.name] = _decode(v, float(x))
        return self.active(full)

    def encode(self, config: dict[str, Any]) -> np.ndarray:
        """A configuration -> its unit-cube point (inactive or missing variables: 0.5)."""
        out = np.full(self.dim, 0.5)
        for i, v in enumerate(self.variables):
            if v.name in config:
                out[i] = _encode(v, config[v.name])
        return out

    def active(self, config: dict[str, Any]) -> dict[str, Any]:
        """``config`` without the variables whose conditions it does not meet."""
        out: dict[str, Any] = {}
        for v in self.variables:
            if v.name not in config:
                continue
            if all(out.get(p, _MISSING) in vals for p, vals in (v.active_if or {}).items()):
                out[v.name] = config[v.name]
        return out

    def check(self, config: dict[str, Any]) -> None:
        """Raise ``ValueError`` unless ``config`` holds exactly the active variables, in range."""
        want = self.active(config)
        if set(want) != set(config):
            extra = sorted(set(config) - set(want))
            raise ValueError(f"not variables of this space (or inactive): {extra}")
        for v in self.variables:
            if v.name in config:
                _encode(v, config[v.name], strict=True)


_MISSING = object()


def _decode(v: Any, x: float) -> Scalar:
    if isinstance(v, CategoricalVar):
        return v.choices[min(int(x * len(v.choices)), len(v.choices) - 1)]
    if v.log:
        val = math.exp(math.log(v.low) + x * (math.log(v.high) - math.log(v.low)))
    else:
        val = v.low + x * (v.high - v.low)
    if isinstance(v, IntVar):
        return int(min(max(round(val), v.low), v.high))
    return float(min(max(val, v.low), v.high))


def _encode(v: Any, value: Any, strict: bool = False) -> float:
    if isinstance(v, CategoricalVar):
        if value not in v.choices:
            raise ValueError(f"{v.name}: {value!r} is not one of {v.choices}")
        return (v.choices.index(value) + 0.5) / len(v.choices)
    val = float(value)
    if strict and not v.low <= val <= v.high:
        raise ValueError(f"{v.name}: {value} is outside [{v.low}, {v.high}]")
    val = min(max(val, v.low), v.high)
    if v.log:
        return (math.log(val) - math.log(v.low)) / (math.log(v.high) - math.log(v.low))
    return (val - v.low) / (v.high - v.low)
