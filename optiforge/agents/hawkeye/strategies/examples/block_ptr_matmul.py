"""Block pointers (``tl.make_block_ptr`` + ``tl.advance``): the tile-descriptor style that lowers
to TMA on sm90 and to ordinary (masked, boundary-checked) loads on sm80 and the interpreter."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from optiforge.agents.hawkeye.strategies.examples._common import (
    MM_TOL,
    matmul_inputs,
    matmul_reference,
)

TOL = MM_TOL


@triton.jit
def _bp_mm(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_blk = tl.make_block_ptr(
        a_ptr, (M, K), (sam, sak), (pid_m * BLOCK_M, 0), (BLOCK_M, BLOCK_K), (1, 0)
    )
    b_blk = tl.make_block_ptr(
        b_ptr, (K, N), (sbk, sbn), (0, pid_n * BLOCK_N), (BLOCK_K, BLOCK_N), (1, 0)
    )
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(0, K, BLOCK_K):
        a = tl.load(a_blk, boundary_check=(0, 1), padding_option="zero")
        b = tl.load(b_blk, boundary_check=(0, 1), padding_option="zero")
        acc = tl.dot(a, b, acc, input_precision="ieee")
        a_blk = tl.advance(a_blk, (0, BLOCK_K))
        b_blk = tl.advance(b_blk, (BLOCK_K, 0))
    c_blk = tl.make_block_ptr(
        c_ptr, (M, N), (N, 1), (pid_m * BLOCK_M, pid_n * BLOCK_N), (BLOCK_M, BLOCK_N), (1, 0)
    )
    tl.store(c_blk, acc.to(c_ptr.dtype.element_ty), boundary_check=(0, 1))


def make_inputs(seed: int) -> tuple[torch.Tensor, ...]:
    return matmul_inputs(seed)


def launch(
    a: torch.Tensor,
    b: torch.Tensor,
    BLOCK_M: int = 32,
    BLOCK_N: int = 32,  # noqa: N803
    BLOCK_K: int = 32,
    num_warps: int = 4,
) -> torch.Tensor:  # noqa: N803
    """`M x K` @ `K x N` through block pointers."""
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))
    # Triton 3.x warns that make_block_ptr is deprecated in favour of TMA (harmless here)
    _bp_mm[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                 BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, num_warps=num_warps)  # fmt: skip
    return c


reference = matmul_reference
