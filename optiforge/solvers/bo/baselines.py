"""Baselines measured in the same eval as discovered kernels; all minimise within ``budget``.

``random`` (uniform), ``sobol`` (scrambled), ``gp_rbf_ard`` / ``gp_matern52_ard`` / ``gp_rq``
/ ``gp_rbf`` (isotropic) / ``gp_matern12_ard`` / ``gp_matern32_ard`` (our ExactGP + qLogEI
with a fixed kernel), ``cmaes`` (CMA-ES, ``cma`` package, in the unit cube), ``hesbo``
(GP-BO on a HeSBO count-sketch embedding, Nayebi et al. 2019), ``vanilla_bo`` (BoTorch ``SingleTaskGP`` with
its default dimension-scaled lengthscale prior, Hvarfner et al. 2024, + qLogEI) and
``turbo`` (TuRBO-1 after the BoTorch tutorial: one trust region, Thompson sampling) and
``kernel_search`` (GP-BO whose kernel is re-chosen every few rounds by Kernel Discovery's
offline compositional search, scored by leave-one-out CRPS on the data so far). Other
baselines join via ``register_baseline``.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import torch
from botorch.fit import fit_gpytorch_mll
from botorch.generation.sampling import MaxPosteriorSampling
from botorch.models import SingleTaskGP
from botorch.models.model import Model
from gpytorch.constraints import Interval
from gpytorch.kernels import MaternKernel, ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.mlls import ExactMarginalLogLikelihood
from torch import Tensor

from optiforge.errors import ConfigError
from optiforge.solvers.bo.loop import (
    AcqConfig,
    CountedObjective,
    Problem,
    Trace,
    sobol,
    standardize,
)
from optiforge.solvers.bo.session import BOLoop
from optiforge.solvers.gp import grammar
from optiforge.solvers.gp.exact import ExactGP
from optiforge.solvers.gp.kernels import KernelSpec, matern12, matern32, matern52, rbf, rq

_DT = torch.float64

BaselineRunner = Callable[..., Trace]
"""``(problem, budget, seed, *, n_init, acq_config) -> Trace``."""


def run_random(problem: Problem, budget: int, seed: int, **_: object) -> Trace:
    """Uniform random search."""
    t0 = time.perf_counter()
    obj = CountedObjective(problem, budget)
    obj(torch.rand(budget, obj.dim, generator=torch.Generator().manual_seed(seed), dtype=_DT))
    return obj.trace("random", seed, t0)


def run_sobol(problem: Problem, budget: int, seed: int, **_: object) -> Trace:
    """Scrambled Sobol sequence."""
    t0 = time.perf_counter()
    obj = CountedObjective(problem, budget)
    obj(sobol(budget, obj.dim, seed))
    return obj.trace("sobol", seed, t0)


def _fixed_kernel(name: str, spec: Callable[[], KernelSpec]) -> BaselineRunner:
    def run(
        problem: Problem,
        budget: int,
        seed: int,
        *,
        n_init: int = 10,
        acq_config: AcqConfig | None = None,
        **_: object,
    ) -> Trace:
        k = spec()
        return BOLoop(
            problem,
            budget=budget,
            n_init=n_init,
            kernel_provider=lambda X, y, r: k,
            seed=seed,
            acq_config=acq_config,
            name=name,
        ).run()

    run.__doc__ = f"GP-BO with a fixed {name} kernel (our ExactGP, qLogEI)."
    return run


def _vanilla_factory(Xu: Tensor, target: Tensor, rnd: int) -> Model:
    # botorch>=0.12 defaults: RBF-ARD with LogNormal(sqrt2 + log(d)/2, sqrt3) lengthscale prior.
    model = SingleTaskGP(Xu, target.unsqueeze(-1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model


def run_vanilla_bo(
    problem: Problem,
    budget: int,
    seed: int,
    *,
    n_init: int = 10,
    acq_config: AcqConfig | None = None,
    **_: object,
) -> Trace:
    """'Vanilla BO': BoTorch's default SingleTaskGP (dimension-scaled prior) + qLogEI."""
    return BOLoop(
        problem,
        budget=budget,
        n_init=n_init,
        model_factory=_vanilla_factory,
        seed=seed,
        acq_config=acq_config,
        name="vanilla_bo",
    ).run()


