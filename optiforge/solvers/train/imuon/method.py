"""Catalogue adapters for ``lowrank`` problems (``LowRankProblem``): ``imuon`` keeps its own
point on the fixed-rank manifold, ``muon-factors`` runs Muon on the model's factors.

``imuon``: the model's ``L`` ``(m, r)``, ``R`` ``(n, r)`` give the start ``X0 = L R^T`` (a
point of ``FixedRank(shape, rank)``); if ``X0`` has rank below ``r`` (e.g. a LoRA-style
``R = 0`` start) the missing directions are filled with random orthonormal ones at singular
value ``1e-3 * max(1, sigma_1(X0))`` (a rank-``r`` point is needed; our choice). Training
calls ``problem.matrix_losses(X, batch)`` on the point (float64 inside, cast to the model's
dtype for the loss); the step is iMuon's with the spectral norm, momentum ``beta`` (the
stochastic version), dual scaling (``scale="dual"``: steepest descent in the intrinsic
norm; in ``benchmarks/imuon_claims.py`` it beat normalized steps with a decaying length,
Muon's recipe, by orders of magnitude on stochastic matrix sensing) and a linear decay of
``lr`` to 0 over the run (settles under gradient noise; our choice). At the end the
balanced factors ``L = U diag(sqrt s)``, ``R = V diag(sqrt s)`` are written into the model.

``muon-factors``: the naive baseline, ``FactorMuon`` (exact polar factor, the same momentum,
scaling and schedule) on every matrix parameter of the model, loss ``problem.losses``.
"""

from __future__ import annotations

import math
from typing import Any

import geoopt
import torch
from torch import nn

from optiforge.solvers.train.api import HParam, LowRankProblem, TrainMethod, TrainResult
from optiforge.solvers.train.imuon.manifolds import FixedRank
from optiforge.solvers.train.imuon.optim import FactorMuon, IMuon


def _factor_params(model: nn.Module, problem: LowRankProblem) -> tuple[nn.Parameter, nn.Parameter]:  # fmt: skip
    """The model's ``L`` ``(m, r)`` and ``R`` ``(n, r)`` (attributes, else by shape)."""
    (m, n), r = problem.shape, problem.rank
    left, right = getattr(model, "L", None), getattr(model, "R", None)
    if not (isinstance(left, torch.Tensor) and isinstance(right, torch.Tensor)):
        mats = dict(model.named_parameters())
        left = next((p for p in mats.values() if tuple(p.shape) == (m, r)), None)
        right = next((p for p in mats.values() if tuple(p.shape) == (n, r) and p is not left), None)  # fmt: skip
    if left is None or right is None or tuple(left.shape) != (m, r) or tuple(right.shape) != (n, r):  # fmt: skip
        raise ValueError(f"{problem.name}: the model has no factors L {(m, r)}, R {(n, r)}")
    return left, right  # type: ignore[return-value]


def rank_r_start(man: FixedRank, w0: torch.Tensor, seed: int) -> torch.Tensor:
    """``P_r(w0)``, its missing directions filled if ``rank w0 < r`` (see the module)."""
    u, s, v = man.factors(w0)
    r = man.rank
    floor = 1e-3 * max(1.0, float(s[0]) if s.numel() else 0.0)
    weak = s <= 1e-9 * max(1.0, float(s[0]))
    if bool(weak.any()):
        g = torch.Generator().manual_seed(seed)
        m, n = man.shape
        for side, dim in ((u, m), (v, n)):
            fill = torch.randn(dim, r, generator=g, dtype=w0.dtype)
            keep = side[:, ~weak]
            fill = fill - keep @ (keep.T @ fill)
            side[:, weak] = torch.linalg.qr(fill[:, : int(weak.sum())])[0]
        s = torch.where(weak, torch.full_like(s, floor), s)
    return FixedRank.dense((u, s, v))


def _decay(opt: torch.optim.Optimizer, lr: float, t: int, steps: int) -> None:
    for g in opt.param_groups:
        g["lr"] = lr * (1.0 - t / steps)


def _run_imuon(problem: LowRankProblem, hp: dict[str, float], steps: int, seed: int) -> TrainResult:  # fmt: skip
    torch.manual_seed(seed)
    model = problem.make_model(seed)
    left, right = _factor_params(model, problem)
    dtype = left.dtype
    man = FixedRank(problem.shape, problem.rank)
    x = geoopt.ManifoldParameter(rank_r_start(man, (left @ right.T).detach().double(), seed), manifold=man)  # fmt: skip
    opt = IMuon([x], lr=hp["lr"], momentum=hp["momentum"], norm="spectral", scale="dual")
    gen = torch.Generator().manual_seed(seed + 1)
    curve: list[float] = []
    extra: dict[str, Any] = {}
    for step in range(steps):
        _decay(opt, hp["lr"], step, steps)
        loss = problem.matrix_losses(x.to(dtype), problem.batch(step, gen)).mean()
        if not math.isfinite(float(loss.detach())):  # diverged (lr too large): stop, say so
            extra["diverged_at_step"] = step
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        curve.append(float(loss.detach()))
    u, s, v = opt.factors(x)
    with torch.no_grad():
        left.copy_((u * s.sqrt()).to(dtype))
        right.copy_((v * s.sqrt()).to(dtype))
    eye = torch.eye(problem.rank, dtype=u.dtype)
    extra["singular_values"] = [float(t) for t in s]
    extra["orthonormality_error"] = max(float((u.T @ u - eye).abs().max()), float((v.T @ v - eye).abs().max()))  # fmt: skip
    return TrainResult(model=model, curve=curve, extra=extra)


def _run_factor_muon(problem: LowRankProblem, hp: dict[str, float], steps: int, seed: int) -> TrainResult:  # fmt: skip
    torch.manual_seed(seed)
    model = problem.make_model(seed)
    params = [p for p in model.parameters() if p.requires_grad and p.ndim == 2]
    opt = FactorMuon(params, lr=hp["lr"], momentum=hp["momentum"], scale="dual")
    gen = torch.Generator().manual_seed(seed + 1)
    curve: list[float] = []
    extra: dict[str, Any] = {}
    for step in range(steps):
        _decay(opt, hp["lr"], step, steps)
        loss = problem.losses(model, problem.batch(step, gen)).mean()
        if not math.isfinite(float(loss.detach())):  # diverged (lr too large): stop, say so
            extra["diverged_at_step"] = step
            break
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        curve.append(float(loss.detach()))
    return TrainResult(model=model, curve=curve, extra=extra)


_HP = {"lr": HParam(1e-4, 1.0, 0.02), "momentum": HParam(0.0, 0.99, 0.5, log=False)}

IMUON = TrainMethod(
    name="imuon",
    description="intrinsic Muon on the fixed-rank manifold: W kept as U diag(s) V^T, steps = polar "
    "factors of the Riemannian gradient's components (M, U_p, V_p), truncated-SVD retraction; "
    "insensitive to how W is split into factors; steps scaled by the gradient's dual (nuclear) "
    "norm, lr decays linearly to 0",
    kinds=frozenset({"lowrank"}),
    hparams=dict(_HP),
    run=_run_imuon,
)
MUON_FACTORS = TrainMethod(
    name="muon-factors",
    description="Muon (exact polar factor of the momentum) on each factor L, R of W = L R^T: "
    "the naive baseline of imuon; depends on the factors' conditioning; lr decays linearly to 0",
    kinds=frozenset({"lowrank"}),
    hparams=dict(_HP),
    run=_run_factor_muon,
)
