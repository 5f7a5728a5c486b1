"""Causal Bayesian optimisation (Aglietti et al., AISTATS 2020) and a plain-BO baseline.

Per exploration set ``S`` (``k = |S|`` variables, inputs scaled to the unit cube ``[0,1]^k``)
a GPyTorch/BoTorch GP has prior mean ``m(x) = E_hat[Y|do(S=x)]`` from observational data
and kernel ``k_RBF(x, x') + sigma(x) sigma(x')`` (see ``do_prior``). Each trial picks the
(set, value) maximising ``log EI(x) - log cost(S)`` over a candidate grid, observes the
mean of ``units_per_trial`` interventional units from the SCM, and refits that set's GP.
The trace reports the TRUE ``E[Y|do]`` of the incumbent (Monte Carlo, fixed seed).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Literal

import gpytorch
import networkx as nx
import numpy as np
import scipy.optimize
import torch
from botorch.acquisition.analytic import _log_ei_helper
from botorch.fit import fit_gpytorch_mll
from botorch.models import SingleTaskGP
from gpytorch.mlls import ExactMarginalLogLikelihood
from pydantic import BaseModel, ConfigDict, Field
from scipy.stats import qmc

from optiforge.errors import BudgetExceeded, ConfigError, InvalidTask
from optiforge.solvers.cbo.do_prior import DoPrior, fit_do_priors
from optiforge.solvers.cbo.exploration import ExplorationSet, minimal_intervention_sets
from optiforge.solvers.cbo.scm import SCM


class CBOConfig(BaseModel):
    """Settings shared by ``run_cbo`` and ``run_bo``."""

    model_config = ConfigDict(extra="forbid")

    n_trials: int | None = Field(default=30, ge=1)
    """Number of interventions (including the initial ones); None: budget_cost only."""
    budget_cost: float | None = Field(default=None, gt=0)
    """Stop before cumulative intervention cost would exceed this."""
    n_obs: int = Field(default=200, ge=5)
    """Observational units drawn before any intervention (free)."""
    n_init_per_set: int = Field(default=1, ge=1)
    """Random initial interventions per exploration set (they count towards the budget)."""
    units_per_trial: int = Field(default=100, ge=1)
    """Units per intervention; the observation is their mean outcome (100 units make it
    close to the E[Y|do] evaluations of the CBO literature while keeping some noise)."""
    grid_1d: int = Field(default=201, ge=5)
    """Candidate points for one-variable sets."""
    grid_2d: int = Field(default=41, ge=5)
    """Candidate points per axis for two-variable sets."""
    n_sobol: int = Field(default=1024, ge=16)
    """Sobol candidates for sets of three or more variables."""
    eval_n_mc: int = Field(default=4000, ge=100)
    """Monte Carlo units for the true E[Y|do] of the incumbent."""
    eval_seed: int = 12345
    """Seed of those Monte Carlo draws (common random numbers across trials)."""
    max_set_size: int | None = 2
    """Largest exploration set considered when the sets come from the graph."""
    gformula_prior: bool = False
    """Use the g-formula do-prior where back-door adjustment fails (see ``fit_do_prior``)."""
    stuck_patience: int | None = None
    """After this many acquisitions without the incumbent's posterior mean improving,
    acquire with EI over ``best - stuck_margin`` (a more exploratory target) until it
    improves again; None: plain EI throughout."""
    stuck_margin: float = Field(default=1.0, ge=0)
    """That margin, in units of the observational sd of the target."""
    coverage_patience: int | None = Field(default=None, ge=1)
    """Stall rule of ``CBOSession``: after this many acquisitions without the incumbent's
    posterior mean improving, the next trial goes to the least-intervened variable (the
    affordable exploration set holding it with the fewest trials, at its EI maximiser),
    and the count restarts; None: EI alone chooses the set (``run_cbo`` ignores it)."""


class TrialRecord(BaseModel):
    """One intervention of a trace."""

    model_config = ConfigDict(extra="forbid")

    index: int
    kind: Literal["init", "acquire"]
    exploration_set: list[str]
    x: dict[str, float]
    y: float
    """Observed mean outcome of this trial's units (noisy)."""
    cost: float
    cumulative_cost: float
    best_set: list[str]
    best_x: dict[str, float]
    best_true: float
    """True E[Y | do(best_set = best_x)] of the incumbent after this trial (MC)."""