@dataclass
class TurboState:
    """TuRBO-1 trust-region state (BoTorch tutorial constants); values are for maximisation."""

    dim: int
    batch_size: int = 1
    length: float = 0.8
    length_min: float = 0.5**7
    length_max: float = 1.6
    failure_counter: int = 0
    success_counter: int = 0
    success_tolerance: int = 10
    best_value: float = -math.inf
    restart_triggered: bool = False

    @property
    def failure_tolerance(self) -> int:
        return math.ceil(max(4.0 / self.batch_size, float(self.dim) / self.batch_size))

    def update(self, y_next: Tensor) -> None:
        """Grow after ``success_tolerance`` improvements in a row, shrink after ``failure_tolerance`` misses."""
        if float(y_next.max()) > self.best_value + 1e-3 * abs(self.best_value):
            self.success_counter += 1
            self.failure_counter = 0
        else:
            self.success_counter = 0
            self.failure_counter += 1
        if self.success_counter == self.success_tolerance:
            self.length = min(2.0 * self.length, self.length_max)
            self.success_counter = 0
        elif self.failure_counter == self.failure_tolerance:
            self.length /= 2.0
            self.failure_counter = 0
        self.best_value = max(self.best_value, float(y_next.max()))
        if self.length < self.length_min:
            self.restart_triggered = True


