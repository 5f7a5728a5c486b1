"""Split-K: SPLIT_K programs reduce disjoint K ranges of one tile and ``tl.atomic_add`` their
partial sums into an fp32 workspace (more parallelism when M x N is small and K is long)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from optiforge.agents.hawkeye.strategies.examples._common import MM_TOL, device, matmul_reference

TOL = MM_TOL


@triton.jit
def _split_k_mm(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                SPLIT_K: tl.constexpr):  # fmt: skip
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    pid_k = tl.program_id(2)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kt in range(pid_k, tl.cdiv(K, BLOCK_K), SPLIT_K):
        rk = kt * BLOCK_K + tl.arange(0, BLOCK_K)
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
    tl.atomic_add(c_ptr + rm[:, None] * N + rn[None, :], acc,
                  mask=(rm[:, None] < M) & (rn[None, :] < N))  # fmt: skip


@triton.jit
def _cast(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    # the fp32 partial sums, cast to the output dtype in Triton (no torch compute)
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + i, tl.load(src_ptr + i, mask=i < n).to(dst_ptr.dtype.element_ty), mask=i < n)


def make_inputs(seed: int) -> tuple[torch.Tensor, ...]:
    # Small output, long K: the regime split-K is for.
    g = torch.Generator().manual_seed(seed)
    a = torch.randn((20, 300), generator=g).to(device())
    b = torch.randn((300, 18), generator=g).to(device())
    return a, b


def launch(
    a: torch.Tensor,
    b: torch.Tensor,
    BLOCK_M: int = 32,
    BLOCK_N: int = 32,  # noqa: N803
    BLOCK_K: int = 32,
    SPLIT_K: int = 4,
    num_warps: int = 4,
) -> torch.Tensor:  # noqa: N803
    """`M x K` @ `K x N` with K split over SPLIT_K programs per tile."""
    m, k = a.shape
    n = b.shape[1]
    ws = torch.zeros((m, n), dtype=torch.float32, device=a.device)
    grid = (triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N), SPLIT_K)
    _split_k_mm[grid](a, b, ws, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                      BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, SPLIT_K=SPLIT_K,
                      num_warps=num_warps)  # fmt: skip
    if a.dtype == torch.float32:
        return ws
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    _cast[(triton.cdiv(m * n, 1024),)](ws, c, m * n, BLOCK=1024)
    return c


reference = matmul_reference