class CBOTrace(BaseModel):
    """Everything a run did, trial by trial."""

    model_config = ConfigDict(extra="forbid")

    method: str
    exploration_sets: list[list[str]]
    trials: list[TrialRecord] = Field(default_factory=list)
    seed: int = 0

    @property
    def best_true(self) -> float:
        """True E[Y|do] of the final incumbent."""
        if not self.trials:
            raise InvalidTask("empty trace")
        return self.trials[-1].best_true

    def best_vs_cost(self) -> tuple[np.ndarray, np.ndarray]:
        """(cumulative cost, best true value) per trial."""
        c = np.array([t.cumulative_cost for t in self.trials])
        b = np.array([t.best_true for t in self.trials])
        return c, b


# ------------------------------------------------------------------ GP pieces


class _CallableMean(gpytorch.means.Mean):
    """Prior mean from a numpy callable on ``n x k`` unit-cube rows (no gradient in x)."""

    def __init__(self, fn: Callable[[np.ndarray], np.ndarray], k: int) -> None:
        super().__init__()
        self._fn = fn
        self._k = k

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.detach().reshape(-1, self._k).cpu().numpy()
        out = torch.as_tensor(self._fn(flat), dtype=x.dtype, device=x.device)
        return out.reshape(x.shape[:-1])


