"""Software pipelining: ``tl.range(..., num_stages=S)`` overlaps the loads of K-step i+1..i+S-1
with the math of step i (cp.async on sm80, TMA/wgmma pipelines on sm90)."""

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
def _pipelined_mm(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  NUM_STAGES: tl.constexpr):  # fmt: skip
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in tl.range(0, K, BLOCK_K, num_stages=NUM_STAGES):
        rk = k0 + tl.arange(0, BLOCK_K)
        a = tl.load(
            a_ptr + rm[:, None] * sam + rk[None, :] * sak,
            mask=(rm[:, None] < M) & (rk[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + rk[:, None] * sbk + rn[None, :] * sbn,
            mask=(rk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc = tl.dot(a, b, acc, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))  # fmt: skip


def make_inputs(seed: int) -> tuple[torch.Tensor, ...]:
    return matmul_inputs(seed)


def launch(
    a: torch.Tensor,
    b: torch.Tensor,
    BLOCK_M: int = 32,
    BLOCK_N: int = 32,  # noqa: N803
    BLOCK_K: int = 16,
    NUM_STAGES: int = 3,
    num_warps: int = 4,
) -> torch.Tensor:  # noqa: N803
    """`M x K` @ `K x N` with an S-stage software pipeline over K."""
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))
    _pipelined_mm[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                        NUM_STAGES=NUM_STAGES, num_warps=num_warps)  # fmt: skip
    return c


reference = matmul_reference
