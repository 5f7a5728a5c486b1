"""The manifolds iMuon runs on that geoopt lacks, as geoopt ``Manifold`` subclasses (so
geoopt's ``RiemannianSGD``/``RiemannianAdam`` run on them too, as baselines), and the
*intrinsic charts* of all four manifolds: a tangent vector's coordinates as blocks whose
Frobenius inner product is the Riemannian metric (``lmo.Block``).

What is geoopt's: ``Manifold`` (the interface), ``ManifoldParameter``, ``Stiefel``
(``EuclideanStiefel``: embedded metric; ``CanonicalStiefel``: canonical metric) and
``SymmetricPositiveDefinite`` (affine-invariant metric, its exponential map and parallel
transport). What is ours: ``FixedRank``, ``Grassmann``, the charts and the polar retraction.

Fixed-rank ``M_r = {X in R^{m x n}: rank X = r}`` (``FixedRank``). A point is stored dense
(``m x n``, so it is an ordinary tensor a model can use) and factored on demand as
``X = U diag(s) V^T`` (``U`` ``m x r``, ``V`` ``n x r`` orthonormal, ``s > 0``; ``factors``
is a truncated SVD, or the factors the optimizer carried). A tangent vector is
``xi = U M V^T + U_p V^T + U V_p^T`` with ``M`` ``r x r``, ``U_p`` ``m x r``, ``V_p``
``n x r``, ``U^T U_p = 0``, ``V^T V_p = 0`` (``components``: ``M = U^T xi V``,
``U_p = (I - U U^T) xi V``, ``V_p = (I - V V^T) xi^T U``). Metric: the embedded one,
``<xi, eta> = tr(xi^T eta) = <M, M'> + <U_p, U_p'> + <V_p, V_p'>``; the Riemannian gradient
is the projection of the Euclidean one onto the tangent space. Retraction: the metric
projection (truncated SVD of ``X + xi``) computed in factored form, ``X + xi = [U U_p]
[[diag(s) + M, I], [I, 0]] [V V_p]^T``: QR of ``[U U_p]`` and ``[V V_p]`` (``m x 2r``,
``n x 2r``), SVD of the ``2r x 2r`` core, keep the top ``r``; ``O((m + n) r^2)``, and the new
``U``, ``V`` come out of a fresh Householder QR times an orthogonal matrix, so their
orthonormality error does not accumulate over steps. Vector transport: projection onto the
new tangent space.

Grassmann ``Gr(n, p)`` (``Grassmann``): a subspace is represented by a Stiefel point ``X``
(``n x p``, ``X^T X = I``; the point is ``span X``); tangent vectors are horizontal lifts
(``X^T xi = 0``; ``proju`` is ``(I - X X^T) u``, which is also the Riemannian gradient of a
function of ``span X`` only). Retraction: the exponential map, ``xi = A diag(t) B^T`` (thin
SVD) -> ``X B cos(t) B^T + A sin(t) B^T``: every principal angle moves by its ``t_i``
exactly. Transport: horizontal projection at the new representative.
"""

from __future__ import annotations

import math

import geoopt
import torch
from geoopt import linalg as glinalg

from optiforge.solvers.train.imuon.lmo import Block

Factors = tuple[torch.Tensor, torch.Tensor, torch.Tensor]
"""``(U (m x r), s (r,), V (n x r))`` with ``X = U diag(s) V^T``."""


