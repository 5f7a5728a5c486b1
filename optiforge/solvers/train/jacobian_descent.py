"""Jacobian descent (JD) and instance-wise risk minimization (IWRM).

Jacobian descent minimizes a vector objective ``f: R^n -> R^m`` by aggregating the rows of
its Jacobian ``J`` (``m x n``, one gradient per objective) into one update direction.
UPGrad projects each row onto the dual cone of all rows (the directions that conflict with
no objective, ``J d >= 0``) and averages the projections, so the update never increases an
objective to first order. Most aggregators (UPGrad, MGDA, Mean) only need the Gramian
``G = J J^T`` (``m x m``): they compute weights ``w`` (``(m,)``) from ``G`` and the update
is ``J^T w``, which is one ordinary backward of ``w . losses``. The Gramian can be built
layer by layer without ever holding ``J``; that is the memory-saving path.

IWRM makes each training example its own objective: the losses vector is the per-example
loss of a batch (``ModelProblem.losses``, ``(B,)``), so ``m = B``.

What is torchjd's (0.18, the ``train`` extra) and what is ours:

- torchjd: the aggregators and their weightings (``UPGrad``/``UPGradWeighting``, ``MGDA``,
  ``Mean``; the dual-cone projection is its ``QuadprogProjector``), the full-Jacobian
  path (``torchjd.autojac.backward`` + ``jac_to_grad``) and the Gramian engine
  (``torchjd.autogram.Engine``, module hooks that accumulate ``G`` layer by layer).
- ours: ``jd_step`` (one optimizer step on either path with any torch optimizer, the engine
  cached per model), ``upgrad`` (the projector precision we use, see below),
  ``min_norm_in_hull`` (the Pareto-stationarity criterion of the claims), ``PeakTensorBytes``
  (deterministic peak-memory accounting), the IWRM loop ``fit_jd`` and the catalogue
  adapter ``UPGRAD_IWRM``; the experiments are ``benchmarks/jd_claims.py``.

Choices the paper leaves open, documented and tested:

- Projector precision. torchjd's default ``QuadprogProjector(reg_eps=1e-4)`` adds
  ``1e-4 I`` to the trace-normalized Gramian; a row whose squared norm is below ~1e-4 of the
  total is then no longer protected: on a 3-row Jacobian whose row norms span ~1300x
  UPGrad's direction has cosine -0.48 with the smallest row (it conflicts), and on the
  Pareto benchmark the iterates end with the smallest objective x50 (vs x1.2 with ours).
  A 1e-9 start is not enough either: near the front the rows are almost dependent and the
  iterates drift along it at the small objective's expense (x6 on one seed).
  ``upgrad()`` starts from ``reg_eps=1e-13`` for a float64 Gramian (1e-7 for float32)
  and raises it x100 only when quadprog refuses (``TightProjector``).
- Where torchjd's engine cannot vmap a module over the batch (an explicit attention mask
  is not batched), ``fit_jd`` drops the engine on the first step and materializes ``J``.
- Gramian path: ``Engine(model, batch_dim=0)`` when the losses are per example (IWRM; the
  modules must treat examples independently: no BatchNorm), ``batch_dim=None`` otherwise.
- IWRM's optimizer: SGD with heavy-ball momentum (as the ``sgd`` ERM baseline, so the
  two differ only in the aggregation); UPGrad's default preference is the mean, so with
  no conflict the update equals ERM's mean gradient.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from qpsolvers import ProblemError as QPProblemError
from qpsolvers import solve_qp
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten
from torchjd.aggregation import (
    MGDA,
    Aggregator,
    GramianWeightedAggregator,
    Mean,
    UPGrad,
    Weighting,
)
from torchjd.autogram import Engine
from torchjd.autojac import backward as jac_backward
from torchjd.autojac import jac_to_grad
from torchjd.linalg import QuadprogProjector

from optiforge.solvers.train.api import HParam, ModelProblem, TrainMethod, TrainResult

UPGRAD_REG_EPS = {torch.float64: 1e-13, torch.float32: 1e-7}
"""Our first ``reg_eps`` for UPGrad's dual-cone QP by the Gramian's dtype (torchjd's
default is 1e-4 for all): about the dtype's rounding of a trace-normalized Gramian."""


