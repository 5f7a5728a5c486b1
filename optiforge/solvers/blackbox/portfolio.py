"""One interface over the black-box optimizers a formulation may pick.

``optimize(objective, space, budget, method=..., seed=...)`` minimizes ``objective`` (a
function of a configuration of ``space``) with one of ``PORTFOLIO``:

- ``random``, ``sobol``: model-free designs on the unit cube;
- ``cma``: CMA-ES (``cma``) on the unit cube, bounded;
- ``tpe``: Optuna's TPE, define-by-run: integers, categoricals, log scales and
  conditionals natively;
- ``gp``: GP-BO with an RBF-ARD kernel and qLogEI (BoTorch; ``solvers.bo``), ``vanilla_bo``
  (the dimension-scaled lengthscale prior), ``turbo`` (TuRBO-1), and any other optimizer
  registered with ``solvers.bo.register_baseline``;
- ``kernel_search``: GP-BO whose kernel is re-chosen every few rounds by Kernel
  Discovery's compositional search (grammar mutations scored by leave-one-out CRPS);
  ``gp`` with ``kernel=EXPR`` uses one fixed grammar expression instead of RBF-ARD (e.g.
  a kernel a Kernel Discovery run found), and ``kernel_search`` starts from it;
- the bounded ask/tell optimizers that take any dimension (``solvers.asktell``: GP-BTS,
  nonlinear parametric BO), run on the unit cube; ``optiforge list optimizers`` names
  them.

The unit-cube optimizers see ints and categoricals through ``SearchSpace.decode``
(rounding); the objective always gets a valid configuration of the active variables. A
non-finite objective value is kept in the result and shown to the optimizer as the worst
finite value seen so far (plus one), so a failed configuration steers it away.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from optiforge.errors import ConfigError
from optiforge.solvers import asktell
from optiforge.solvers.blackbox.space import CategoricalVar, FloatVar, SearchSpace

Objective = Callable[[dict[str, Any]], float]

CORE = ("random", "sobol", "cma", "tpe", "gp", "vanilla_bo", "turbo", "kernel_search")
"""The portfolio's own optimizers."""

ASKTELL: tuple[str, ...] = ("gp_bts", "param_bo")
"""The bounded optimizers of ``solvers.asktell`` in the portfolio (named here, so that
importing the portfolio imports none of them; a test checks the list is complete)."""

PORTFOLIO = CORE + ASKTELL
"""The optimizers every formulation may name (plus registered ``solvers.bo`` baselines)."""


@dataclass
class BlackBoxResult:
    """Every configuration one run evaluated, in order (minimization)."""

    method: str
    seed: int
    configs: list[dict[str, Any]] = field(default_factory=list)
    values: list[float] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def best_index(self) -> int:
        finite = [(v, i) for i, v in enumerate(self.values) if math.isfinite(v)]
        if not finite:
            raise ValueError("no evaluation returned a finite value")
        return min(finite)[1]

    @property
    def best_value(self) -> float:
        return self.values[self.best_index]

    @property
    def best_config(self) -> dict[str, Any]:
        return self.configs[self.best_index]

    @property
    def best_trace(self) -> list[float]:
        """Best finite value after each evaluation (``inf`` until one is finite)."""
        out, best = [], math.inf
        for v in self.values:
            if math.isfinite(v):
                best = min(best, v)
            out.append(best)
        return out


class _Recorder:
    """Evaluates configurations and records them; the value the optimizer is shown."""

    def __init__(self, objective: Objective, result: BlackBoxResult) -> None:
        self.objective = objective
        self.result = result

    def __call__(self, config: dict[str, Any]) -> float:
        value = float(self.objective(config))
        self.result.configs.append(dict(config))
        self.result.values.append(value)
        if math.isfinite(value):
            return value
        finite = [v for v in self.result.values if math.isfinite(v)]
        return max(finite) + 1.0 if finite else 1e6


class _UnitProblem:
    """``solvers.bo.Problem`` on ``[0, 1]^d``: each row decoded to a configuration."""

    def __init__(self, space: SearchSpace, record: _Recorder) -> None:
        self.space = space
        self.record = record
        d = space.dim
        self._bounds = torch.stack(
            [torch.zeros(d, dtype=torch.float64), torch.ones(d, dtype=torch.float64)]
        )

    @property
    def bounds(self) -> torch.Tensor:
        return self._bounds

    def __call__(self, X: torch.Tensor) -> torch.Tensor:
        rows = X.detach().cpu().numpy().reshape(-1, self.space.dim)
        return torch.tensor([self.record(self.space.decode(r)) for r in rows], dtype=torch.float64)


