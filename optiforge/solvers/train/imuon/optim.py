"""iMuon (intrinsic Muon) and the naive baseline, Muon on the factors, as
``torch.optim.Optimizer``s.

iMuon's step on a manifold parameter ``X`` (a geoopt ``ManifoldParameter`` on
``FixedRank``, ``SymmetricPositiveDefinite``, ``Stiefel`` or ``Grassmann``) with Euclidean
gradient ``G``:

1. ``g = egrad2rgrad(X, G)``: the Riemannian gradient of the manifold's metric.
2. Momentum (the stochastic version; ``momentum=0`` is the deterministic one):
   ``b <- beta * T(b) + (1 - beta) * g`` where ``T`` transports the buffer from the previous
   point (orthogonal projection onto the new tangent space; the affine-invariant parallel
   transport on SPD). With ``nesterov=True`` the direction is taken at ``beta * b + (1 - beta) * g``.
3. ``D = LMO(b)``: the maximizer of ``g_X(b, D)`` over the intrinsic unit ball of ``norm``
   (``lmo.lmo`` on the chart's blocks, mapped back; e.g. on fixed-rank with the spectral
   norm ``D = U msign(M) V^T + msign(U_p) V^T + U msign(V_p)^T``; on SPD
   ``D = P^{1/2} msign(P^{1/2} sym(G) P^{1/2}) P^{1/2}``).
4. ``X <- R_X(-lr * c * D)`` with ``c = 1`` (``scale="lmo"``: normalized steps, Muon's
   choice, use a decaying ``lr``) or ``c = ||b||_dual`` (``scale="dual"``: steepest descent
   in the intrinsic norm, ``c D`` is the sharp operator of ``b``; converges at a constant
   ``lr`` on smooth problems). ``R``: the truncated-SVD retraction on fixed-rank, the
   affine-invariant exponential map on SPD (geoopt's), the polar retraction on Stiefel,
   the exponential map on Grassmann.

The intrinsic coordinates (our choice where the description leaves it open): a metric has
many isometries onto a flat matrix space; we take the block-diagonal one that keeps the
tangent space's natural components apart (fixed-rank ``blockdiag(M, U_p, V_p)``, Stiefel
``blockdiag(w Omega, K)``, SPD and Grassmann one block). A unitarily invariant norm of that
block-diagonal matrix is then intrinsic (it depends on the point and the metric only, not on
the factor gauge ``U -> U O1``, ``V -> V O2``), and its LMO is closed form (``lmo``). Taking
the fixed-rank tangent vector as the ``m x n`` matrix it is instead would give the spectral
ball a zero block constraint (``P_U^perp xi P_V^perp = 0``) whose LMO is no polar factor.

Every ingredient commutes with the manifold's symmetry group (fixed-rank: ``X -> Q1 X
Q2^T``; SPD: congruence ``P -> A P A^T``, any invertible ``A``; Stiefel: ``X -> Q X O``;
Grassmann: ``X -> Q X O``), so iterates of a transformed problem are the transformed
iterates; and on fixed-rank nothing depends on how ``X`` is split into factors.

``FactorMuon``: Muon on plain matrices, e.g. the factors ``L``, ``R`` of ``W = L R^T``:
``b <- beta b + (1 - beta) g``, ``p <- p - lr * c * msign(b)`` (``c`` as above with the
nuclear norm of ``b``); ``polar="svd"`` (exact) or ``"newton_schulz"`` (Muon's quintic).
Its trajectory depends on the split: ``(L A, R A^-T)`` is the same ``W`` but not the same run.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal

import geoopt
import torch

from optiforge.solvers.train.imuon.lmo import (  # fmt: skip
    NORMS,
    Norm,
    dual_norm,
    lmo,
    msign,
    msign_newton_schulz,
)
from optiforge.solvers.train.imuon.manifolds import (
    Factors,
    FixedRank,
    Grassmann,
    chart_blocks,
    chart_tangent,
    polar_retraction,
    stiefel_projection,
)

Scale = Literal["lmo", "dual"]


def _manifold_of(p: torch.Tensor) -> Any:
    m = getattr(p, "manifold", None)
    if m is None or isinstance(m, geoopt.manifolds.Euclidean):
        raise TypeError("iMuon parameters are geoopt ManifoldParameters on FixedRank, "
                        "SymmetricPositiveDefinite, Stiefel or Grassmann")  # fmt: skip
    return m


class IMuon(torch.optim.Optimizer):
    """Intrinsic Muon: LMO steps over the metric's intrinsic norm ball (see the module).

    Args:
        params: geoopt ``ManifoldParameter``s (matrices; no batch dimensions).
        lr: step length (intrinsic norm of the step for ``scale="lmo"``).
        momentum: ``beta`` of the transported EMA of Riemannian gradients (0: deterministic).
        norm: ``spectral`` (iMuon proper), ``frobenius`` (normalized Riemannian gradient) or
            ``nuclear`` (rank-one steps).
        scale: ``lmo`` (normalized) or ``dual`` (steepest descent).
    """

    def __init__(
        self,
        params: Iterable[torch.Tensor] | Iterable[dict[str, Any]],
        lr: float = 0.02,
        momentum: float = 0.0,
        norm: Norm = "spectral",
        scale: Scale = "lmo",
        nesterov: bool = False,
    ) -> None:
        if norm not in NORMS:
            raise ValueError(f"unknown norm {norm!r} (known: {', '.join(NORMS)})")
        if scale not in ("lmo", "dual"):
            raise ValueError(f"unknown scale {scale!r} (lmo or dual)")
        if not 0.0 <= momentum < 1.0:
            raise ValueError(f"momentum {momentum} not in [0, 1)")
        defaults = dict(lr=lr, momentum=momentum, norm=norm, scale=scale, nesterov=nesterov)
        super().__init__(params, defaults)

    def _factors(self, p: torch.Tensor, manifold: FixedRank) -> Factors:
        state = self.state[p]
        if state.get("version") == p._version and "factors" in state:
            return state["factors"]  # type: ignore[no-any-return]
        return manifold.factors(p.detach())

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta, lr = group["momentum"], group["lr"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                manifold = _manifold_of(p)
                state = self.state[p]
                x = p.detach()
                fac = self._factors(p, manifold) if isinstance(manifold, FixedRank) else None
                if fac is not None:
                    rgrad = FixedRank.tangent(fac, *FixedRank.components(fac, p.grad))
                else:
                    rgrad = manifold.egrad2rgrad(x, p.grad)
                if beta > 0:
                    buf = state.get("buf")
                    buf = rgrad.clone() if buf is None else buf.mul_(beta).add_(rgrad, alpha=1 - beta)  # fmt: skip
                    state["buf"] = buf
                    d_in = buf * beta + rgrad * (1 - beta) if group["nesterov"] else buf
                else:
                    d_in = rgrad
                blocks = chart_blocks(manifold, x, d_in, fac)
                zs = lmo(blocks, group["norm"])
                state["dual_norm"] = dual = dual_norm(blocks, group["norm"])  # the LMO's value
                c = dual if group["scale"] == "dual" else 1.0
                step = chart_tangent(manifold, x, zs, fac) * (-lr * c)
                new_fac: Factors | None = None
                if isinstance(manifold, FixedRank):
                    assert fac is not None
                    new_fac = manifold.retr_factors(fac, *FixedRank.components(fac, step))
                    new = FixedRank.dense(new_fac)
                elif isinstance(manifold, geoopt.manifolds.SymmetricPositiveDefinite):
                    new = manifold.expmap(x, step)
                    new = 0.5 * (new + new.T)
                elif isinstance(manifold, Grassmann):
                    new = manifold.expmap(x, step)
                else:  # Stiefel
                    new = polar_retraction(x, step)
                if beta > 0:
                    if new_fac is not None:
                        state["buf"] = FixedRank.tangent(new_fac, *FixedRank.components(new_fac, state["buf"]))  # fmt: skip
                    elif isinstance(manifold, geoopt.manifolds.SymmetricPositiveDefinite):
                        state["buf"] = manifold.transp(x, new, state["buf"])
                    elif isinstance(manifold, Grassmann):
                        state["buf"] = manifold.proju(new, state["buf"])
                    else:
                        state["buf"] = stiefel_projection(new, state["buf"])
                p.copy_(new)
                if new_fac is not None:
                    state["factors"], state["version"] = new_fac, p._version
        return loss

    def factors(self, p: torch.Tensor) -> Factors:
        """The carried ``(U, s, V)`` of a fixed-rank parameter (a truncated SVD if none)."""
        manifold = _manifold_of(p)
        assert isinstance(manifold, FixedRank)
        return self._factors(p, manifold)


class FactorMuon(torch.optim.Optimizer):
    """Muon on plain matrix parameters (the naive baseline on factors ``L``, ``R``)."""

    def __init__(
        self,
        params: Iterable[torch.Tensor] | Iterable[dict[str, Any]],
        lr: float = 0.02,
        momentum: float = 0.0,
        scale: Scale = "lmo",
        polar: Literal["svd", "newton_schulz"] = "svd",
    ) -> None:
        if scale not in ("lmo", "dual"):
            raise ValueError(f"unknown scale {scale!r} (lmo or dual)")
        defaults = dict(lr=lr, momentum=momentum, scale=scale, polar=polar)
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            beta = group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.ndim != 2:
                    raise ValueError("FactorMuon takes matrix parameters only")
                state = self.state[p]
                if beta > 0:
                    buf = state.get("buf")
                    buf = p.grad.clone() if buf is None else buf.mul_(beta).add_(p.grad, alpha=1 - beta)  # fmt: skip
                    state["buf"] = buf
                else:
                    buf = p.grad
                d = msign(buf) if group["polar"] == "svd" else msign_newton_schulz(buf)
                c = float(torch.linalg.svdvals(buf).sum()) if group["scale"] == "dual" else 1.0
                p.add_(d, alpha=-group["lr"] * c)
        return loss