class TightProjector(QuadprogProjector):
    """torchjd's quadprog dual-cone projector with the smallest regularization that keeps
    the QP solvable: ``reg_eps`` (``None``: by the Gramian's dtype, ``UPGRAD_REG_EPS``)
    first, times 100 on each failure (a singular Gramian: a batch holding one example
    twice, rounding), up to ``max_reg_eps``."""

    def __init__(self, reg_eps: float | None = None, max_reg_eps: float = 1e-3) -> None:
        super().__init__(reg_eps=0.0 if reg_eps is None else reg_eps)
        self.first_reg_eps = reg_eps
        self.max_reg_eps = max_reg_eps
        self.retries = 0
        """How many QPs needed a larger ``reg_eps`` (diagnostic)."""

    def __call__(self, u: torch.Tensor, g: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        eps = self.first_reg_eps
        if eps is None:
            eps = UPGRAD_REG_EPS.get(g.dtype, UPGRAD_REG_EPS[torch.float32])
        while True:
            self.reg_eps = eps
            try:
                return super().__call__(u, g)  # type: ignore[arg-type]
            except (QPProblemError, ValueError):
                if eps * 100 > self.max_reg_eps:
                    raise
                eps *= 100
                self.retries += 1


def upgrad(reg_eps: float | None = None) -> UPGrad:
    """torchjd's UPGrad with a tight dual-cone projection (``TightProjector``)."""
    return UPGrad(projector=TightProjector(reg_eps=reg_eps))


def make_aggregator(name: str) -> Aggregator:
    """``upgrad`` (ours, tight projector), ``upgrad-torchjd`` (torchjd's defaults), ``mgda``
    or ``mean``."""
    makers: dict[str, Callable[[], Aggregator]] = {
        "upgrad": upgrad,
        "upgrad-torchjd": UPGrad,
        "mgda": MGDA,
        "mean": Mean,
    }
    if name not in makers:
        raise ValueError(f"unknown aggregator {name!r} (known: {', '.join(makers)})")
    return makers[name]()


def gramian_weighting(aggregator: Aggregator) -> Weighting[Any]:
    """The weighting that maps the Gramian ``G`` (``m x m``) to the aggregator's weights
    ``w`` (``(m,)``), so that ``J^T w`` is its aggregation; ``ValueError`` for aggregators
    that need the Jacobian itself."""
    if isinstance(aggregator, GramianWeightedAggregator):
        return aggregator.gramian_weighting
    if isinstance(aggregator, Mean):  # its weights depend on m only
        return aggregator.weighting
    raise ValueError(f"{aggregator} does not weight from the Gramian; use gramian=False")


_ENGINES: weakref.WeakKeyDictionary[nn.Module, dict[int | None, Engine]] = (
    weakref.WeakKeyDictionary()
)


def engine_for(model: nn.Module, batch_dim: int | None) -> Engine:
    """The autogram engine hooked on ``model`` (made once per model and ``batch_dim``: each
    engine adds forward hooks, so a fresh one per step would pile them up). Cached weakly
    by model; a model whose own parameters the engine hooks (``Point``) is kept alive by
    its engine, so a loop over many such models should pass ``engine=`` to ``jd_step``."""
    per_model = _ENGINES.setdefault(model, {})
    if batch_dim not in per_model:
        per_model[batch_dim] = Engine(model, batch_dim=batch_dim)
    return per_model[batch_dim]


@dataclass
class JDStep:
    """What one step saw: the objectives' values ``losses`` (``(m,)``, before the step) and
    the aggregator's weights ``weights`` (``(m,)``; ``None`` for an aggregator without)."""

    losses: torch.Tensor
    weights: torch.Tensor | None
    length_ratio: float | None = None
    """``||J^T w|| / ||J^T 1/m||``: the update's length over the mean gradient's (Gramian
    path only; UPGrad's is >= 1 where rows conflict, it adds back what the mean cancels)."""


def jd_step(
    model: nn.Module,
    losses_fn: Callable[[], torch.Tensor],
    aggregator: Aggregator,
    optimizer: torch.optim.Optimizer,
    gramian: bool = True,
    batch_dim: int | None = 0,
    engine: Engine | None = None,
) -> JDStep:
    """One Jacobian-descent step: ``losses_fn()`` (a forward pass, ``(m,)``) is
    differentiated, its Jacobian rows aggregated by ``aggregator`` into the parameters'
    ``.grad``, then ``optimizer.step()``.

    ``gramian=True``: torchjd's autogram engine builds ``G = J J^T`` layer by layer, the
    aggregator's weighting gives ``w`` from ``G`` and one backward of ``w . losses`` writes
    ``J^T w`` (``J`` is never materialized; ``batch_dim`` is the losses' batch dimension,
    0 for per-example losses, ``None`` for objectives that are not examples).
    ``gramian=False``: torchjd's autojac materializes ``J`` (``m x n_params``) and
    ``jac_to_grad`` aggregates it. The two give the same update up to float rounding.
    """
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer.zero_grad(set_to_none=True)
    weights: torch.Tensor | None
    length_ratio: float | None = None
    if gramian:
        weighting = gramian_weighting(aggregator)
        eng = engine if engine is not None else engine_for(model, batch_dim)
        losses = losses_fn()
        _check_losses(losses)
        g = eng.compute_gramian(losses)
        weights = weighting(g).detach()
        mean_w = torch.full_like(weights, 1.0 / weights.numel())
        length_ratio = float((weights @ g @ weights).clamp_min(0).sqrt() / (mean_w @ g @ mean_w).clamp_min(1e-30).sqrt())  # fmt: skip
        losses.backward(weights)
    else:
        losses = losses_fn()
        _check_losses(losses)
        jac_backward(losses, inputs=params)
        weights = jac_to_grad(params, aggregator)
    optimizer.step()
    return JDStep(
        losses=losses.detach(),
        weights=None if weights is None else weights.detach(),
        length_ratio=length_ratio,
    )


def _check_losses(losses: torch.Tensor) -> None:
    if losses.dim() != 1:
        raise ValueError(f"losses_fn must return a vector (m,), got shape {tuple(losses.shape)}")


def min_norm_in_hull(gramian: torch.Tensor) -> float:
    """Pareto-stationarity criterion ``min_{w in simplex} ||J^T w||`` from ``G = J J^T``
    (``m x m``): zero exactly at Pareto-stationary points (for convex objectives, on the
    Pareto front). Solved as a QP (quadprog) on the trace-normalized Gramian in float64."""
    g = gramian.detach().to(torch.float64).cpu()
    m = g.shape[0]
    scale = float(torch.trace(g))
    if scale <= 0.0:
        return 0.0
    gn = (g / scale).numpy()
    gn = 0.5 * (gn + gn.T) + 1e-13 * np.eye(m)
    w = solve_qp(gn, np.zeros(m), A=np.ones((1, m)), b=np.ones(1), lb=np.zeros(m), solver="quadprog")  # fmt: skip
    if w is None:
        raise ValueError("min_norm_in_hull: the QP failed")
    return float(np.sqrt(max(float(w @ gn @ w), 0.0) * scale))


class PeakTensorBytes(TorchDispatchMode):
    """Deterministic peak-memory accounting: inside the ``with`` block every tensor storage
    an aten op creates is counted until it is freed; ``peak`` is the most bytes alive at
    once (storages alive before the block are not counted) and ``largest`` the biggest
    single storage. The count is of tensors, not of allocator blocks, so it is the same on
    every run (the allocator's cache and fragmentation are left out)."""

    def __init__(self) -> None:
        super().__init__()
        self.live: dict[int, int] = {}
        self.current = 0
        self.peak = 0
        self.largest = 0

    def _free(self, key: int) -> None:
        self.current -= self.live.pop(key, 0)

    def __torch_dispatch__(
        self,
        func: Any,
        types: Any,
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if not isinstance(t, torch.Tensor) or t.device.type == "meta":
                continue
            try:
                storage = t.untyped_storage()
            except (RuntimeError, NotImplementedError):  # a wrapper tensor without storage
                continue
            n = storage.nbytes()
            key = storage.data_ptr()
            if n == 0 or key in self.live:
                continue
            self.live[key] = n
            self.current += n
            self.peak = max(self.peak, self.current)
            self.largest = max(self.largest, n)
            weakref.finalize(storage, self._free, key)
        return out


def fit_jd(
    problem: ModelProblem,
    aggregator: Aggregator | None,
    lr: float,
    momentum: float,
    steps: int,
    seed: int,
    gramian: bool = True,
) -> TrainResult:
    """Train ``problem``'s model for ``steps`` steps of SGD (heavy-ball ``momentum``): IWRM
    (each example of the batch its own objective, rows aggregated by ``aggregator`` via
    ``jd_step``) or, with ``aggregator=None``, plain ERM on the mean loss. Same data order
    and initialization for both, so they pair. ``curve`` is the batch's mean loss;
    ``extra`` holds the worst per-example batch loss per step (``max_curve``) and, for JD on
    the Gramian path, the mean over steps of ``JDStep.length_ratio`` (``mean_length_ratio``:
    how much longer the update is than ERM's mean gradient on the same batch)."""
    torch.manual_seed(seed)
    model = problem.make_model(seed)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.SGD(params, lr=lr, momentum=momentum)
    gen = torch.Generator().manual_seed(seed + 1)
    engine: Engine | None = None
    if aggregator is not None and gramian:
        try:
            engine = Engine(model, batch_dim=0)
        except ValueError:  # a module that mixes examples (BatchNorm): materialize J instead
            gramian = False
    curve: list[float] = []
    max_curve: list[float] = []
    length_ratios: list[float] = []
    for step in range(steps):
        batch = problem.batch(step, gen)
        if aggregator is None:
            losses = problem.losses(model, batch)
            opt.zero_grad(set_to_none=True)
            losses.mean().backward()
            opt.step()
            seen = losses.detach()
        else:
            try:
                info = jd_step(
                    model,
                    lambda b=batch: problem.losses(model, b),  # type: ignore[misc]
                    aggregator,
                    opt,
                    gramian=gramian,
                    engine=engine,
                )
            except (ValueError, RuntimeError):
                # The engine vmaps each module over the batch; a module fed an unbatched
                # tensor (an attention mask) breaks that on the first step, before any
                # update. Drop the engine (its hooks go with it) and materialize J instead.
                if not gramian or step > 0:
                    raise
                engine, gramian = None, False
                gc.collect()
                info = jd_step(model, lambda b=batch: problem.losses(model, b), aggregator, opt, gramian=False)  # type: ignore[misc]  # fmt: skip
            seen = info.losses
            if info.length_ratio is not None:
                length_ratios.append(info.length_ratio)
        curve.append(float(seen.mean()))
        max_curve.append(float(seen.max()))
    extra: dict[str, Any] = {"max_curve": max_curve}
    if aggregator is not None:
        extra["path"] = "gramian" if gramian else "jacobian"
    if length_ratios:
        extra["mean_length_ratio"] = float(np.mean(length_ratios))
    return TrainResult(model=model, curve=curve, extra=extra)


def _upgrad_iwrm(problem: ModelProblem, hp: dict[str, float], steps: int, seed: int) -> TrainResult:
    return fit_jd(problem, upgrad(), hp["lr"], hp["momentum"], steps, seed)


UPGRAD_IWRM = TrainMethod(
    name="upgrad-iwrm",
    description=(
        "Jacobian descent with UPGrad, instance-wise risk minimization: each example of the "
        "batch is its own objective; the per-example gradients are projected onto their dual "
        "cone (no example's loss rises to first order) and averaged, computed from the "
        "B x B Gramian (torchjd's autogram); SGD with momentum on the result"
    ),
    kinds=frozenset({"classify", "lm"}),
    hparams={"lr": HParam(1e-3, 1.0, 0.05), "momentum": HParam(0.0, 0.99, 0.9, log=False)},
    run=_upgrad_iwrm,
)


class Point(nn.Module):
    """A bare point ``x`` (``(d,)``) as a module, so Jacobian descent on a vector objective
    of ``x`` goes through the same ``jd_step`` (the engine hooks modules, not tensors)."""

    def __init__(self, x0: torch.Tensor) -> None:
        super().__init__()
        self.x = nn.Parameter(x0.clone())

    def forward(self) -> torch.Tensor:
        return self.x


@dataclass
class ConflictingQuadratics:
    """``m`` strongly convex quadratics in ``R^d`` with conflicting minimizers and very
    different scales: ``f_i(x) = 0.5 (x - c_i)^T A_i (x - c_i)``, ``A_i = s_i Q_i D Q_i^T``
    (``D`` log-spaced in ``[1, cond]``, ``Q_i`` random rotations, ``c_i ~ N(0, 4 I)``).
    The start ``x0`` lies at distance 1 from the smallest-scale objective's minimizer, so
    an aggregation dominated by scale must raise that objective. ``a``: ``m x d x d``,
    ``c``: ``m x d``, ``x0``: ``(d,)``."""

    a: torch.Tensor
    c: torch.Tensor
    x0: torch.Tensor

    @classmethod
    def make(
        cls, seed: int, scales: tuple[float, ...] = (10.0, 1.0, 0.1), d: int = 8, cond: float = 10.0
    ) -> ConflictingQuadratics:
        g = torch.Generator().manual_seed(seed)
        eig = torch.logspace(0.0, float(np.log10(cond)), d, dtype=torch.float64)
        a, c = [], []
        for s in scales:
            q, _ = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))
            a.append(s * q @ torch.diag(eig) @ q.T)
            c.append(2.0 * torch.randn(d, generator=g, dtype=torch.float64))
        u = torch.randn(d, generator=g, dtype=torch.float64)
        return cls(a=torch.stack(a), c=torch.stack(c), x0=c[-1] + u / u.norm())

    @property
    def smoothness(self) -> float:
        """The largest curvature over the objectives (the step size's scale)."""
        return float(torch.linalg.eigvalsh(self.a).max())

    def values(self, x: torch.Tensor) -> torch.Tensor:
        """``(m,)``: every objective at ``x``."""
        r = x.unsqueeze(0) - self.c
        return 0.5 * torch.einsum("md,mde,me->m", r, self.a, r)

    def jacobian(self, x: torch.Tensor) -> torch.Tensor:
        """``m x d``: the objectives' gradients at ``x``."""
        return torch.einsum("mde,me->md", self.a, x.unsqueeze(0) - self.c)


