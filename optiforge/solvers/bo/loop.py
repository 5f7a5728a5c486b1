"""Bayesian optimisation loop (minimisation) over a pluggable GP kernel, acquisition by qLogEI.

This module holds the loop's parts (problem, counted objective, GP model, acquisition,
trace); ``BOLoop`` itself drives a ``BOSession`` and so lives in ``session.py``, which
imports from here and never the other way (no import circle).

Inputs are mapped to ``[0,1]^D`` and outputs standardised before modelling. Our
``ExactGP`` is exposed to BoTorch as a ``Model`` whose ``posterior`` is computed in closed
form (differentiable in ``X``), so ``qLogExpectedImprovement`` and ``optimize_acqf`` work
unchanged with any ``KernelSpec`` written for 2-D `n x d` inputs.

``budget`` counts *every* objective evaluation, the initial design included; the loop
never calls the objective more often (the counter raises ``BudgetExceeded`` otherwise).

Resume: with ``resume_path`` the loop appends every evaluation (unit-cube points, values,
round, kernel) to a JSONL file, fsynced, as soon as the objective returns; a later loop
given the same file reloads those evaluations instead of calling the objective again and
continues. Each round's randomness (acquisition raw samples and MC base samples, fallback
points, the GP fit) is seeded from ``(seed, round)``, resume or not, so a resumed run
proposes the same points as an uninterrupted one and methods with the same seed are
paired round by round; kernel refreshes before the resume point are
replayed on the reloaded data (providers are expected to be cheap to replay, e.g.
checkpointed searches). A problem that draws observation noise from a stream may define
``replay_noise(sizes: list[int])``; it is called with the batch sizes of the reloaded
evaluations so the stream continues where the interrupted run left it.

Kernels that must not run in this process (LLM-written code): a kernel provider may
return an object with ``expression`` and ``propose_round(Xu, target, rnd, *, fit_seed,
round_seed, gp_restarts)`` instead of a ``KernelSpec``; it fits and optimises the
acquisition elsewhere (a sandbox) and returns ``ProposedPoints``, which the loop checks
(shape, finite, inside the cube) and evaluates instead of running its own acquisition.
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import torch
from botorch.acquisition.logei import qLogExpectedImprovement, qLogNoisyExpectedImprovement
from botorch.models.model import Model
from botorch.optim import optimize_acqf
from botorch.posteriors.gpytorch import GPyTorchPosterior
from gpytorch.distributions import MultivariateNormal
from torch import Tensor
from torch.quasirandom import SobolEngine

from optiforge.errors import BudgetExceeded, SolverError
from optiforge.solvers.gp.exact import ExactGP
from optiforge.solvers.gp.kernels import KernelSpec

DTYPE = torch.float64

KernelProvider = Callable[[Tensor, Tensor, int], KernelSpec]
"""``(X_unit n x D, y_standardised n, round) -> KernelSpec``; y is standardised for minimisation."""

ModelFactory = Callable[[Tensor, Tensor, int], Model]
"""``(X_unit n x D, targets n (maximise), round) -> fitted BoTorch Model``."""


class Problem(Protocol):
    """What the loop needs from an objective: box ``bounds`` (`2 x D`) and a batch call."""

    @property
    def bounds(self) -> Tensor:
        """`2 x D` box."""
        ...

    def __call__(self, X: Tensor) -> Tensor:
        """`n x D` -> `n` values to minimise."""
        ...


@dataclass
class Trace:
    """Everything one optimisation run evaluated, in evaluation order (minimisation)."""

    name: str
    seed: int
    X: Tensor
    """`n x D` evaluated points in the problem's own bounds."""
    y: Tensor
    """`n` observed values."""
    wall_s: float = 0.0
    kernels: list[str] = field(default_factory=list)
    """Kernel expression used at each BO round (empty for model-free baselines)."""
    n_fallbacks: int = 0
    """Rounds where the model failed and a random point was taken instead."""
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def best_trace(self) -> Tensor:
        """`n` running minimum of ``y`` (the convergence trace)."""
        return torch.cummin(self.y, dim=0).values

    @property
    def best_value(self) -> float:
        """Best observed value."""
        return float(self.y.min())

    @property
    def best_x(self) -> Tensor:
        """`D` point with the best observed value."""
        return self.X[int(self.y.argmin())]

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly summary (no X)."""
        return {
            "name": self.name,
            "seed": self.seed,
            "n": int(self.y.numel()),
            "best_value": self.best_value,
            "best_trace": self.best_trace.tolist(),
            "wall_s": self.wall_s,
            "kernels": self.kernels,
            "n_fallbacks": self.n_fallbacks,
            **self.info,
        }


class CountedObjective:
    """Wraps a problem in unit-cube coordinates and enforces the evaluation budget."""

    def __init__(self, problem: Problem, budget: int) -> None:
        b = torch.as_tensor(problem.bounds, dtype=DTYPE)
        if b.ndim != 2 or b.shape[0] != 2 or not bool((b[1] > b[0]).all()):
            raise SolverError("problem.bounds must be `2 x D` with upper > lower")
        self.problem, self.budget, self.lb, self.ub = problem, budget, b[0], b[1]
        self.used = 0
        self.X: list[Tensor] = []
        self.y: list[Tensor] = []

    @property
    def dim(self) -> int:
        return int(self.lb.numel())

    @property
    def left(self) -> int:
        return self.budget - self.used

    def to_problem(self, Xu: Tensor) -> Tensor:
        return self.lb + (self.ub - self.lb) * Xu

    def __call__(self, Xu: Tensor) -> Tensor:
        """Evaluate `q x D` unit-cube points; returns `q` values."""
        q = Xu.shape[0]
        if self.used + q > self.budget:
            raise BudgetExceeded(
                f"{self.used + q} evaluations > budget {self.budget}",
                limit="evaluations",
                used=self.used + q,
                cap=self.budget,
            )
        X = self.to_problem(Xu.detach().to(DTYPE).clamp(0, 1))
        y = torch.as_tensor(self.problem(X), dtype=DTYPE).reshape(-1)
        if y.numel() != q:
            raise SolverError(f"objective returned {y.numel()} values for {q} points")
        self.used += q
        self.X.append(X)
        self.y.append(y)
        return y

    def trace(self, name: str, seed: int, t0: float, **kw: Any) -> Trace:
        return Trace(
            name=name,
            seed=seed,
            X=torch.cat(self.X),
            y=torch.cat(self.y),
            wall_s=time.perf_counter() - t0,
            **kw,
        )


def sobol(n: int, d: int, seed: int) -> Tensor:
    """`n x d` scrambled Sobol points in the unit cube."""
    return SobolEngine(d, scramble=True, seed=seed).draw(n).to(DTYPE)


def standardize(y: Tensor) -> Tensor:
    """(y - mean) / std with std floored (constant data stays finite)."""
    s = y.std() if y.numel() > 1 else torch.ones((), dtype=y.dtype)
    return (y - y.mean()) / s.clamp_min(1e-9)


class ExactGPModel(Model):
    """BoTorch view of a fitted ``ExactGP``: closed-form joint posterior, differentiable in ``X``."""

    def __init__(self, gp: ExactGP, chunk: int = 128) -> None:
        super().__init__()
        if gp.params is None or gp.X is None or gp._L is None or gp._alpha is None:
            raise SolverError("ExactGPModel needs a fitted ExactGP")
        self.gp = gp
        self.chunk = chunk

    @property
    def num_outputs(self) -> int:
        return 1

    @property
    def batch_shape(self) -> torch.Size:
        return torch.Size([])

    def posterior(  # type: ignore[override]
        self,
        X: Tensor,
        output_indices: Any = None,
        observation_noise: bool | Tensor = False,
        posterior_transform: Any = None,
        **kwargs: Any,
    ) -> GPyTorchPosterior:
        """Joint posterior over the last-but-one dimension of `batch x q x d` ``X``."""
        gp, p = self.gp, self.gp.params
        assert p is not None and gp.X is not None and gp._L is not None and gp._alpha is not None
        X = X.to(DTYPE)
        batch, (q, d) = X.shape[:-2], X.shape[-2:]
        Xb = X.reshape(-1, q, d)  # B x q x d
        B = Xb.shape[0]
        Xf = Xb.reshape(-1, d)
        Ks = p.outputscale * gp.kernel.fn(gp.X, Xf, p.kernel)  # n x Bq
        mean = (p.mean + Ks.transpose(0, 1) @ gp._alpha).reshape(B, q)
        V = (
            torch.linalg.solve_triangular(gp._L, Ks, upper=False).reshape(-1, B, q).permute(1, 0, 2)
        )  # B x n x q
        prior_blocks = []
        for i in range(0, B, self.chunk):
            Xc = Xb[i : i + self.chunk].reshape(-1, d)
            c = Xc.shape[0] // q
            Kc = (p.outputscale * gp.kernel.fn(Xc, Xc, p.kernel)).reshape(c, q, c, q)
            idx = torch.arange(c)
            prior_blocks.append(Kc[idx, :, idx, :])  # c x q x q: the per-batch diagonal blocks
        prior = torch.cat(prior_blocks)
        cov = prior - V.transpose(-1, -2) @ V
        eye = torch.eye(q, dtype=DTYPE)
        cov = 0.5 * (cov + cov.transpose(-1, -2)) + 1e-9 * eye
        if observation_noise is True:
            cov = cov + p.noise * eye
        mvn = MultivariateNormal(mean.reshape(*batch, q), cov.reshape(*batch, q, q))
        post = GPyTorchPosterior(mvn)
        if posterior_transform is not None:
            return posterior_transform(post)
        return post


@dataclass
class ProposedPoints:
    """Points proposed for one round by a fit + acquisition that ran elsewhere (a sandbox).

    ``X`` is `q x D` in the unit cube; it came from an untrusted process, so the loop
    checks it (``checked_points``) before evaluating anything.
    """

    X: Tensor


def checked_points(X: Any, q: int, D: int) -> Tensor:
    """`q' x D` (1 <= q' <= q) finite unit-cube points from ``X``, or ``SolverError``."""
    try:
        X = torch.as_tensor(X, dtype=DTYPE)
    except (TypeError, ValueError, RuntimeError) as e:
        raise SolverError(f"proposed points are not a numeric array: {e}") from e
    if X.ndim != 2 or X.shape[1] != D or X.shape[0] < 1:
        raise SolverError(f"proposed points have shape {tuple(X.shape)}, expected (<= {q}, {D})")
    if not bool(torch.isfinite(X).all()):
        raise SolverError("proposed points are not finite")
    if bool(((X < -1e-9) | (X > 1 + 1e-9)).any()):
        raise SolverError("proposed points leave the unit cube")
    return X[:q].clamp(0.0, 1.0)


def round_seed(seed: int, rnd: int) -> int:
    """Seed of round ``rnd``'s randomness: independent of what ran before (resumable)."""
    return (seed * 1_000_003 + 7919 * (rnd + 1)) % (2**63 - 1)


class ExactGPFactory:
    """Model factory over a kernel provider; ``replay`` re-runs past refreshes on resume."""

    def __init__(
        self, kernel_provider: KernelProvider, refresh_every: int, gp_restarts: int, seed: int
    ) -> None:
        self.provider, self.refresh_every = kernel_provider, refresh_every
        self.gp_restarts, self.seed = gp_restarts, seed
        self.used: list[str] = []
        self.current: KernelSpec | None = None
        self.per_round_seed = True
        """Reseed torch from ``(seed, round)`` before each fit: every method with the same
        seed shares round r's randomness (paired seeds), resumable or not."""

    def _refresh(self, Xu: Tensor, target: Tensor, rnd: int) -> None:
        # The provider sees y for minimisation (standardised), not the negated target.
        self.current = self.provider(Xu, -target, rnd)

    def replay(self, Xu: Tensor, y: Tensor, n_init: int, q: int, rounds: int) -> None:
        """Re-run the refreshes of rounds ``< rounds`` on their data (`n_init + r*q` rows)."""
        for r in range(0, rounds, self.refresh_every):
            n = n_init + r * q
            self._refresh(Xu[:n], -standardize(y[:n]), r)

    def __call__(self, Xu: Tensor, target: Tensor, rnd: int) -> Model:
        if self.current is None or rnd % self.refresh_every == 0:
            self._refresh(Xu, target, rnd)
        spec = self.current
        assert spec is not None
        self.used.append(spec.expression)
        return kernel_model(  # type: ignore[return-value]
            spec, Xu, target, rnd, seed=self.seed, gp_restarts=self.gp_restarts,
            resumable=self.per_round_seed,
        )  # fmt: skip


def kernel_model(
    spec: KernelSpec,
    Xu: Tensor,
    target: Tensor,
    rnd: int,
    *,
    seed: int,
    gp_restarts: int,
    resumable: bool,
) -> Model | ProposedPoints:
    """Round ``rnd``'s model with kernel ``spec``: an ``ExactGP`` fitted here, or the
    ``ProposedPoints`` of a kernel that fits and proposes elsewhere (``propose_round``).

    resumable: reseed torch from ``(seed, rnd)`` before the fit (a resumable loop)."""
    propose = getattr(spec, "propose_round", None)
    if callable(propose):
        # A kernel whose code must not run here: it fits and proposes elsewhere.
        out = propose(
            Xu,
            target,
            rnd,
            fit_seed=seed + rnd,
            round_seed=round_seed(seed, rnd),
            gp_restarts=gp_restarts,
        )
        if not isinstance(out, ProposedPoints):
            raise SolverError(f"propose_round returned {type(out).__name__}, not ProposedPoints")
        return out
    if resumable:
        # Reseed after the provider: however much randomness it used (a resumed, partly
        # checkpointed search uses less), the fit and the acquisition see the same stream.
        torch.manual_seed(round_seed(seed, rnd))
    gp = ExactGP(spec, n_restarts=gp_restarts, seed=seed + rnd).fit(Xu, target)
    return ExactGPModel(gp)


def exact_gp_factory(
    kernel_provider: KernelProvider, *, refresh_every: int = 1, gp_restarts: int = 1, seed: int = 0
) -> tuple[ModelFactory, list[str]]:
    """Model factory that asks ``kernel_provider`` for a kernel every ``refresh_every`` rounds.

    Returns the factory and the list it appends each round's kernel expression to.
    """
    f = ExactGPFactory(kernel_provider, refresh_every, gp_restarts, seed)
    return f, f.used


@dataclass
class AcqConfig:
    """Acquisition optimisation settings; small defaults because CI has 2 CPU cores."""

    num_restarts: int = 4
    raw_samples: int = 128
    maxiter: int = 50
    mc_samples: int = 128
    acquisition: str = "qLogEI"
    """``qLogEI`` (improvement over the best observed value) or ``qLogNEI`` (noisy: the
    improvement is over the model's posterior at the observed points, integrated by MC)."""

    def __post_init__(self) -> None:
        if self.acquisition not in ACQUISITIONS:
            raise SolverError(
                f"acquisition {self.acquisition!r}: choose from {', '.join(ACQUISITIONS)}"
            )


ACQUISITIONS = ("qLogEI", "qLogNEI")


def optimize_qlogei(
    model: Model, target: Tensor, q: int, D: int, cfg: AcqConfig, X_baseline: Tensor | None = None
) -> Tensor:
    """`q x D` maximiser of the acquisition (``cfg.acquisition``) over ``[0,1]^D`` for
    ``model`` fitted to ``target`` (maximise) at ``X_baseline`` (needed by qLogNEI)."""
    bounds = torch.stack([torch.zeros(D, dtype=DTYPE), torch.ones(D, dtype=DTYPE)])
    if cfg.acquisition == "qLogNEI":
        if X_baseline is None:
            raise SolverError("qLogNEI needs the observed points (X_baseline)")
        acqf: Any = qLogNoisyExpectedImprovement(model, X_baseline=X_baseline, prune_baseline=True)
    else:
        acqf = qLogExpectedImprovement(model, best_f=target.max())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # optimizer-convergence chatter, not errors
        cand, _ = optimize_acqf(
            acqf,
            bounds=bounds,
            q=q,
            num_restarts=cfg.num_restarts,
            raw_samples=cfg.raw_samples,
            options={"maxiter": cfg.maxiter},
        )
    return cand.detach()
