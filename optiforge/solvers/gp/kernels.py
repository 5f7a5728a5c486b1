"""Kernel descriptions (`KernelSpec`), the base-kernel library and + / x composition.

A kernel is a plain torch function ``fn(x1, x2, params) -> K`` with ``x1`` `n x d`,
``x2`` `m x d` and ``params`` a dict of *positive* hyperparameter tensors (a scalar
tensor for ``"scalar"``, shape `d` for ``"ard"``); it returns the `n x m` Gram block.
Base kernels carry no signal variance: ``ExactGP`` owns one global ``outputscale``.
Use ``scale(k)`` to give a summand its own variance (needed for sums such as
``scale(RBF) + scale(Periodic)`` where the relative weights matter).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

import torch
from torch import Tensor

from optiforge.errors import InvalidCandidate

KernelFn = Callable[[Tensor, Tensor, Mapping[str, Tensor]], Tensor]


@dataclass(frozen=True)
class HyperSpec:
    """One positive hyperparameter: its shape, initial value and box bounds."""

    shape: Literal["scalar", "ard"] = "scalar"
    init: float = 1.0
    bounds: tuple[float, float] = (1e-3, 1e3)

    def __post_init__(self) -> None:
        lo, hi = self.bounds
        if self.shape not in ("scalar", "ard"):
            raise InvalidCandidate(
                f"hyperparameter shape must be 'scalar' or 'ard', got {self.shape!r}"
            )
        if not (0.0 < lo < hi) or not math.isfinite(hi):
            raise InvalidCandidate(
                f"hyperparameter bounds must satisfy 0 < lo < hi < inf, got {self.bounds}"
            )
        if not (lo <= self.init <= hi):
            raise InvalidCandidate(f"hyperparameter init {self.init} outside bounds {self.bounds}")

    def size(self, d: int) -> int:
        """Number of scalar values this hyperparameter has in dimension ``d``."""
        return d if self.shape == "ard" else 1


@dataclass(frozen=True)
class KernelSpec:
    """A named kernel function with its hyperparameter declarations.

    ``expression`` is the readable composition, e.g. ``(RBF_ARD + Periodic) * Linear``.
    """

    name: str
    fn: KernelFn
    hyperparameters: dict[str, HyperSpec] = field(default_factory=dict)
    expression: str = ""

    def __post_init__(self) -> None:
        if not self.expression:
            object.__setattr__(self, "expression", self.name)

    def n_hyperparameters(self, d: int) -> int:
        """Total count of scalar kernel hyperparameters in dimension ``d``."""
        return sum(h.size(d) for h in self.hyperparameters.values())

    def initial_params(self, d: int, dtype: torch.dtype = torch.float64) -> dict[str, Tensor]:
        """The ``init`` values as tensors (shape `d` for ARD, `()` for scalars)."""
        return {
            k: torch.full((h.size(d),), h.init, dtype=dtype)
            if h.shape == "ard"
            else torch.tensor(h.init, dtype=dtype)
            for k, h in self.hyperparameters.items()
        }

    def __call__(self, x1: Tensor, x2: Tensor, params: Mapping[str, Tensor]) -> Tensor:
        return self.fn(x1, x2, params)

    def __add__(self, other: KernelSpec) -> KernelSpec:
        return add(self, other)

    def __mul__(self, other: KernelSpec) -> KernelSpec:
        return mul(self, other)


# --- distances ---------------------------------------------------------------------------


def _scaled_sqdist(x1: Tensor, x2: Tensor, lengthscale: Tensor) -> Tensor:
    """Squared distance of `n x d` and `m x d` inputs after dividing by the lengthscale."""
    a = x1 / lengthscale
    b = x2 / lengthscale
    # Centre first: the expansion |a|^2 + |b|^2 - 2ab loses precision far from the origin.
    centre = a.mean(dim=-2, keepdim=True)
    a = a - centre
    b = b - centre
    d2 = (
        (a * a).sum(-1, keepdim=True)
        + (b * b).sum(-1).unsqueeze(-2)
        - 2.0 * a @ b.transpose(-1, -2)
    )
    return d2.clamp_min(0.0)


def _dist(d2: Tensor) -> Tensor:
    # clamp_min keeps the gradient of sqrt finite (zero) at coincident points.
    return d2.clamp_min(1e-30).sqrt()


def _rbf(x1: Tensor, x2: Tensor, p: Mapping[str, Tensor]) -> Tensor:
    return torch.exp(-0.5 * _scaled_sqdist(x1, x2, p["lengthscale"]))


def _matern12(x1: Tensor, x2: Tensor, p: Mapping[str, Tensor]) -> Tensor:
    return torch.exp(-_dist(_scaled_sqdist(x1, x2, p["lengthscale"])))


def _matern32(x1: Tensor, x2: Tensor, p: Mapping[str, Tensor]) -> Tensor:
    r = math.sqrt(3.0) * _dist(_scaled_sqdist(x1, x2, p["lengthscale"]))
    return (1.0 + r) * torch.exp(-r)


def _matern52(x1: Tensor, x2: Tensor, p: Mapping[str, Tensor]) -> Tensor:
    d2 = _scaled_sqdist(x1, x2, p["lengthscale"])
    r = math.sqrt(5.0) * _dist(d2)
    return (1.0 + r + 5.0 / 3.0 * d2) * torch.exp(-r)


def _rq(x1: Tensor, x2: Tensor, p: Mapping[str, Tensor]) -> Tensor:
    alpha = p["alpha"]
    return (1.0 + _scaled_sqdist(x1, x2, p["lengthscale"]) / (2.0 * alpha)).pow(-alpha)


def _periodic(x1: Tensor, x2: Tensor, p: Mapping[str, Tensor]) -> Tensor:
    # Standard (MacKay) periodic kernel, per-dimension sine distance summed over d.
    diff = x1.unsqueeze(-2) - x2.unsqueeze(-3)  # n x m x d
    s = torch.sin(math.pi * diff / p["period"]) / p["lengthscale"]
    return torch.exp(-2.0 * (s * s).sum(-1))


def _linear(x1: Tensor, x2: Tensor, p: Mapping[str, Tensor]) -> Tensor:
    # Non-negative offset keeps the kernel PSD: (x1/l)(x2/l)^T + c.
    w = 1.0 / p["lengthscale"]
    return (x1 * w) @ (x2 * w).transpose(-1, -2) + p["offset"]


_LS = HyperSpec("scalar", 1.0, (1e-2, 1e2))
_LS_ARD = HyperSpec("ard", 1.0, (1e-2, 1e2))


def _base(
    name: str, fn: KernelFn, ard: bool, extra: dict[str, HyperSpec] | None = None
) -> KernelSpec:
    hyp = {"lengthscale": _LS_ARD if ard else _LS}
    hyp.update(extra or {})
    return KernelSpec(name=name + ("_ARD" if ard else ""), fn=fn, hyperparameters=hyp)


def rbf(ard: bool = False) -> KernelSpec:
    """Squared exponential exp(-r^2/2)."""
    return _base("RBF", _rbf, ard)


def matern12(ard: bool = False) -> KernelSpec:
    """Matern nu=1/2 (exponential)."""
    return _base("Matern12", _matern12, ard)


def matern32(ard: bool = False) -> KernelSpec:
    """Matern nu=3/2."""
    return _base("Matern32", _matern32, ard)


def matern52(ard: bool = False) -> KernelSpec:
    """Matern nu=5/2 (same closed form as gpytorch's MaternKernel(nu=2.5))."""
    return _base("Matern52", _matern52, ard)


def rq(ard: bool = False) -> KernelSpec:
    """Rational quadratic (1 + r^2 / (2 alpha))^-alpha."""
    return _base("RQ", _rq, ard, {"alpha": HyperSpec("scalar", 1.0, (1e-2, 1e2))})


def periodic(ard: bool = False) -> KernelSpec:
    """Periodic exp(-2 sum_j sin^2(pi |x_j - x'_j| / p) / l^2); ``ard`` makes the period ARD too."""
    return _base(
        "Periodic",
        _periodic,
        ard,
        {"period": HyperSpec("ard" if ard else "scalar", 1.0, (1e-2, 1e2))},
    )


def linear(ard: bool = False) -> KernelSpec:
    """Linear x x'^T / l^2 + offset."""
    return _base("Linear", _linear, ard, {"offset": HyperSpec("scalar", 1e-2, (1e-4, 1e2))})


BASE_KERNELS: dict[str, Callable[[bool], KernelSpec]] = {
    "RBF": rbf,
    "Matern12": matern12,
    "Matern32": matern32,
    "Matern52": matern52,
    "RQ": rq,
    "Periodic": periodic,
    "Linear": linear,
}
"""Base-kernel constructors by name; call with ``ard=True`` for per-dimension lengthscales."""


# --- composition -----------------------------------------------------------------------


def _prefixed(spec: KernelSpec, prefix: str) -> dict[str, HyperSpec]:
    return {f"{prefix}.{k}": v for k, v in spec.hyperparameters.items()}


def _sub(params: Mapping[str, Tensor], prefix: str) -> dict[str, Tensor]:
    n = len(prefix) + 1
    return {k[n:]: v for k, v in params.items() if k.startswith(prefix + ".")}


def _wrap(expr: str) -> str:
    # Parenthesise a sum when it becomes a factor, so the string parses the right way.
    return f"({expr})" if " + " in expr else expr


def add(k1: KernelSpec, k2: KernelSpec) -> KernelSpec:
    """Sum ``k1 + k2``; hyperparameters are renamed ``k1.<name>`` and ``k2.<name>``."""

    def fn(x1: Tensor, x2: Tensor, p: Mapping[str, Tensor]) -> Tensor:
        return k1.fn(x1, x2, _sub(p, "k1")) + k2.fn(x1, x2, _sub(p, "k2"))

    expr = f"{k1.expression} + {k2.expression}"
    return KernelSpec(expr, fn, {**_prefixed(k1, "k1"), **_prefixed(k2, "k2")}, expr)


def mul(k1: KernelSpec, k2: KernelSpec) -> KernelSpec:
    """Product ``k1 * k2``; hyperparameters are renamed ``k1.<name>`` and ``k2.<name>``."""

    def fn(x1: Tensor, x2: Tensor, p: Mapping[str, Tensor]) -> Tensor:
        return k1.fn(x1, x2, _sub(p, "k1")) * k2.fn(x1, x2, _sub(p, "k2"))

    expr = f"{_wrap(k1.expression)} * {_wrap(k2.expression)}"
    return KernelSpec(expr, fn, {**_prefixed(k1, "k1"), **_prefixed(k2, "k2")}, expr)


def scale(k: KernelSpec, bounds: tuple[float, float] = (1e-3, 1e3)) -> KernelSpec:
    """``variance * k`` with its own positive ``variance`` hyperparameter."""

    def fn(x1: Tensor, x2: Tensor, p: Mapping[str, Tensor]) -> Tensor:
        return p["variance"] * k.fn(x1, x2, _sub(p, "k"))

    expr = f"C * {_wrap(k.expression)}"
    hyp = {"variance": HyperSpec("scalar", 1.0, bounds), **_prefixed(k, "k")}
    return KernelSpec(expr, fn, hyp, expr)