class FixedRank(geoopt.manifolds.Manifold):  # type: ignore[misc]
    """Matrices ``m x n`` of rank exactly ``r``, embedded metric (see the module)."""

    name = "FixedRank"
    ndim = 2
    reversible = False

    def __init__(self, shape: tuple[int, int], rank: int) -> None:
        super().__init__()
        m, n = shape
        if not 0 < rank <= min(m, n):
            raise ValueError(f"rank {rank} not in 1..{min(m, n)} for shape {shape}")
        self.shape = (int(m), int(n))
        self.rank = int(rank)

    # -- factored forms ---------------------------------------------------------------
    def factors(self, x: torch.Tensor) -> Factors:
        """Truncated SVD ``(U, s, V)`` of ``x`` (its top ``r`` triplets)."""
        u, s, vh = torch.linalg.svd(x, full_matrices=False)
        r = self.rank
        return u[:, :r], s[:r], vh[:r].T

    @staticmethod
    def dense(f: Factors) -> torch.Tensor:
        u, s, v = f
        return (u * s) @ v.T

    @staticmethod
    def components(f: Factors, xi: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:  # fmt: skip
        """``(M, U_p, V_p)`` of the tangent projection of ``xi`` ``(m x n)`` at ``f``."""
        u, _, v = f
        xv, xtu = xi @ v, xi.T @ u
        m = u.T @ xv
        return m, xv - u @ m, xtu - v @ m.T

    @staticmethod
    def tangent(f: Factors, m: torch.Tensor, up: torch.Tensor, vp: torch.Tensor) -> torch.Tensor:  # fmt: skip
        """The dense tangent vector ``U M V^T + U_p V^T + U V_p^T``."""
        u, _, v = f
        return (u @ m + up) @ v.T + u @ vp.T

    def retr_factors(self, f: Factors, m: torch.Tensor, up: torch.Tensor, vp: torch.Tensor) -> Factors:  # fmt: skip
        """Truncated-SVD retraction of ``X + xi`` in factored form (see the module)."""
        u, s, v = f
        r = self.rank
        q1, r1 = torch.linalg.qr(torch.cat([u, up], dim=1))
        q2, r2 = torch.linalg.qr(torch.cat([v, vp], dim=1))
        eye, zero = torch.eye(r, dtype=u.dtype), torch.zeros(r, r, dtype=u.dtype)
        core = torch.cat([torch.cat([torch.diag(s) + m, eye], 1), torch.cat([eye, zero], 1)], 0)
        a, sig, bh = torch.linalg.svd(r1 @ core @ r2.T)
        return q1 @ a[:, :r], sig[:r], q2 @ bh[:r].T

    # -- geoopt's interface -----------------------------------------------------------
    def proju(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        f = self.factors(x)
        return self.tangent(f, *self.components(f, u))

    egrad2rgrad = proju

    def projx(self, x: torch.Tensor) -> torch.Tensor:
        return self.dense(self.factors(x))

    def retr(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        f = self.factors(x)
        return self.dense(self.retr_factors(f, *self.components(f, u)))

    expmap = retr  # no closed-form geodesic; geoopt's optimizers call retr

    def transp(self, x: torch.Tensor, y: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.proju(y, v)

    def inner(self, x: torch.Tensor, u: torch.Tensor, v: torch.Tensor | None = None, *, keepdim: bool = False) -> torch.Tensor:  # fmt: skip
        v = u if v is None else v
        return (u * v).sum(dim=(-2, -1), keepdim=keepdim)

    def _check_shape(self, shape: tuple[int, ...], name: str) -> tuple[bool, str | None]:
        ok = tuple(shape[-2:]) == self.shape
        return ok, None if ok else f"{name} shape {tuple(shape)} is not {self.shape}"

    def _check_point_on_manifold(self, x: torch.Tensor, *, atol: float = 1e-5, rtol: float = 1e-5) -> tuple[bool, str | None]:  # fmt: skip
        s = torch.linalg.svdvals(x)
        r = self.rank
        if float(s[r - 1]) <= atol + rtol * float(s[0]):
            return False, f"sigma_r = {float(s[r - 1]):.3g}: rank below {r}"
        if s.numel() > r and float(s[r]) > atol + rtol * float(s[0]):
            return False, f"sigma_(r+1) = {float(s[r]):.3g}: rank above {r}"
        return True, None

    def _check_vector_on_tangent(self, x: torch.Tensor, u: torch.Tensor, *, atol: float = 1e-5, rtol: float = 1e-5) -> tuple[bool, str | None]:  # fmt: skip
        uu, _, vv = self.factors(x)
        w = u - uu @ (uu.T @ u)
        w = w - (w @ vv) @ vv.T
        ok = float(w.norm()) <= atol + rtol * float(u.norm())
        return ok, None if ok else f"normal part {float(w.norm()):.3g}"

    def random(self, *size: int, dtype: torch.dtype | None = None, device: torch.device | None = None, **kw: object) -> torch.Tensor:  # fmt: skip
        m, n = self.shape
        g = torch.randn(m, self.rank, dtype=dtype, device=device)
        h = torch.randn(n, self.rank, dtype=dtype, device=device)
        return g @ h.T / math.sqrt(self.rank)

    def extra_repr(self) -> str:
        return f"shape={self.shape}, rank={self.rank}"


class Grassmann(geoopt.manifolds.EuclideanStiefel):  # type: ignore[misc]
    """``Gr(n, p)`` through Stiefel representatives and horizontal lifts (see the module)."""

    name = "Grassmann"
    reversible = False

    def proju(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        return u - x @ (x.transpose(-1, -2) @ u)

    egrad2rgrad = proju

    def transp(self, x: torch.Tensor, y: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        return self.proju(y, v)

    def expmap(self, x: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
        a, t, bh = torch.linalg.svd(u, full_matrices=False)
        y = (x @ bh.transpose(-1, -2) * torch.cos(t)) @ bh + (a * torch.sin(t)) @ bh
        q, r = torch.linalg.qr(y)  # same span; removes float drift from orthonormality
        return q * torch.sign(torch.diagonal(r, dim1=-2, dim2=-1)).add(0.5).sign()[..., None, :]

    retr = expmap

    def _check_vector_on_tangent(self, x: torch.Tensor, u: torch.Tensor, *, atol: float = 1e-5, rtol: float = 1e-5) -> tuple[bool, str | None]:  # fmt: skip
        err = float((x.transpose(-1, -2) @ u).norm())
        ok = err <= atol + rtol * float(u.norm())
        return ok, None if ok else f"X^T u = {err:.3g} (not horizontal)"


def principal_angles(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Principal angles ``(p,)`` between ``span x`` and ``span y`` (orthonormal ``n x p``)."""
    c = torch.linalg.svdvals(x.T @ y).clamp(-1.0, 1.0)
    return torch.arccos(c)


# -- intrinsic charts -------------------------------------------------------------------
def _stiefel_weight(manifold: object) -> float:
    """Block weight of ``X^T xi``: the canonical metric is ``1/2 ||Omega||^2 + ||K||^2``."""
    return 1.0 / math.sqrt(2.0) if isinstance(manifold, geoopt.manifolds.CanonicalStiefel) else 1.0  # fmt: skip


def chart_blocks(manifold: object, x: torch.Tensor, xi: torch.Tensor, f: Factors | None = None) -> list[Block]:  # fmt: skip
    """The intrinsic coordinates of the tangent vector ``xi`` (ambient) at ``x``: blocks
    whose Frobenius inner product is the manifold's metric.

    - ``FixedRank`` (embedded metric): ``[M, U_p, V_p]``.
    - ``SymmetricPositiveDefinite`` (affine-invariant, ``g_P(xi, eta) = tr(P^-1 xi P^-1
      eta)``): ``[P^{-1/2} xi P^{-1/2}]`` (symmetric).
    - ``Grassmann``: ``[(I - X X^T) xi]`` (the horizontal lift).
    - ``Stiefel``: ``[w skew(X^T xi), (I - X X^T) xi]``, ``w = 1`` (embedded metric) or
      ``1/sqrt 2`` (canonical).
    """
    if isinstance(manifold, FixedRank):
        f = manifold.factors(x) if f is None else f
        return [Block(c) for c in FixedRank.components(f, xi)]
    if isinstance(manifold, geoopt.manifolds.SymmetricPositiveDefinite):
        inv_sqrt, _ = glinalg.sym_inv_sqrtm2(x)
        return [Block(inv_sqrt @ xi @ inv_sqrt, "sym")]
    if isinstance(manifold, Grassmann):
        return [Block(xi - x @ (x.T @ xi))]
    if isinstance(manifold, geoopt.manifolds.Stiefel):
        w = _stiefel_weight(manifold)
        om = x.T @ xi
        return [Block(w * 0.5 * (om - om.T), "skew"), Block(xi - x @ om)]
    raise TypeError(f"iMuon has no intrinsic chart for {type(manifold).__name__}")


def chart_tangent(manifold: object, x: torch.Tensor, zs: list[torch.Tensor], f: Factors | None = None) -> torch.Tensor:  # fmt: skip
    """The ambient tangent vector at ``x`` whose intrinsic coordinates are ``zs`` (the
    inverse of ``chart_blocks`` on the tangent space)."""
    if isinstance(manifold, FixedRank):
        f = manifold.factors(x) if f is None else f
        return FixedRank.tangent(f, zs[0], zs[1], zs[2])
    if isinstance(manifold, geoopt.manifolds.SymmetricPositiveDefinite):
        _, sqrt = glinalg.sym_inv_sqrtm2(x)
        z = sqrt @ zs[0] @ sqrt
        return 0.5 * (z + z.T)
    if isinstance(manifold, Grassmann):
        return zs[0]
    if isinstance(manifold, geoopt.manifolds.Stiefel):
        return x @ (zs[0] / _stiefel_weight(manifold)) + zs[1]
    raise TypeError(f"iMuon has no intrinsic chart for {type(manifold).__name__}")


def stiefel_projection(x: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Orthogonal projection onto the Stiefel tangent space ``v - X sym(X^T v)`` (geoopt's
    ``CanonicalStiefel.proju`` is its Riemannian-gradient map, not idempotent on tangents)."""
    xtv = x.T @ v
    return v - x @ (0.5 * (xtv + xtv.T))


def polar_retraction(x: torch.Tensor, xi: torch.Tensor) -> torch.Tensor:
    """Stiefel polar retraction ``msign(X + xi)``: equivariant under ``X -> Q X O`` (geoopt's
    QR retraction is not under the right action)."""
    u, _, vh = torch.linalg.svd(x + xi, full_matrices=False)
    return u @ vh
