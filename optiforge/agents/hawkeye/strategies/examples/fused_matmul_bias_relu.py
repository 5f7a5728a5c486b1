"""Fusion: matmul with a bias + ReLU epilogue in one kernel (the `M x N` result never round-trips
through HBM between the three ops)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from optiforge.agents.hawkeye.strategies.examples._common import MM_TOL, device, matmul_inputs

TOL = MM_TOL


@triton.jit
def _mm_bias_relu(a_ptr, b_ptr, bias_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):  # fmt: skip
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
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
    bias = tl.load(bias_ptr + rn, mask=rn < N, other=0.0).to(tl.float32)
    out = tl.maximum(acc + bias[None, :], 0.0)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], out.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))  # fmt: skip


def make_inputs(seed: int) -> tuple[torch.Tensor, ...]:
    a, b = matmul_inputs(seed)
    bias = torch.randn(b.shape[1], generator=torch.Generator().manual_seed(seed + 1)).to(device())
    return a, b, bias


def launch(
    a: torch.Tensor,
    b: torch.Tensor,
    bias: torch.Tensor,
    BLOCK_M: int = 32,  # noqa: N803
    BLOCK_N: int = 32,
    BLOCK_K: int = 32,
    num_warps: int = 4,
) -> torch.Tensor:  # noqa: N803
    """``relu(a @ b + bias)`` for `M x K`, `K x N`, `N`."""
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))
    _mm_bias_relu[grid](a, b, bias.contiguous(), c, m, n, k, a.stride(0), a.stride(1), b.stride(0),
                        b.stride(1), BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                        num_warps=num_warps)  # fmt: skip
    return c


def reference(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    return torch.relu(a.double() @ b.double() + bias.double()).to(a.dtype)
