"""Warp specialization: ``tl.range(..., warp_specialize=True)`` splits producer (TMA loads) and
consumer (wgmma / tcgen05) warps on sm90+ (Triton's automatic warp specialization).

The interpreter runs the loop with plain sequential semantics (no warps exist there),
which checks correctness of the kernel, not the specialization.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from optiforge.agents.hawkeye.strategies.examples import tma_matmul
from optiforge.agents.hawkeye.strategies.examples._common import MM_TOL, matmul_reference

TOL = MM_TOL


@triton.jit
def _ws_mm(a_ptr, b_ptr, c_ptr, M, N, K,
           BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
           NUM_STAGES: tl.constexpr):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BLOCK_K, BLOCK_N])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in tl.range(0, K, BLOCK_K, num_stages=NUM_STAGES, warp_specialize=True):
        a = a_desc.load([pid_m * BLOCK_M, k0])
        b = b_desc.load([k0, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))  # fmt: skip


make_inputs = tma_matmul.make_inputs


def _scratch(size: int, alignment: int, stream: int | None) -> torch.Tensor:
    return torch.empty(size, dtype=torch.int8, device="cuda")


def launch(
    a: torch.Tensor,
    b: torch.Tensor,
    BLOCK_M: int = 32,
    BLOCK_N: int = 32,  # noqa: N803
    BLOCK_K: int = 32,
    NUM_STAGES: int = 2,
    num_warps: int = 4,
) -> torch.Tensor:  # noqa: N803
    """Contiguous fp16 `M x K` @ `K x N` with a warp-specialized K loop."""
    a, b = a.contiguous(), b.contiguous()
    m, k = a.shape
    n = b.shape[1]
    if a.is_cuda:
        triton.set_allocator(_scratch)
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))
    _ws_mm[grid](a, b, c, m, n, k, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                 NUM_STAGES=NUM_STAGES, num_warps=num_warps)  # fmt: skip
    return c


reference = matmul_reference
