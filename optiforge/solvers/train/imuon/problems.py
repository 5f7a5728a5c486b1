"""The test problems of iMuon's claim tests and benchmark (ours).

Low-rank matrix sensing: a rank-``r``
truth ``W* = U diag(s) V^T`` with singular values log-spaced from 1 down to ``1/cond``,
``N`` Gaussian measurements ``y_k = <A_k, W*>`` (``A_k`` entries ``N(0, 1/N)``), loss
``f(W) = 1/2 sum_k (<A_k, W> - y_k)^2``, spectral initialization ``P_r(sum_k y_k A_k)``, and
the factor splits ``L = U0 S0^{1/2} B``, ``R = V0 S0^{1/2} B^{-T}`` of the same ``W0`` whose
``r x r`` mixing ``B`` has condition number ``kappa`` (``det B = 1``).

Subspace learning on Grassmann (top-``p`` PCA): a covariance ``C = Q diag(lam) Q^T`` whose top
``p`` eigenvalues are ``1 + gap`` down to ``1`` ... (log-spaced over ``cond``) and the rest
``<= 1 / (1 + gap)``; loss ``f(X) = -1/2 tr(X^T C X)`` (or its estimate from a batch of samples
``z ~ N(0, C)``), minimized by the top-``p`` eigenspace; error: the largest principal angle."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import geoopt
import torch

from optiforge.solvers.train.imuon.lmo import Norm
from optiforge.solvers.train.imuon.manifolds import FixedRank, Grassmann, principal_angles
from optiforge.solvers.train.imuon.optim import FactorMuon, IMuon, Scale


@dataclass(frozen=True)
class Sensing:
    a: torch.Tensor
    """``(N, m, n)`` measurement matrices."""
    y: torch.Tensor
    w_star: torch.Tensor
    w0: torch.Tensor
    rank: int

    def loss(self, w: torch.Tensor, idx: torch.Tensor | None = None) -> torch.Tensor:
        a, y = (self.a, self.y) if idx is None else (self.a[idx], self.y[idx])
        scale = 1.0 if idx is None else self.a.shape[0] / idx.numel()
        return 0.5 * scale * ((torch.einsum("kij,ij->k", a, w) - y) ** 2).sum()

    def rel_err(self, w: torch.Tensor) -> float:
        return float((w.detach() - self.w_star).norm() / self.w_star.norm())

    def split(self, kappa: float, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Factors ``(L (m x r), R (n x r))`` of ``W0`` mixed by a ``kappa``-conditioned ``B``."""
        r = self.rank
        u, s, vh = torch.linalg.svd(self.w0, full_matrices=False)
        g = torch.Generator().manual_seed(10_000 + seed)
        q1 = torch.linalg.qr(torch.randn(r, r, generator=g, dtype=self.w0.dtype))[0]
        q2 = torch.linalg.qr(torch.randn(r, r, generator=g, dtype=self.w0.dtype))[0]
        b = q1 @ torch.diag(torch.logspace(0, math.log10(kappa), r, dtype=self.w0.dtype)) @ q2.T
        b = b / torch.linalg.det(b).abs() ** (1.0 / r)
        half = s[:r].sqrt()
        return (u[:, :r] * half) @ b, (vh[:r].T * half) @ torch.linalg.inv(b).T


def make_sensing(seed: int, m: int = 30, n: int = 20, rank: int = 3, oversample: float = 4.0, cond: float = 3.0, dtype: torch.dtype = torch.float64) -> Sensing:  # fmt: skip
    """``N = oversample * r (m + n)`` measurements of a ``cond``-conditioned rank-``r`` truth."""
    g = torch.Generator().manual_seed(seed)
    u = torch.linalg.qr(torch.randn(m, rank, generator=g, dtype=dtype))[0]
    v = torch.linalg.qr(torch.randn(n, rank, generator=g, dtype=dtype))[0]
    s = torch.logspace(0, -math.log10(cond), rank, dtype=dtype)
    w_star = (u * s) @ v.T
    n_meas = int(oversample * rank * (m + n))
    a = torch.randn(n_meas, m, n, generator=g, dtype=dtype) / math.sqrt(n_meas)
    y = torch.einsum("kij,ij->k", a, w_star)
    uu, ss, vvh = torch.linalg.svd(torch.einsum("k,kij->ij", y, a), full_matrices=False)
    w0 = (uu[:, :rank] * ss[:rank]) @ vvh[:rank]
    return Sensing(a=a, y=y, w_star=w_star, w0=w0, rank=rank)


@dataclass
class Run:
    errs: list[float]
    """Relative error ``||W_t - W*||_F / ||W*||_F`` after each step (``inf`` once diverged)."""
    w: torch.Tensor
    opt: torch.optim.Optimizer


def _drive(p: Sensing, w_of: Callable[[], torch.Tensor], opt: torch.optim.Optimizer, steps: int, batch: int | None, seed: int, decay: bool) -> Run:  # fmt: skip
    gen = torch.Generator().manual_seed(seed)
    lr0 = [g["lr"] for g in opt.param_groups]
    errs: list[float] = []
    for t in range(steps):
        if decay:
            for g, lr in zip(opt.param_groups, lr0, strict=True):
                g["lr"] = lr * (1.0 - t / steps)
        idx = None if batch is None else torch.randint(0, p.a.shape[0], (batch,), generator=gen)
        opt.zero_grad(set_to_none=True)
        p.loss(w_of(), idx).backward()
        opt.step()
        errs.append(p.rel_err(w_of()))
        if not errs[-1] < 1e3:
            errs += [math.inf] * (steps - t - 1)
            break
    return Run(errs=errs, w=w_of().detach(), opt=opt)


