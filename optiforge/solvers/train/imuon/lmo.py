"""Linear maximization oracles (LMOs) over intrinsic unit balls, in block coordinates.

A tangent vector's *intrinsic coordinates* here are a list of blocks ``B_1, ..., B_k``
(matrices) such that the Riemannian metric is the Frobenius inner product of the blocks:
``g_X(xi, eta) = sum_j <B_j(xi), B_j(eta)>_F``. The intrinsic norm that a unitarily invariant
(Schatten) norm lifts to is that norm of the block-diagonal matrix
``blockdiag(B_1, ..., B_k)``:

- ``spectral`` (Schatten-inf): ``max_j ||B_j||_2``; LMO ``Z_j = msign(B_j)`` (the polar
  factor of every block); dual norm ``sum_j ||B_j||_*``.
- ``frobenius`` (Schatten-2): the Riemannian norm itself; LMO ``Z = B / ||B||_F``; dual
  ``||B||_F``.
- ``nuclear`` (Schatten-1): ``sum_j ||B_j||_*``; LMO the top singular pair ``u v^T`` of the
  block holding the largest singular value, zero elsewhere; dual ``max_j sigma_1(B_j)``.

Because every block's LMO is a spectral function of the block, it stays in the block's
subspace when the block is symmetric (``eigh``: ``Q sign(L) Q^T``) or skew-symmetric (the
polar factor of a normal matrix commutes with it, so it is skew; the nuclear LMO of a skew
block is ``skew(u1 v1^T)``, which has the two singular values ``1/2`` and attains
``sigma_1``). A block that is a column-space-restricted matrix (``(I - U U^T) A``) keeps its
column space under ``msign`` and the top pair (both live in ``range(A)``).

``msign`` drops singular values below ``rtol * sigma_max`` (a rank-deficient block's polar
factor is the partial isometry on its range): on a skew block of odd size the zero
eigenvalue would otherwise pick an arbitrary, non-skew direction.

All of this is ours (no library has it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import torch

Norm = Literal["spectral", "frobenius", "nuclear"]
BlockKind = Literal["general", "sym", "skew"]
NORMS: tuple[Norm, ...] = ("spectral", "frobenius", "nuclear")


@dataclass(frozen=True)
class Block:
    """One block of a tangent vector's intrinsic coordinates: ``value`` ``(a, b)`` and
    the subspace it lives in (``sym``/``skew`` are square)."""

    value: torch.Tensor
    kind: BlockKind = "general"


def msign(a: torch.Tensor, kind: BlockKind = "general", rtol: float = 1e-7) -> torch.Tensor:
    """Polar factor ``U V^T`` of ``a`` ``(m, n)`` (``a = U S V^T``), singular values below
    ``rtol * sigma_max`` dropped; symmetric blocks through ``eigh`` (stays symmetric)."""
    if kind == "sym":
        lam, q = torch.linalg.eigh(0.5 * (a + a.T))
        keep = lam.abs() > rtol * lam.abs().max().clamp_min(torch.finfo(a.dtype).tiny)
        return (q * (torch.sign(lam) * keep)) @ q.T
    u, s, vh = torch.linalg.svd(a, full_matrices=False)
    keep = s > rtol * s.max().clamp_min(torch.finfo(a.dtype).tiny) if s.numel() else s > 0
    z = (u * keep) @ vh
    return 0.5 * (z - z.T) if kind == "skew" else z


def msign_newton_schulz(a: torch.Tensor, iters: int = 5) -> torch.Tensor:
    """Muon's quintic Newton-Schulz approximation of ``msign(a)`` (coefficients
    ``(3.4445, -4.7750, 2.0315)``, input scaled by its Frobenius norm): singular values
    land in about ``[0.7, 1.2]``, not exactly 1 (the practical Muon's choice)."""
    x = a / (a.norm() + 1e-7)
    tall = x.shape[0] > x.shape[1]
    if tall:
        x = x.T
    for _ in range(iters):
        g = x @ x.T
        x = 3.4445 * x + (-4.7750 * g + 2.0315 * g @ g) @ x
    return x.T if tall else x


def _top_pair(b: Block) -> tuple[torch.Tensor, torch.Tensor]:
    """(sigma_1, the unit-nuclear-norm matrix in ``b``'s subspace attaining it)."""
    a = b.value
    if b.kind == "sym":
        lam, q = torch.linalg.eigh(0.5 * (a + a.T))
        k = int(lam.abs().argmax())
        return lam[k].abs(), torch.sign(lam[k]) * torch.outer(q[:, k], q[:, k])
    u, s, vh = torch.linalg.svd(a, full_matrices=False)
    z = torch.outer(u[:, 0], vh[0])
    return s[0], (0.5 * (z - z.T) if b.kind == "skew" else z)


def lmo(blocks: list[Block], norm: Norm) -> list[torch.Tensor]:
    """``argmax_{||Z|| <= 1} sum_j <B_j, Z_j>`` over the intrinsic unit ball of ``norm``
    (block-diagonal Schatten norm); one matrix per block, same shapes. A zero input gives
    zeros."""
    if norm == "spectral":
        return [msign(b.value, b.kind) for b in blocks]
    if norm == "frobenius":
        total = torch.sqrt(sum((b.value**2).sum() for b in blocks))  # type: ignore[arg-type]
        if float(total) == 0.0:
            return [torch.zeros_like(b.value) for b in blocks]
        return [b.value / total for b in blocks]
    if norm == "nuclear":
        pairs = [_top_pair(b) if b.value.numel() else (torch.zeros(()), b.value) for b in blocks]
        best = max(range(len(blocks)), key=lambda j: float(pairs[j][0]))
        if float(pairs[best][0]) == 0.0:
            return [torch.zeros_like(b.value) for b in blocks]
        return [pairs[j][1] if j == best else torch.zeros_like(b.value) for j, b in enumerate(blocks)]  # fmt: skip
    raise ValueError(f"unknown norm {norm!r} (known: {', '.join(NORMS)})")


def _svals(b: Block) -> torch.Tensor:
    if b.value.numel() == 0:
        return b.value.new_zeros(1)
    if b.kind == "sym":
        return torch.linalg.eigvalsh(0.5 * (b.value + b.value.T)).abs()
    return torch.linalg.svdvals(b.value)


def intrinsic_norm(blocks: list[Block], norm: Norm) -> float:
    """The intrinsic norm of the tangent vector whose coordinates are ``blocks``."""
    s = [_svals(b) for b in blocks]
    if norm == "spectral":
        return max(float(v.max()) for v in s)
    if norm == "frobenius":
        return float(torch.sqrt(sum((v**2).sum() for v in s)))  # type: ignore[arg-type]
    if norm == "nuclear":
        return sum(float(v.sum()) for v in s)
    raise ValueError(f"unknown norm {norm!r}")


DUAL: dict[Norm, Norm] = {"spectral": "nuclear", "frobenius": "frobenius", "nuclear": "spectral"}


def dual_norm(blocks: list[Block], norm: Norm) -> float:
    """The dual of ``norm`` at ``blocks`` (= the LMO's value ``sum_j <B_j, Z_j>``)."""
    return intrinsic_norm(blocks, DUAL[norm])