class _CausalVarianceKernel(gpytorch.kernels.Kernel):
    """``sigma(x) sigma(x')``: the do-estimate's uncertainty as a rank-one kernel."""

    is_stationary = False

    def __init__(self, fn: Callable[[np.ndarray], np.ndarray], k: int) -> None:
        super().__init__()
        self._fn = fn
        self._k = k

    def _sd(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.detach().reshape(-1, self._k).cpu().numpy()
        out = torch.as_tensor(self._fn(flat), dtype=x.dtype, device=x.device)
        return out.reshape(x.shape[:-1])

    def forward(
        self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, **params: object
    ) -> torch.Tensor:
        s1, s2 = self._sd(x1), self._sd(x2)
        if diag:
            return s1 * s2
        return s1.unsqueeze(-1) * s2.unsqueeze(-2)


def _rbf(k: int) -> gpytorch.kernels.Kernel:
    kern = gpytorch.kernels.ScaleKernel(
        gpytorch.kernels.RBFKernel(
            ard_num_dims=k,
            lengthscale_prior=gpytorch.priors.LogNormalPrior(
                math.log(0.2) + 0.5 * math.log(k), 0.7
            ),
        ),
        outputscale_prior=gpytorch.priors.GammaPrior(2.0, 4.0),
    )
    kern.base_kernel.lengthscale = 0.2 * math.sqrt(k)
    kern.outputscale = 0.5
    return kern


def _fit(model: SingleTaskGP) -> None:
    """MAP hyperparameters; keep the initial values if the optimiser fails (warned)."""
    if model.train_inputs[0].shape[-2] < 3:
        return  # too few points to say anything about hyperparameters
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit_gpytorch_mll(mll)
    except Exception as exc:  # botorch raises several types; the run can continue
        warnings.warn(f"GP hyperparameter fit failed, keeping previous values: {exc}", stacklevel=2)
    model.eval()


def _likelihood() -> gpytorch.likelihoods.GaussianLikelihood:
    lik = gpytorch.likelihoods.GaussianLikelihood(
        noise_prior=gpytorch.priors.LogNormalPrior(math.log(0.05), 1.0),
        noise_constraint=gpytorch.constraints.GreaterThan(1e-5),
    )
    lik.noise = 0.05
    return lik


def causal_gp(
    x: np.ndarray, y: np.ndarray, prior: DoPrior, lo: np.ndarray, hi: np.ndarray
) -> SingleTaskGP:
    """GP on standardised outcomes (by the observational mean/sd of Y) with the do-prior."""
    k = x.shape[1]

    def mean_fn(u: np.ndarray) -> np.ndarray:
        return (prior(lo + u * (hi - lo))[0] - prior.y_mean) / prior.y_sd

    def sd_fn(u: np.ndarray) -> np.ndarray:
        return prior(lo + u * (hi - lo))[1] / prior.y_sd

    ty = torch.as_tensor((y - prior.y_mean) / prior.y_sd).reshape(-1, 1)
    model = SingleTaskGP(
        torch.as_tensor(x),
        ty,
        likelihood=_likelihood(),
        covar_module=_rbf(k) + _CausalVarianceKernel(sd_fn, k),
        mean_module=_CallableMean(mean_fn, k),
        outcome_transform=None,
    )
    _fit(model)
    return model


def _plain_gp(x: np.ndarray, y: np.ndarray, y_mean: float, y_sd: float) -> SingleTaskGP:
    """Standard GP: constant mean, RBF kernel, same standardisation as the causal GP."""
    k = x.shape[1]
    ty = torch.as_tensor((y - y_mean) / y_sd).reshape(-1, 1)
    model = SingleTaskGP(
        torch.as_tensor(x),
        ty,
        likelihood=_likelihood(),
        covar_module=_rbf(k),
        mean_module=gpytorch.means.ConstantMean(),
        outcome_transform=None,
    )
    _fit(model)
    return model


def _log_ei(model: SingleTaskGP, cand: torch.Tensor, best: float) -> np.ndarray:
    """log EI for minimisation at ``cand`` (``m x k``) -> ``m``."""
    with torch.no_grad():
        post = model.posterior(cand)
        mu = post.mean.reshape(-1)
        sd = post.variance.reshape(-1).clamp_min(1e-12).sqrt()
        u = (best - mu) / sd
        return (_log_ei_helper(u) + sd.log()).cpu().numpy()


def post_mean(model: SingleTaskGP, x: torch.Tensor) -> np.ndarray:
    with torch.no_grad():
        return model.posterior(x).mean.reshape(-1).cpu().numpy()


def candidate_grid(k: int, config: CBOConfig, seed: int = 0) -> np.ndarray:
    """Unit-cube candidates for a ``k``-variable set -> ``m x k``."""
    if k == 1:
        return np.linspace(0.0, 1.0, config.grid_1d)[:, None]
    if k == 2:
        g = np.linspace(0.0, 1.0, config.grid_2d)
        a, b = np.meshgrid(g, g, indexing="ij")
        return np.stack([a.ravel(), b.ravel()], axis=1)
    sob = qmc.Sobol(k, scramble=True, seed=seed).random(config.n_sobol)
    return np.concatenate([sob, np.full((1, k), 0.5)], axis=0)


# ------------------------------------------------------------------ the loops


@contextmanager
def one_thread() -> Iterator[None]:
    """Run tiny GP fits single-threaded (10x faster on a busy machine); restore after."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(old)


class Evaluator:
    """True E[Y|do] by MC with fixed seed (CRN), cached per intervention."""

    def __init__(self, scm: SCM, n_mc: int, seed: int) -> None:
        self.scm, self.n_mc, self.seed = scm, n_mc, seed
        self._cache: dict[tuple[tuple[str, float], ...], float] = {}

    def __call__(self, x: dict[str, float]) -> float:
        key = tuple(sorted(x.items()))
        if key not in self._cache:
            names = [k for k, _ in key]
            vals = np.array([[v for _, v in key]])
            self._cache[key] = float(
                self.scm.expected_outcome_batch(names, vals, self.n_mc, self.seed)[0]
            )
        return self._cache[key]


def set_bounds(scm: SCM, es: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    lo = np.array([scm.domains[v].low for v in es])
    hi = np.array([scm.domains[v].high for v in es])
    return lo, hi


def check_budget(config: CBOConfig) -> None:
    if config.n_trials is None and config.budget_cost is None:
        raise ConfigError("set n_trials or budget_cost (or both)")


def can_afford(config: CBOConfig, spent: float, cost: float, done: int) -> bool:
    if config.n_trials is not None and done >= config.n_trials:
        return False
    return config.budget_cost is None or spent + cost <= config.budget_cost + 1e-9


def _run_cbo(
    scm: SCM,
    *,
    graph: nx.DiGraph | None = None,
    exploration_sets: Sequence[Sequence[str]] | None = None,
    config: CBOConfig | None = None,
    seed: int = 0,
    causal_prior: bool = True,
) -> CBOTrace:
    """The body of ``run_cbo`` (which adds the one-thread torch setting around it)."""
    config = config or CBOConfig()
    check_budget(config)
    g = scm.graph if graph is None else graph
    if exploration_sets is None:
        sets: list[ExplorationSet] = minimal_intervention_sets(
            g, scm.manipulable, scm.target, max_size=config.max_set_size
        )
    else:
        sets = [tuple(s) for s in exploration_sets]
    if not sets:
        raise InvalidTask("no exploration set: no manipulable ancestor of the target")
    rng = np.random.default_rng(seed)
    data = scm.sample(config.n_obs, rng)
    priors = fit_do_priors(g, data, sets, scm.target, gformula=config.gformula_prior, seed=seed)
    if not causal_prior:
        for p in priors.values():
            p.identified = False
    evaluate = Evaluator(scm, config.eval_n_mc, config.eval_seed)
    cands = {s: candidate_grid(len(s), config, seed) for s in sets}
    bounds = {s: set_bounds(scm, s) for s in sets}
    xs: dict[ExplorationSet, list[np.ndarray]] = {s: [] for s in sets}
    ys: dict[ExplorationSet, list[float]] = {s: [] for s in sets}
    models: dict[ExplorationSet, SingleTaskGP] = {}
    trace = CBOTrace(
        method="cbo" if causal_prior else "cbo_no_prior",
        exploration_sets=[list(s) for s in sets],
        seed=seed,
    )
    spent = 0.0

    def observe(s: ExplorationSet, u: np.ndarray, kind: Literal["init", "acquire"]) -> None:
        nonlocal spent
        lo, hi = bounds[s]
        raw = np.clip(lo + u * (hi - lo), lo, hi)
        x = {v: float(raw[j]) for j, v in enumerate(s)}
        y = float(scm.do(x, config.units_per_trial, rng)[scm.target].mean())
        xs[s].append(u)
        ys[s].append(y)
        models[s] = causal_gp(np.array(xs[s]), np.array(ys[s]), priors[s], lo, hi)
        cost = scm.cost(s)
        spent += cost
        best_s, best_u = incumbent(models, xs)
        lo_b, hi_b = bounds[best_s]
        braw = lo_b + best_u * (hi_b - lo_b)
        bx = {v: float(braw[j]) for j, v in enumerate(best_s)}
        trace.trials.append(
            TrialRecord(
                index=len(trace.trials),
                kind=kind,
                exploration_set=list(s),
                x=x,
                y=y,
                cost=cost,
                cumulative_cost=spent,
                best_set=list(best_s),
                best_x=bx,
                best_true=evaluate(bx),
            )
        )

    for s in sets:
        for _ in range(config.n_init_per_set):
            if not can_afford(config, spent, scm.cost(s), len(trace.trials)):
                break
            observe(s, cands[s][rng.integers(len(cands[s]))], "init")
    if not models:
        raise BudgetExceeded(
            "the budget does not cover a single intervention",
            limit="evaluations", cap=config.budget_cost or 0.0,
        )  # fmt: skip
    stuck = StuckTracker(config)
    while True:
        best_f = min(float(post_mean(m, m.train_inputs[0]).min()) for m in models.values())
        choice = acquire(models, sets, cands, xs, scm.cost, best_f - stuck.margin(best_f),
                          lambda s: can_afford(config, spent, scm.cost(s), len(trace.trials)))  # fmt: skip
        if choice is None:
            break
        observe(choice[0], choice[1], "acquire")
    return trace


class StuckTracker:
    """Counts acquisitions since the incumbent's posterior mean last improved."""

    def __init__(self, config: CBOConfig) -> None:
        self.patience, self.size = config.stuck_patience, config.stuck_margin
        self.best = math.inf
        self.since = 0

    def margin(self, best_f: float) -> float:
        """EI target shift for this acquisition (0 unless stuck)."""
        if best_f < self.best - 1e-3:
            self.best, self.since = best_f, 0
        else:
            self.since += 1
        if self.patience is not None and self.since >= self.patience:
            return self.size
        return 0.0


def acquire(
    models: dict[ExplorationSet, SingleTaskGP],
    sets: Sequence[ExplorationSet],
    cands: dict[ExplorationSet, np.ndarray],
    xs: dict[ExplorationSet, list[np.ndarray]],
    cost: Callable[[ExplorationSet], float],
    best_f: float,
    affordable: Callable[[ExplorationSet], bool],
) -> tuple[ExplorationSet, np.ndarray] | None:
    """The (set, unit-cube x) maximising log EI(x; best_f) - log cost(set); None if none."""
    scored: list[tuple[float, ExplorationSet, np.ndarray]] = []
    for s in sets:
        if s not in models or not affordable(s):  # no model: budget ran out in the design
            continue
        lei = _log_ei(models[s], torch.as_tensor(cands[s]), best_f)
        # EI per unit cost; cost 0 sets are treated as cost 1e-9 (always preferred).
        score = lei - math.log(max(cost(s), 1e-9))
        # An intervention already run is not repeated: its units' mean is known, and
        # noisy EI otherwise keeps re-sampling the incumbent instead of exploring.
        for u_done in xs[s]:
            score[np.all(np.isclose(cands[s], u_done), axis=1)] = -np.inf
        if np.isfinite(score).any():
            i = int(np.argmax(score))
            scored.append((float(score[i]), s, cands[s][i]))
    if not scored:
        return None
    _, s, u = max(scored, key=lambda t: t[0])
    return s, u


def incumbent(
    models: dict[ExplorationSet, SingleTaskGP], xs: dict[ExplorationSet, list[np.ndarray]]
) -> tuple[ExplorationSet, np.ndarray]:
    """The evaluated (set, x) with the lowest posterior mean (robust to noisy y)."""
    best: tuple[float, ExplorationSet, np.ndarray] | None = None
    for s, m in models.items():
        pts = np.array(xs[s])
        mu = post_mean(m, torch.as_tensor(pts))
        i = int(np.argmin(mu))
        if best is None or mu[i] < best[0]:
            best = (float(mu[i]), s, pts[i])
    assert best is not None
    return best[1], best[2]


def _run_bo(
    scm: SCM, *, config: CBOConfig | None = None, seed: int = 0, n_init: int = 2
) -> CBOTrace:
    """The body of ``run_bo`` (which adds the one-thread torch setting around it)."""
    config = config or CBOConfig()
    check_budget(config)
    s = tuple(scm.manipulable)
    if not s:
        raise InvalidTask("the SCM has no manipulable variable")
    rng = np.random.default_rng(seed)
    data = scm.sample(config.n_obs, rng)  # only for the outcome scale, as in run_cbo
    y_mean, y_sd = float(data[scm.target].mean()), float(data[scm.target].std() + 1e-9)
    lo, hi = set_bounds(scm, s)
    cand = candidate_grid(len(s), config, seed)
    evaluate = Evaluator(scm, config.eval_n_mc, config.eval_seed)
    trace = CBOTrace(method="bo", exploration_sets=[list(s)], seed=seed)
    xs: list[np.ndarray] = []
    ys: list[float] = []
    cost = scm.cost(s)
    spent = 0.0
    model: SingleTaskGP | None = None
    while can_afford(config, spent, cost, len(trace.trials)):
        kind: Literal["init", "acquire"]
        if model is None or len(xs) < n_init:
            u, kind = cand[rng.integers(len(cand))], "init"
        else:
            best_f = float(post_mean(model, torch.as_tensor(np.array(xs))).min())
            lei = _log_ei(model, torch.as_tensor(cand), best_f)
            for u_done in xs:  # as in run_cbo: no repeated intervention
                lei[np.all(np.isclose(cand, u_done), axis=1)] = -np.inf
            if not np.isfinite(lei).any():
                break
            u, kind = cand[int(np.argmax(lei))], "acquire"
        raw = np.clip(lo + u * (hi - lo), lo, hi)
        x = {v: float(raw[j]) for j, v in enumerate(s)}
        y = float(scm.do(x, config.units_per_trial, rng)[scm.target].mean())
        xs.append(u)
        ys.append(y)
        spent += cost
        # One fit per trial serves both the incumbent now and the next acquisition.
        model = _plain_gp(np.array(xs), np.array(ys), y_mean, y_sd)
        mu = post_mean(model, torch.as_tensor(np.array(xs)))
        b = lo + xs[int(np.argmin(mu))] * (hi - lo)
        bx = {v: float(b[j]) for j, v in enumerate(s)}
        trace.trials.append(
            TrialRecord(
                index=len(trace.trials),
                kind=kind,
                exploration_set=list(s),
                x=x,
                y=y,
                cost=cost,
                cumulative_cost=spent,
                best_set=list(s),
                best_x=bx,
                best_true=evaluate(bx),
            )
        )
    return trace


# ------------------------------------------------------------------ ground truth


class SetOptimum(BaseModel):
    """Minimum of E[Y|do(S=x)] over the domain of one exploration set."""

    model_config = ConfigDict(extra="forbid")

    exploration_set: list[str]
    x: dict[str, float]
    value: float
    grid_max: float
    """Largest E[Y|do] on the grid (for scale-free tolerances)."""
    se: float = Field(default=0.0, ge=0)
    """Standard error of ``value`` as an estimate of E[Y|do(x)] (0 for a closed form;
    ``true_optimum`` itself does not estimate it and leaves 0 with ``method="crn"``)."""
    method: Literal["crn", "monte_carlo", "closed_form"] = "crn"
    """How ``value`` was obtained: ``crn`` the optimiser's own common-random-number estimate
    (biased low by the optimisation over the same draws), ``monte_carlo`` an independent
    estimate with standard error ``se``, ``closed_form`` exact."""
    n_units: int | None = None
    """Monte Carlo units behind ``value`` (None for a closed form)."""


class GroundTruth(BaseModel):
    """The best intervention over all exploration sets."""

    model_config = ConfigDict(extra="forbid")

    value: float
    exploration_set: list[str]
    x: dict[str, float]
    per_set: list[SetOptimum]
    n_mc: int
    """Units of the search's common random numbers."""
    seed: int
    """Seed of the search."""
    se: float = Field(default=0.0, ge=0)
    """Standard error of ``value`` (that of the best ``per_set`` entry)."""
    method: Literal["crn", "monte_carlo", "closed_form"] = "crn"
    """How ``value`` was obtained (see ``SetOptimum.method``)."""
    se_target: float | None = None
    """Absolute standard error the Monte Carlo estimates aimed at (None: none were made)."""
    eval_seed: int | None = None
    """Seed of those estimates: re-estimating E[Y|do(x)] with ``se_target`` and this seed
    reproduces ``value`` at ``x`` exactly."""

    @property
    def value_range(self) -> float:
        """max - min of E[Y|do] seen on the grids of all sets."""
        return max(p.grid_max for p in self.per_set) - self.value


def true_optimum(
    scm: SCM,
    exploration_sets: Sequence[Sequence[str]],
    *,
    n_mc: int = 5000,
    seed: int = 0,
    grid_1d: int = 401,
    grid_2d: int = 61,
    n_sobol: int = 2048,
    chunk: int = 128,
) -> GroundTruth:
    """Minimise MC estimates of E[Y|do] (common random numbers) per set: grid, then L-BFGS-B."""
    cfg = CBOConfig(grid_1d=grid_1d, grid_2d=grid_2d, n_sobol=n_sobol)
    per: list[SetOptimum] = []
    for es in exploration_sets:
        es = list(es)
        lo, hi = set_bounds(scm, es)

        def f(
            u: np.ndarray, es: list[str] = es, lo: np.ndarray = lo, hi: np.ndarray = hi
        ) -> np.ndarray:
            raw = lo + np.atleast_2d(u) * (hi - lo)
            return np.concatenate(
                [
                    scm.expected_outcome_batch(es, raw[i : i + chunk], n_mc, seed)
                    for i in range(0, raw.shape[0], chunk)
                ]
            )

        grid = candidate_grid(len(es), cfg, seed)
        vals = f(grid)
        best_u, best_v = grid[int(np.argmin(vals))], float(vals.min())
        for i in np.argsort(vals)[:3]:
            res = scipy.optimize.minimize(
                lambda u: float(f(u)[0]), grid[i], method="L-BFGS-B", bounds=[(0.0, 1.0)] * len(es)
            )
            if res.fun < best_v:
                best_u, best_v = np.clip(res.x, 0.0, 1.0), float(res.fun)
        raw = lo + best_u * (hi - lo)
        per.append(
            SetOptimum(
                exploration_set=es,
                x={v: float(raw[j]) for j, v in enumerate(es)},
                value=best_v,
                grid_max=float(vals.max()),
            )
        )
    if not per:
        raise InvalidTask("no exploration set to optimise")
    top = min(per, key=lambda p: p.value)
    return GroundTruth(
        value=top.value,
        exploration_set=top.exploration_set,
        x=top.x,
        per_set=per,
        n_mc=n_mc,
        seed=seed,
    )


def run_cbo(
    scm: SCM,
    *,
    graph: nx.DiGraph | None = None,
    exploration_sets: Sequence[Sequence[str]] | None = None,
    config: CBOConfig | None = None,
    seed: int = 0,
    causal_prior: bool = True,
) -> CBOTrace:
    """Causal BO on ``scm`` assuming causal ``graph`` (default: the true one).

    Args:
        graph: the DAG used for exploration sets and do-priors (any candidate DAG over the
            SCM's variables; the SCM itself still generates the data).
        exploration_sets: default: minimal intervention sets of ``graph`` (up to
            ``config.max_set_size``) over the SCM's manipulable variables.
        causal_prior: False replaces the do-prior by the observational mean (ablation).
    """
    with one_thread():
        return _run_cbo(scm, graph=graph, exploration_sets=exploration_sets, config=config,
                        seed=seed, causal_prior=causal_prior)  # fmt: skip


def run_bo(
    scm: SCM, *, config: CBOConfig | None = None, seed: int = 0, n_init: int = 2
) -> CBOTrace:
    """Plain BO: one standard GP over all manipulable variables jointly, same budget rules."""
    with one_thread():
        return _run_bo(scm, config=config, seed=seed, n_init=n_init)