def optimize(
    objective: Objective,
    space: SearchSpace,
    budget: int,
    *,
    method: str = "gp",
    seed: int = 0,
    n_init: int | None = None,
    kernel: str | None = None,
) -> BlackBoxResult:
    """Minimize ``objective`` over ``space`` with ``budget`` evaluations of ``method``.

    ``kernel``: a kernel expression of ``solvers.gp.grammar`` for ``gp`` (instead of
    RBF-ARD) or the start of ``kernel_search``.

    Raises:
        ConfigError: an unknown method, a budget below 1, or a kernel for another method.
        InvalidCandidate: a kernel expression that does not parse.
    """
    if budget < 1:
        raise ConfigError(f"budget must be >= 1, got {budget}")
    if kernel is not None and method not in ("gp", "kernel_search"):
        raise ConfigError(f"a kernel expression needs method gp or kernel_search, not {method!r}")
    init = n_init if n_init is not None else min(budget, max(5, 2 * space.dim))
    result = BlackBoxResult(method=method, seed=seed)
    record = _Recorder(objective, result)
    t0 = time.perf_counter()
    if method == "cma":
        _run_cma(space, record, budget, seed)
    elif method == "tpe":
        _run_tpe(space, record, budget, seed, init)
    elif method in ASKTELL:
        _run_asktell(method, space, record, budget, seed)
    else:
        from optiforge.solvers.bo.baselines import BASELINES, run_baseline, run_fixed_expression

        name = "gp_rbf_ard" if method == "gp" else method
        if name not in BASELINES:
            raise ConfigError(
                f"unknown optimizer {method!r}; the portfolio: {', '.join(PORTFOLIO)}"
            )
        kw: dict[str, Any] = {} if name in ("random", "sobol") else {"n_init": min(init, budget)}
        if kernel is not None and name == "gp_rbf_ard":
            run_fixed_expression(_UnitProblem(space, record), budget, seed, kernel=kernel, **kw)
        else:
            if kernel is not None:
                kw["start"] = kernel
            run_baseline(name, _UnitProblem(space, record), budget, seed, **kw)
    result.wall_s = time.perf_counter() - t0
    return result


def _run_cma(space: SearchSpace, record: _Recorder, budget: int, seed: int) -> None:
    import cma

    d = max(space.dim, 2)  # pycma needs two coordinates; a 1-d space ignores the second
    es = cma.CMAEvolutionStrategy(
        [0.5] * d, 0.3, {"bounds": [0.0, 1.0], "seed": seed + 1, "verbose": -9}
    )
    n = 0
    while n < budget:
        xs = es.ask()
        take = xs[: budget - n]
        ys = [record(space.decode(np.asarray(x)[: space.dim])) for x in take]
        n += len(take)
        if len(take) == len(xs):
            es.tell(xs, ys)


def _run_asktell(name: str, space: SearchSpace, record: _Recorder, budget: int, seed: int) -> None:
    """A bounded ask/tell optimizer on the unit cube; the last batch is cut to the budget."""
    d = space.dim
    opt = asktell.make(name, d, bounds=(np.zeros(d), np.ones(d)), seed=seed)
    n = 0
    while n < budget:
        X = opt.ask()
        take = X[: budget - n]
        y = np.array([record(space.decode(x)) for x in take])
        n += len(take)
        if len(take) == len(X):
            opt.tell(X, y)


def _run_tpe(space: SearchSpace, record: _Recorder, budget: int, seed: int, n_init: int) -> None:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=min(n_init, budget))
    study = optuna.create_study(direction="minimize", sampler=sampler)

    def trial_fn(trial: Any) -> float:
        config: dict[str, Any] = {}
        for v in space.variables:
            if not all(config.get(p, object()) in vals for p, vals in (v.active_if or {}).items()):
                continue
            if isinstance(v, CategoricalVar):
                config[v.name] = trial.suggest_categorical(v.name, v.choices)
            elif isinstance(v, FloatVar):
                config[v.name] = trial.suggest_float(v.name, v.low, v.high, log=v.log)
            else:
                config[v.name] = trial.suggest_int(v.name, v.low, v.high, log=v.log)
        return record(config)

    study.optimize(trial_fn, n_trials=budget)