def run_imuon(p: Sensing, lr: float, steps: int, *, w_init: torch.Tensor | None = None, momentum: float = 0.0, scale: Scale = "dual", norm: Norm = "spectral", batch: int | None = None, seed: int = 0, decay: bool = False) -> Run:  # fmt: skip
    """iMuon on the fixed-rank manifold from ``P_r(w_init)`` (default ``W0``)."""
    man = FixedRank(tuple(p.w0.shape), p.rank)  # type: ignore[arg-type]
    x = geoopt.ManifoldParameter(man.projx(p.w0 if w_init is None else w_init), manifold=man)
    opt = IMuon([x], lr=lr, momentum=momentum, scale=scale, norm=norm)
    return _drive(p, lambda: x, opt, steps, batch, seed, decay)


def run_factor_muon(p: Sensing, lr: float, steps: int, *, kappa: float, split_seed: int = 0, momentum: float = 0.0, scale: Scale = "dual", batch: int | None = None, seed: int = 0, decay: bool = False) -> Run:  # fmt: skip
    """Muon on the factors of the ``kappa``-conditioned split of ``W0``."""
    left, right = (torch.nn.Parameter(t) for t in p.split(kappa, split_seed))
    opt = FactorMuon([left, right], lr=lr, momentum=momentum, scale=scale)
    return _drive(p, lambda: left @ right.T, opt, steps, batch, seed, decay)


def run_geoopt(p: Sensing, lr: float, steps: int, *, method: str, momentum: float = 0.0, batch: int | None = None, seed: int = 0, decay: bool = False) -> Run:  # fmt: skip
    """geoopt's ``RiemannianSGD`` (``method="rsgd"``) or ``RiemannianAdam`` (``"radam"``)
    on ``FixedRank`` from ``W0``."""
    man = FixedRank(tuple(p.w0.shape), p.rank)  # type: ignore[arg-type]
    x = geoopt.ManifoldParameter(man.projx(p.w0), manifold=man)
    opt: torch.optim.Optimizer
    if method == "rsgd":
        opt = geoopt.optim.RiemannianSGD([x], lr=lr, momentum=momentum)
    else:
        opt = geoopt.optim.RiemannianAdam([x], lr=lr)
    return _drive(p, lambda: x, opt, steps, batch, seed, decay)


def steps_to(errs: list[float], tol: float) -> int | None:
    """First step (1-based) whose error is below ``tol``; ``None`` if never."""
    return next((i + 1 for i, e in enumerate(errs) if e < tol), None)


@dataclass(frozen=True)
class PCA:
    c: torch.Tensor
    """``(n, n)`` covariance."""
    root: torch.Tensor
    """``C^{1/2}`` (samples are ``C^{1/2} g``)."""
    top: torch.Tensor
    """``(n, p)`` orthonormal basis of the top-``p`` eigenspace."""
    x0: torch.Tensor

    def loss(self, x: torch.Tensor, z: torch.Tensor | None = None) -> torch.Tensor:
        if z is None:
            return -0.5 * torch.trace(x.T @ self.c @ x)
        return -0.5 * ((z @ x) ** 2).sum() / z.shape[0]

    def angle(self, x: torch.Tensor) -> float:
        return float(principal_angles(x.detach(), self.top).max())


def make_pca(seed: int, n: int = 60, p: int = 5, gap: float = 0.5, cond: float = 10.0, dtype: torch.dtype = torch.float64) -> PCA:  # fmt: skip
    """Top-``p`` subspace of an ``n x n`` covariance; top eigenvalues ``cond*(1+gap)`` ...
    ``1 + gap``, the rest uniform in ``[0, 1]``; random orthonormal start."""
    g = torch.Generator().manual_seed(seed)
    q = torch.linalg.qr(torch.randn(n, n, generator=g, dtype=dtype))[0]
    lam = torch.cat([(1 + gap) * torch.logspace(math.log10(cond), 0, p, dtype=dtype),
                     torch.rand(n - p, generator=g, dtype=dtype)])  # fmt: skip
    c = (q * lam) @ q.T
    x0 = torch.linalg.qr(torch.randn(n, p, generator=g, dtype=dtype))[0]
    return PCA(c=c, root=(q * lam.sqrt()) @ q.T, top=q[:, :p], x0=x0)


def run_pca(pr: PCA, lr: float, steps: int, *, method: str, momentum: float = 0.0, scale: Scale = "dual", batch: int | None = None, seed: int = 0, decay: bool = False) -> tuple[list[float], torch.Tensor]:  # fmt: skip
    """``method``: ``imuon`` (spectral), ``rsgd`` or ``radam`` (geoopt's) on ``Grassmann``;
    returns the largest principal angle after each step and the last point."""
    x = geoopt.ManifoldParameter(pr.x0.clone(), manifold=Grassmann())
    opt: torch.optim.Optimizer
    if method == "imuon":
        opt = IMuon([x], lr=lr, momentum=momentum, scale=scale)
    elif method == "rsgd":
        opt = geoopt.optim.RiemannianSGD([x], lr=lr, momentum=momentum)
    else:
        opt = geoopt.optim.RiemannianAdam([x], lr=lr)
    gen = torch.Generator().manual_seed(seed)
    angles: list[float] = []
    for t in range(steps):
        if decay:
            opt.param_groups[0]["lr"] = lr * (1.0 - t / steps)
        z = None if batch is None else torch.randn(batch, pr.c.shape[0], generator=gen, dtype=pr.c.dtype) @ pr.root  # fmt: skip
        opt.zero_grad(set_to_none=True)
        pr.loss(x, z).backward()
        opt.step()
        angles.append(pr.angle(x))
    return angles, x.detach()
