"""Batched block-tiled sparse matrix-vector products ``Y = A X`` (Triton kernel + torch paths).

``A`` (`m x n`) is held in a block-sparse row layout (:class:`BlockSparse`): the matrix is cut
into `BM x BK` tiles and only tiles with a non-zero are stored, densely, as ``values``
(`nnzb x BM x BK`) with ``row_ptr`` (`n_block_rows + 1`) and ``col_idx`` (`nnzb`). ``X`` is
`n x B`: one column per right-hand side, i.e. per branch-and-bound node of the batch.

Paths (the LP solver picks one through :func:`make_operator`; benchmarks print which):

* ``"triton"``: :func:`bsr_matmul_triton`, one program per (block row, batch tile) that walks
  its block row's tiles and accumulates ``tile @ X[cols, batch]`` in fp32/fp64 registers
  (a broadcast-multiply-sum, so fp64 works in the CPU interpreter and on GPU alike). Runs on
  CUDA, or on CPU under ``TRITON_INTERPRET=1`` (slow: tests only).
* ``"blocks"``: :func:`bsr_matmul_torch`, the same tiles in plain torch (``bmm`` + ``index_add``):
  the kernel's reference and a CPU fallback.
* ``"dense"``: ``A`` as a dense tensor; fastest on CPU at this project's sizes (a 105 x 240
  matrix), the CPU default.
* ``"csr"``: torch's sparse CSR matmul (slower than dense on CPU here: measured ~9 ms vs
  ~0.9 ms for a 100 x 240 x 64 product).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp
import torch


@dataclass
class BlockSparse:
    """`m x n` matrix as `BM x BK` dense tiles: ``values`` `nnzb x BM x BK`, ``row_ptr``
    `ceil(m/BM) + 1`, ``col_idx`` `nnzb` (block-column of each tile)."""

    values: torch.Tensor
    row_ptr: torch.Tensor
    col_idx: torch.Tensor
    shape: tuple[int, int]
    block: tuple[int, int]

    @classmethod
    def from_scipy(
        cls,
        A: sp.spmatrix,
        block: tuple[int, int] = (16, 16),
        dtype: torch.dtype = torch.float64,
        device: str | torch.device = "cpu",
    ) -> BlockSparse:
        bm, bk = block
        m, n = A.shape
        coo = sp.coo_matrix(A)
        br, bc = coo.row // bm, coo.col // bk
        keys = np.unique(br.astype(np.int64) * (n // bk + 1) + bc)
        kr, kc = keys // (n // bk + 1), keys % (n // bk + 1)  # sorted by block row
        slot = {int(k): i for i, k in enumerate(keys)}
        vals = np.zeros((keys.size, bm, bk))
        for r, c, v in zip(coo.row, coo.col, coo.data, strict=True):
            vals[slot[int(r // bm) * (n // bk + 1) + int(c // bk)], r % bm, c % bk] += v
        nbr = -(-m // bm)
        row_ptr = np.zeros(nbr + 1, dtype=np.int64)
        np.add.at(row_ptr, kr + 1, 1)
        row_ptr = np.cumsum(row_ptr)
        return cls(
            values=torch.tensor(vals, dtype=dtype, device=device),
            row_ptr=torch.tensor(row_ptr, dtype=torch.int32, device=device),
            col_idx=torch.tensor(kc, dtype=torch.int32, device=device),
            shape=(int(m), int(n)),
            block=(bm, bk),
        )


def bsr_matmul_torch(A: BlockSparse, X: torch.Tensor) -> torch.Tensor:
    """``A @ X`` from the tiles in plain torch; ``X`` `n x B` -> `m x B`."""
    m, n = A.shape
    bm, bk = A.block
    nbc = -(-n // bk)
    nbr = A.row_ptr.numel() - 1
    Xp = torch.zeros(nbc * bk, X.shape[1], dtype=X.dtype, device=X.device)
    Xp[:n] = X
    xb = Xp.view(nbc, bk, -1)[A.col_idx.long()]  # nnzb x BK x B
    prod = torch.bmm(A.values.to(X.dtype), xb)  # nnzb x BM x B
    counts = (A.row_ptr[1:] - A.row_ptr[:-1]).long()
    rows = torch.repeat_interleave(torch.arange(nbr, device=X.device), counts)
    out = torch.zeros(nbr, bm, X.shape[1], dtype=X.dtype, device=X.device)
    out.index_add_(0, rows, prod)
    return out.reshape(nbr * bm, -1)[:m]


_KERNEL: Any = None


def _triton_kernel() -> Any:
    """Compile (once) and return the Triton kernel; sets ``TRITON_INTERPRET=1`` without CUDA
    if triton is not imported yet (Triton reads it once, at import)."""
    global _KERNEL
    if _KERNEL is not None:
        return _KERNEL
    if "triton" not in sys.modules and not torch.cuda.is_available():
        os.environ.setdefault("TRITON_INTERPRET", "1")
    import triton
    import triton.language as tl

    @triton.jit
    def bsr_kernel(
        vals_ptr, row_ptr, col_ptr, x_ptr, y_ptr,
        m, n, nb,
        BM: tl.constexpr, BK: tl.constexpr, BB: tl.constexpr,
    ):  # fmt: skip
        br = tl.program_id(0)
        bb = tl.program_id(1)
        rm = tl.arange(0, BM)
        rk = tl.arange(0, BK)
        rb = bb * BB + tl.arange(0, BB)
        start = tl.load(row_ptr + br)
        end = tl.load(row_ptr + br + 1)
        acc = tl.zeros((BM, BB), dtype=y_ptr.dtype.element_ty)
        for t in range(start, end):
            bc = tl.load(col_ptr + t)
            tile = tl.load(vals_ptr + t * BM * BK + rm[:, None] * BK + rk[None, :])
            cols = bc * BK + rk
            xm = (cols[:, None] < n) & (rb[None, :] < nb)
            xt = tl.load(x_ptr + cols[:, None] * nb + rb[None, :], mask=xm, other=0.0)
            acc += tl.sum(tile[:, :, None] * xt[None, :, :], axis=1)
        rows = br * BM + rm
        ym = (rows[:, None] < m) & (rb[None, :] < nb)
        tl.store(y_ptr + rows[:, None] * nb + rb[None, :], acc, mask=ym)

    _KERNEL = (bsr_kernel, triton)
    return _KERNEL


def bsr_matmul_triton(A: BlockSparse, X: torch.Tensor, block_b: int = 16) -> torch.Tensor:
    """``A @ X`` with the Triton kernel; ``X`` `n x B` (made contiguous) -> `m x B`."""
    kernel, triton = _triton_kernel()
    m, n = A.shape
    if X.shape[0] != n:
        raise ValueError(f"X has {X.shape[0]} rows, A has {n} columns")
    X = X.contiguous()
    nb = X.shape[1]
    Y = torch.empty(m, nb, dtype=X.dtype, device=X.device)
    bm, bk = A.block
    vals = A.values.to(X.dtype).contiguous()
    grid = (A.row_ptr.numel() - 1, triton.cdiv(nb, block_b))
    kernel[grid](vals, A.row_ptr, A.col_idx, X, Y, m, n, nb, BM=bm, BK=bk, BB=block_b)
    return Y


class Operator(Protocol):
    """``mv(X)`` = ``A X`` (`n x B` -> `m x B`), ``rmv(Y)`` = ``A^T Y`` (`m x B` -> `n x B`)."""

    path: str

    def mv(self, X: torch.Tensor) -> torch.Tensor: ...

    def rmv(self, Y: torch.Tensor) -> torch.Tensor: ...


@dataclass
class TorchOperator:
    """Dense or CSR torch matmuls."""

    path: str
    A: torch.Tensor
    AT: torch.Tensor

    def mv(self, X: torch.Tensor) -> torch.Tensor:
        return self.A @ X

    def rmv(self, Y: torch.Tensor) -> torch.Tensor:
        return self.AT @ Y


@dataclass
class BlockOperator:
    """The block-tiled layout of ``A`` and of ``A^T``, through Triton or torch."""

    path: str
    A: BlockSparse
    AT: BlockSparse

    def mv(self, X: torch.Tensor) -> torch.Tensor:
        if self.path == "triton":
            return bsr_matmul_triton(self.A, X)
        return bsr_matmul_torch(self.A, X)

    def rmv(self, Y: torch.Tensor) -> torch.Tensor:
        if self.path == "triton":
            return bsr_matmul_triton(self.AT, Y)
        return bsr_matmul_torch(self.AT, Y)


PATHS = ("dense", "csr", "blocks", "triton")


def make_operator(
    A: sp.spmatrix,
    path: str = "auto",
    dtype: torch.dtype = torch.float64,
    device: str | torch.device = "cpu",
    block: tuple[int, int] = (16, 16),
) -> Operator:
    """An :class:`Operator` for ``A`` on ``device``. ``"auto"``: ``"triton"`` on CUDA, else
    ``"dense"``."""
    if path == "auto":
        path = "triton" if torch.device(device).type == "cuda" else "dense"
    if path not in PATHS:
        raise ValueError(f"unknown spmv path {path!r}; one of {PATHS}")
    if path in ("dense", "csr"):
        Ad = torch.tensor(sp.csr_matrix(A).toarray(), dtype=dtype, device=device)
        if path == "csr":
            return TorchOperator(path, Ad.to_sparse_csr(), Ad.T.contiguous().to_sparse_csr())
        return TorchOperator(path, Ad, Ad.T.contiguous())
    At = sp.csr_matrix(A).T.tocsr()
    return BlockOperator(
        path,
        BlockSparse.from_scipy(A, block, dtype, device),
        BlockSparse.from_scipy(At, block, dtype, device),
    )
