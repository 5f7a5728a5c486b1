"""Synthetic problems for the heavy-tail claims (``tests/solvers/train/test_heavy_tail*``,
``benchmarks/heavy_tail_claims.py``), each batched over ``R`` independent runs: a point is
an ``(R, d)`` tensor, ``grad`` gives the exact (sub)gradient, the stochastic gradient is
``grad + heavy_noise(p)``, and ``run`` returns one error per run.

- ``SimplexL1``: ``f(x) = ||x - x*||_1`` on the probability simplex (``x*`` interior,
  ``d = 8``), entropic SMD from the uniform point; error ``f(xbar_T)``.
- ``L1Unbounded``: ``f(x) = ||x - x*||_1`` on R^d (``x*`` in ``{-1, 1}^d``, start 0): convex,
  Lipschitz, nonsmooth, no bounded domain and no projection; error ``f(xbar_T)``.
- ``RippleRegression``: ``f(w) = mean_i h(a_i w - b_i)`` with the nonconvex robust loss
  ``h(u) = sqrt(1 + u^2) - 1 + 0.6 sin(u)^2`` (``|h'| <= 1.6``, ``|h''| <= 2.2``: smooth and
  Lipschitz; ``h'' < 0`` in places, so ``f`` has several local minima); error
  ``sqrt((1/T) sum_t ||grad f(w_t)||^2)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Protocol

import torch

from optiforge.solvers.train.heavy_tail import (
    ClippedSGD,
    MapName,
    MirrorDescent,
    Schedule,
    Setting,
    heavy_noise,
    schedule_exponents,
)

Method = Literal["smd", "clipped"]
DT = torch.float64


class BatchProblem(Protocol):
    d: int
    setting: Setting

    def start(self, r: int) -> torch.Tensor: ...

    def grad(self, x: torch.Tensor) -> torch.Tensor: ...

    def error(self, xbar: torch.Tensor, grad_sq_mean: torch.Tensor) -> torch.Tensor: ...


@dataclass
class SimplexL1:
    d: int = 8
    setting: Setting = "convex"

    def __post_init__(self) -> None:
        g = torch.Generator().manual_seed(7)
        w = torch.rand(self.d, generator=g, dtype=DT) + 0.5
        self.xstar = w / w.sum()

    def start(self, r: int) -> torch.Tensor:
        return torch.full((r, self.d), 1.0 / self.d, dtype=DT)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sign(x - self.xstar)

    def error(self, xbar: torch.Tensor, grad_sq_mean: torch.Tensor) -> torch.Tensor:
        return (xbar - self.xstar).abs().sum(-1)


@dataclass
class L1Unbounded:
    d: int = 8
    setting: Setting = "convex"

    def __post_init__(self) -> None:
        self.xstar = torch.tensor([(-1.0) ** i for i in range(self.d)], dtype=DT)

    def start(self, r: int) -> torch.Tensor:
        return torch.zeros((r, self.d), dtype=DT)

    def grad(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sign(x - self.xstar)

    def error(self, xbar: torch.Tensor, grad_sq_mean: torch.Tensor) -> torch.Tensor:
        return (xbar - self.xstar).abs().sum(-1)


@dataclass
class RippleRegression:
    d: int = 4
    n: int = 16
    setting: Setting = "nonconvex"

    def __post_init__(self) -> None:
        g = torch.Generator().manual_seed(11)
        if self.n == self.d:  # a location fit: a = I
            self.a = torch.eye(self.d, dtype=DT)
        else:
            self.a = torch.randn(self.n, self.d, generator=g, dtype=DT) / math.sqrt(self.d)
        self.b = 2.0 * torch.randn(self.n, generator=g, dtype=DT)

    def start(self, r: int) -> torch.Tensor:
        return torch.zeros((r, self.d), dtype=DT)

    def value(self, w: torch.Tensor) -> torch.Tensor:
        u = w @ self.a.T - self.b
        return (torch.sqrt(1 + u * u) - 1 + 0.6 * torch.sin(u) ** 2).mean(-1)

    def grad(self, w: torch.Tensor) -> torch.Tensor:
        u = w @ self.a.T - self.b
        dh = u / torch.sqrt(1 + u * u) + 0.6 * torch.sin(2 * u)
        return dh @ self.a / self.n

    def error(self, xbar: torch.Tensor, grad_sq_mean: torch.Tensor) -> torch.Tensor:
        return grad_sq_mean


def run(
    problem: BatchProblem,
    *,
    p: float,
    horizon: int,
    runs: int,
    seed: int,
    method: Method = "smd",
    map: MapName = "euclidean",
    lr: float = 0.5,
    clip: float = 1.0,
    schedule: Schedule = "horizon",
    schedule_p: float | None = None,
    sigma: float = 1.0,
    ref_horizon: int = 1,
) -> torch.Tensor:
    """Per-run errors ``(runs,)`` after ``horizon`` steps; the noise has tail ``p`` (its
    p-th moment is ``sigma^p`` per coordinate); the schedule is tuned for ``schedule_p``
    (default ``p``: a mismatched value is the misspecified-schedule ablation); ``lr`` (and
    ``clip``) are the values at the horizon ``ref_horizon`` (the base step is rescaled by
    ``ref_horizon^a``, the schedule's exponent, so every ``p`` starts from the same step
    at ``T = ref_horizon``; the exponent in ``T`` is unchanged). For the
    nonconvex problem the per-run error is ``(1/T) sum_t ||grad f(w_t)||^2`` (take the
    square root of its mean over runs)."""
    gen = torch.Generator().manual_seed(seed)
    x = problem.start(runs).requires_grad_(False)
    sp = p if schedule_p is None else schedule_p
    opt: MirrorDescent | ClippedSGD
    if method == "smd":
        base = lr * ref_horizon ** (1.0 / sp) if schedule != "constant" else lr
        opt = MirrorDescent([x], lr=base, map=map, p=sp, schedule=schedule, horizon=horizon)
    else:
        a, b = schedule_exponents(sp, problem.setting, clipped=True)
        opt = ClippedSGD([x], lr=lr * ref_horizon**a, clip=clip * ref_horizon ** (-b), p=sp,
                         setting=problem.setting, horizon=horizon, per_row=True)  # fmt: skip
    gsq = torch.zeros(runs, dtype=DT)
    for _ in range(horizon):
        g = problem.grad(x)
        if problem.setting == "nonconvex":
            gsq += (g * g).sum(-1)
        x.grad = g + heavy_noise(tuple(x.shape), p=p, sigma=sigma, gen=gen)
        opt.step()
    return problem.error(opt.averaged(x), gsq / horizon)


def fit_slope(horizons: list[int], means: list[float]) -> float:
    """Least-squares slope of ``log mean`` against ``log T``."""
    lx = torch.tensor([math.log(t) for t in horizons], dtype=DT)
    ly = torch.tensor([math.log(m) for m in means], dtype=DT)
    lx = lx - lx.mean()
    return float((lx * (ly - ly.mean())).sum() / (lx * lx).sum())


def slope_with_interval(
    horizons: list[int],
    errors: list[torch.Tensor],
    *,
    sqrt: bool = False,
    boot: int = 400,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Slope of ``log E[error]`` (``sqrt``: of ``log sqrt(E[error])``) over ``log T`` and a
    95% percentile bootstrap interval (runs resampled independently at each ``T``)."""
    g = torch.Generator().manual_seed(seed)

    def agg(e: torch.Tensor) -> float:
        m = float(e.mean())
        return math.sqrt(m) if sqrt else m

    point = fit_slope(horizons, [agg(e) for e in errors])
    draws = []
    for _ in range(boot):
        ms = [agg(e[torch.randint(0, e.numel(), (e.numel(),), generator=g)]) for e in errors]
        draws.append(fit_slope(horizons, ms))
    d = torch.tensor(draws, dtype=DT)
    return point, float(d.quantile(0.025)), float(d.quantile(0.975))
