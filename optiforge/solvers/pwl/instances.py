"""Seeded PWL-MIP benchmark instances: portfolio, workforce scheduling, resource allocation.

Every instance is feasible by construction (a known point satisfies every row) and has
finite bounds. Sizes are named ``tiny`` (CI), ``small``, ``medium``, ``large``.

* ``portfolio``: weights ``w`` on the simplex with per-asset caps, scenario loss limits
  ``R_s w >= -L``; minimise ``-mu^T w + sum_i f_i(w_i)`` with ``f_i`` a NONCONVEX trading cost
  ``kappa sqrt(|t|) + eta t^2`` in the trade ``t = w_i - w0_i``: concave for small trades
  (economies of scale), convex for large ones (market impact); breakpoints include ``w0_i``.
* ``workforce``: ``J`` skills over ``T`` periods; regular hours ``h``, overtime ``o`` and
  backlog/stock ``s`` with ``s_t = s_{t-1} + h_t + o_t - d_t``; a shared regular-hours pool per
  period; overtime priced by a NONCONVEX piecewise-linear tariff (tier slopes in random
  order, so neither convex nor concave).
* ``resource``: allocate ``x_i in [0, U_i]`` under ``R`` knapsack rows; maximise S-shaped
  (convex-then-concave, logistic) returns ``g_i(x_i)``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from optiforge.solvers.pwl.model import PWLBuilder, PWLModel

SIZES: dict[str, dict[str, int]] = {
    "tiny": {"portfolio": 5, "workforce": 3, "resource": 5},
    "small": {"portfolio": 10, "workforce": 6, "resource": 10},
    "medium": {"portfolio": 16, "workforce": 10, "resource": 18},
    "large": {"portfolio": 24, "workforce": 15, "resource": 28},
}
"""Number of PWL terms (workforce: periods for 2 skills) per family and size."""


def portfolio(n_assets: int, seed: int, n_breaks: int = 6, n_scen: int = 0) -> PWLModel:
    """Portfolio with concave transaction costs (see module docstring)."""
    rng = np.random.default_rng(seed)
    n_scen = n_scen or 2 * n_assets
    cap = min(1.0, 3.0 / n_assets)
    w0 = rng.uniform(0.5, 1.5, n_assets)
    w0 /= w0.sum()  # max <= 1.5 / (0.5 n) = cap: the current holding is feasible
    mu = rng.uniform(0.01, 0.08, n_assets)
    R = mu + rng.normal(0.0, 0.15, (n_scen, n_assets))
    loss = max(float(np.max(-(R @ w0))), 0.0) + 0.03  # w0 satisfies every limit
    b = PWLBuilder(name=f"portfolio-{n_assets}-s{seed}")
    kappa = rng.uniform(0.0005, 0.002, n_assets)
    eta = rng.uniform(0.002, 0.01, n_assets)
    w = [b.var(0.0, cap, -mu[i]) for i in range(n_assets)]
    b.row({j: 1.0 for j in w}, "=", 1.0)
    for s in range(n_scen):
        b.row({w[i]: R[s, i] for i in range(n_assets)}, ">=", -loss)
    for i in range(n_assets):
        grid = np.linspace(0.0, cap, n_breaks)
        p = np.unique(np.concatenate([grid, [w0[i]]]))
        t = np.abs(p - w0[i]) / cap
        f = kappa[i] * np.sqrt(t) + eta[i] * t**2
        b.pwl(w[i], p, f)
    return b.build()


def workforce(periods: int, seed: int, skills: int = 2, n_breaks: int = 5) -> PWLModel:
    """Workforce scheduling with nonconvex overtime tariffs (see module docstring)."""
    rng = np.random.default_rng(seed)
    b = PWLBuilder(name=f"workforce-{periods}-s{seed}")
    reg_cap, ot_cap, stock_cap = 10.0, 6.0, 12.0
    pool = 0.8 * reg_cap * skills
    demand = rng.uniform(6.0, 13.0, (skills, periods))
    prev: list[int | None] = [None] * skills
    hours: list[list[int]] = [[] for _ in range(periods)]
    for t in range(periods):
        for j in range(skills):
            h = b.var(0.0, reg_cap, 1.0 + 0.1 * j)
            o = b.var(0.0, ot_cap, 0.0)
            s = b.var(0.0, stock_cap, 0.15)
            row = {s: 1.0, h: -1.0, o: -1.0}
            if prev[j] is not None:
                row[prev[j]] = -1.0  # type: ignore[index]
            b.row(row, "=", -float(demand[j, t]))
            prev[j] = s
            hours[t].append(h)
            slopes = rng.permutation(np.linspace(1.3, 3.0, n_breaks - 1)) * (1.0 + 0.1 * j)
            p = np.linspace(0.0, ot_cap, n_breaks)
            f = np.concatenate([[0.0], np.cumsum(slopes * np.diff(p))])
            b.pwl(o, p, f)
        b.row({h: 1.0 for h in hours[t]}, "<=", pool)
    return b.build()


def resource(n_projects: int, seed: int, n_resources: int = 3, n_breaks: int = 7) -> PWLModel:
    """Resource allocation with S-shaped returns (see module docstring)."""
    rng = np.random.default_rng(seed)
    b = PWLBuilder(name=f"resource-{n_projects}-s{seed}")
    U = rng.uniform(5.0, 10.0, n_projects)
    x = [b.var(0.0, float(U[i]), 0.0) for i in range(n_projects)]
    a = rng.uniform(0.5, 1.5, (n_resources, n_projects))
    cap = 0.35 * (a @ U)
    for r in range(n_resources):
        b.row({x[i]: a[r, i] for i in range(n_projects)}, "<=", float(cap[r]))
    for i in range(n_projects):
        v = rng.uniform(5.0, 15.0)
        k = rng.uniform(0.8, 2.0)
        mid = rng.uniform(0.3, 0.7) * U[i]
        p = np.linspace(0.0, U[i], n_breaks)
        g = v / (1.0 + np.exp(-k * (p - mid))) - v / (1.0 + np.exp(k * mid))
        b.pwl(x[i], p, -g)
    return b.build()


FAMILIES: dict[str, Callable[[int, int], PWLModel]] = {
    "portfolio": portfolio,
    "workforce": workforce,
    "resource": resource,
}


def make(family: str, size: str, seed: int) -> PWLModel:
    """The instance of ``family`` at ``size`` for ``seed``."""
    if family not in FAMILIES or size not in SIZES:
        raise ValueError(f"unknown family/size {family}/{size}")
    return FAMILIES[family](SIZES[size][family], seed)