def descend(
    problem: ConflictingQuadratics,
    aggregator: Aggregator,
    steps: int,
    lr: float,
    path: str = "analytic",
) -> dict[str, float]:
    """``steps`` steps of Jacobian descent at step size ``lr`` from ``x0``: ``path`` is
    ``"analytic"`` (``x -= lr * aggregator(J(x))`` with the closed-form Jacobian, fast) or
    ``"gramian"``/``"jacobian"`` (``jd_step`` on a ``Point`` with plain SGD, through
    autograd; the same iterates up to rounding). Returns the stationarity ratio
    (``min_norm_in_hull`` at the end over at the start), the worst and best objective ratio
    ``f_i(x_T) / f_i(x0)`` and whether every objective decreased (``dominates_start``)."""
    if path == "analytic":
        x = problem.x0.clone()
        for _ in range(steps):
            x = x - lr * aggregator(problem.jacobian(x))
    elif path in ("gramian", "jacobian"):
        point = Point(problem.x0)
        opt = torch.optim.SGD(point.parameters(), lr=lr)
        for _ in range(steps):
            jd_step(point, lambda: problem.values(point()), aggregator, opt, gramian=path == "gramian", batch_dim=None)  # fmt: skip
        x = point.x.detach()
    else:
        raise ValueError(f"unknown path {path!r}")
    j0, jt = problem.jacobian(problem.x0), problem.jacobian(x)
    ratio = problem.values(x) / problem.values(problem.x0)
    return {
        "stationarity": min_norm_in_hull(jt @ jt.T) / min_norm_in_hull(j0 @ j0.T),
        "worst_ratio": float(ratio.max()),
        "best_ratio": float(ratio.min()),
        "dominates_start": float(bool((ratio < 1.0).all())),
    }