def _turbo_model(Xu: Tensor, target: Tensor) -> SingleTaskGP:
    d = Xu.shape[-1]
    lik = GaussianLikelihood(noise_constraint=Interval(1e-8, 1e-3))
    cov = ScaleKernel(
        MaternKernel(nu=2.5, ard_num_dims=d, lengthscale_constraint=Interval(0.005, 4.0))
    )
    model = SingleTaskGP(
        Xu, target.unsqueeze(-1), covar_module=cov, likelihood=lik, outcome_transform=None
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit_gpytorch_mll(ExactMarginalLogLikelihood(model.likelihood, model))
    return model


def run_turbo(
    problem: Problem,
    budget: int,
    seed: int,
    *,
    n_init: int = 10,
    batch_size: int = 1,
    n_candidates: int | None = None,
    **_: object,
) -> Trace:
    """TuRBO-1: a trust region around the incumbent, resized by success/failure, Thompson sampling inside.

    On collapse (length < length_min) the region restarts from a fresh Sobol design, as in
    TuRBO; the model is refitted on the current restart's data only.
    """
    t0 = time.perf_counter()
    obj = CountedObjective(problem, budget)
    D = obj.dim
    n_cand = n_candidates or min(2000, max(500, 50 * D))
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    restarts = 0
    while obj.left > 0:
        state = TurboState(dim=D, batch_size=batch_size)
        Xu = sobol(min(n_init, obj.left), D, seed + 1000 * restarts)
        y = obj(Xu)
        state.best_value = float((-y).max())
        while obj.left > 0 and not state.restart_triggered:
            target = -standardize(y)
            model = _turbo_model(Xu, target)
            x_center = Xu[target.argmax()].clone()
            w = model.covar_module.base_kernel.lengthscale.detach().squeeze()
            w = w / w.mean()
            w = w / torch.prod(w.pow(1.0 / len(w)))
            tr_lb = (x_center - w * state.length / 2.0).clamp(0.0, 1.0)
            tr_ub = (x_center + w * state.length / 2.0).clamp(0.0, 1.0)
            pert = tr_lb + (tr_ub - tr_lb) * sobol(
                n_cand, D, int(torch.randint(0, 2**30, (1,), generator=gen))
            )
            prob = min(20.0 / D, 1.0)
            mask = torch.rand(n_cand, D, generator=gen, dtype=_DT) <= prob
            none = mask.sum(1) == 0
            mask[none, torch.randint(0, D, (int(none.sum()),), generator=gen)] = True
            X_cand = x_center.expand(n_cand, D).clone()
            X_cand[mask] = pert[mask]
            q = min(batch_size, obj.left)
            with torch.no_grad():
                X_next = MaxPosteriorSampling(model=model, replacement=False)(X_cand, num_samples=q)
            y_next = obj(X_next)
            state.update(-y_next)
            Xu = torch.cat([Xu, X_next])
            y = torch.cat([y, y_next])
        restarts += 1
    return obj.trace("turbo", seed, t0, info={"restarts": restarts - 1})


def run_cmaes(
    problem: Problem, budget: int, seed: int, *, sigma0: float = 0.3, **_: object
) -> Trace:
    """CMA-ES (``cma``, default population) in the unit cube, started at its centre; the last
    generation is cut to the budget."""
    import cma
    import numpy as np

    t0 = time.perf_counter()
    obj = CountedObjective(problem, budget)
    es = cma.CMAEvolutionStrategy(
        [0.5] * obj.dim, sigma0,
        {"bounds": [0.0, 1.0], "seed": seed + 1, "verbose": -9, "verb_log": 0, "verb_disp": 0},
    )  # fmt: skip
    while obj.left > 0:
        xs = es.ask()
        q = min(len(xs), obj.left)
        y = obj(torch.as_tensor(np.asarray(xs[:q]), dtype=_DT))
        if q < len(xs):
            break
        es.tell(xs, y.tolist())
    return obj.trace("cmaes", seed, t0)


class _HashedProblem:
    """A problem seen through a HeSBO count-sketch embedding: `z` in ``[-1, 1]^de`` maps to the
    unit-cube point ``(s_j z_{h(j)} + 1) / 2`` of the original ``D`` inputs."""

    def __init__(self, problem: Problem, de: int, seed: int) -> None:
        b = torch.as_tensor(problem.bounds, dtype=_DT)
        self.problem, self.lb, self.ub = problem, b[0], b[1]
        g = torch.Generator().manual_seed(seed + 77)
        D = int(b.shape[1])
        self.h = torch.randint(0, de, (D,), generator=g)
        self.s = torch.randint(0, 2, (D,), generator=g).to(_DT) * 2 - 1
        self._bounds = torch.stack([-torch.ones(de, dtype=_DT), torch.ones(de, dtype=_DT)])

    @property
    def bounds(self) -> Tensor:
        """`2 x de`: the embedded box ``[-1, 1]^de``."""
        return self._bounds

    def lift(self, Z: Tensor) -> Tensor:
        """`n x de` embedded points -> `n x D` points in the original bounds."""
        Xu = (self.s * Z[:, self.h] + 1) / 2
        return self.lb + (self.ub - self.lb) * Xu.clamp(0, 1)

    def __call__(self, X: Tensor) -> Tensor:
        """`n x de` embedded points -> `n` values."""
        return self.problem(self.lift(X))


def run_hesbo(
    problem: Problem,
    budget: int,
    seed: int,
    *,
    n_init: int = 10,
    acq_config: AcqConfig | None = None,
    target_dim: int = 10,
    **_: object,
) -> Trace:
    """HeSBO: GP-BO (RBF-ARD, qLogEI) in a ``target_dim``-dimensional count-sketch embedding."""
    D = int(torch.as_tensor(problem.bounds).shape[1])
    hashed = _HashedProblem(problem, min(target_dim, D), seed)
    k = rbf(ard=True)
    low = BOLoop(
        hashed, budget=budget, n_init=n_init, kernel_provider=lambda X, y, r: k, seed=seed,
        acq_config=acq_config, name="hesbo",
    ).run()  # fmt: skip
    return Trace(name="hesbo", seed=seed, X=hashed.lift(low.X), y=low.y, wall_s=low.wall_s,
                 kernels=low.kernels, n_fallbacks=low.n_fallbacks)  # fmt: skip


SEARCH_BASES = ["RBF_ARD", "Matern32_ARD", "Matern52_ARD", "RQ_ARD", "Periodic", "Linear"]
"""Base kernels ``kernel_search`` composes (ARD where a lengthscale per input matters)."""


class CompositionalKernelSearch:
    """A kernel provider: at each refresh, the incumbent expression and ``n_children`` of its
    grammar mutations (``S + B``, ``S * B``, ``B -> B'``) are fitted on the data so far and the
    one with the lowest leave-one-out CRPS becomes the incumbent (greedy compositional search,
    Duvenaud et al. 2013, with Kernel Discovery's score). A candidate that fails to fit is
    skipped; the incumbent is kept unless a child beats it.

    ``start``: the first incumbent (default ``RBF_ARD``; e.g. a kernel a Kernel Discovery run
    found). ``history`` holds ``(round, expression, loo_crps)`` of each refresh's winner.
    """

    def __init__(
        self, seed: int, *, start: str = "RBF_ARD", n_children: int = 3, max_complexity: int = 3,
        bases: list[str] | None = None,
    ) -> None:  # fmt: skip
        self.seed, self.n_children, self.max_complexity = seed, n_children, max_complexity
        self.bases = list(bases or SEARCH_BASES)
        self.incumbent = grammar.canonical(start)
        self.history: list[tuple[int, str, float]] = []

    def __call__(self, X: Tensor, y: Tensor, rnd: int) -> KernelSpec:
        import numpy as np

        rng = np.random.default_rng([self.seed, rnd, 7])
        pool = [self.incumbent]
        for _ in range(4 * self.n_children):
            if len(pool) > self.n_children:
                break
            child = grammar.mutate(self.incumbent, rng, self.bases, self.max_complexity)
            if child not in pool:
                pool.append(child)
        scored = []
        for expr in pool:
            try:
                gp = ExactGP(grammar.build_kernel(expr), n_restarts=1, seed=self.seed + rnd)
                crps = gp.fit(X, y).loo_crps()
            except Exception:  # noqa: BLE001 - a kernel that cannot be fitted here is skipped
                continue
            if math.isfinite(crps):
                scored.append((crps, expr != self.incumbent, expr))
        if scored:
            crps, _, self.incumbent = min(scored)
            self.history.append((rnd, self.incumbent, crps))
        return grammar.build_kernel(self.incumbent)


def run_kernel_search(
    problem: Problem,
    budget: int,
    seed: int,
    *,
    n_init: int = 10,
    acq_config: AcqConfig | None = None,
    refresh_every: int = 3,
    start: str = "RBF_ARD",
    **_: object,
) -> Trace:
    """GP-BO (qLogEI) whose kernel is re-chosen every ``refresh_every`` rounds by
    ``CompositionalKernelSearch`` (starting from ``start``)."""
    return BOLoop(
        problem, budget=budget, n_init=n_init, seed=seed, acq_config=acq_config,
        kernel_provider=CompositionalKernelSearch(seed, start=start),
        refresh_every=refresh_every, name="kernel_search",
    ).run()  # fmt: skip


def run_fixed_expression(
    problem: Problem,
    budget: int,
    seed: int,
    *,
    kernel: str,
    n_init: int = 10,
    acq_config: AcqConfig | None = None,
    **_: object,
) -> Trace:
    """GP-BO (qLogEI) with one fixed kernel expression of the grammar (e.g. a kernel a
    Kernel Discovery run found); ``InvalidCandidate`` if ``kernel`` does not parse."""
    k = grammar.build_kernel(kernel)
    return BOLoop(
        problem, budget=budget, n_init=n_init, seed=seed, acq_config=acq_config,
        kernel_provider=lambda X, y, r: k, name=f"gp[{grammar.canonical(kernel)}]",
    ).run()  # fmt: skip


_BASELINES: dict[str, BaselineRunner] = {
    "random": run_random,
    "sobol": run_sobol,
    "gp_rbf_ard": _fixed_kernel("gp_rbf_ard", lambda: rbf(ard=True)),
    "gp_matern52_ard": _fixed_kernel("gp_matern52_ard", lambda: matern52(ard=True)),
    "gp_rq": _fixed_kernel("gp_rq", lambda: rq(ard=True)),
    "gp_rbf": _fixed_kernel("gp_rbf", lambda: rbf(ard=False)),
    "gp_matern12_ard": _fixed_kernel("gp_matern12_ard", lambda: matern12(ard=True)),
    "gp_matern32_ard": _fixed_kernel("gp_matern32_ard", lambda: matern32(ard=True)),
    "cmaes": run_cmaes,
    "hesbo": run_hesbo,
    "vanilla_bo": run_vanilla_bo,
    "turbo": run_turbo,
    "kernel_search": run_kernel_search,
}

BASELINES: list[str] = list(_BASELINES)
"""Names accepted by ``run_baseline`` (grows with ``register_baseline``)."""


def register_baseline(name: str, runner: BaselineRunner) -> None:
    """Add a baseline (e.g. ``compositional``) so evals measure it next to the others."""
    if name in _BASELINES:
        raise ConfigError(f"baseline {name!r} is already registered")
    _BASELINES[name] = runner
    BASELINES.append(name)


def run_baseline(name: str, problem: Problem, budget: int, seed: int, **kw: object) -> Trace:
    """Run baseline ``name`` on ``problem`` for ``budget`` evaluations (``n_init``, ``acq_config`` optional)."""
    if name not in _BASELINES:
        raise ConfigError(f"unknown baseline {name!r}; known: {', '.join(BASELINES)}")
    return _BASELINES[name](problem, budget, seed, **kw)
