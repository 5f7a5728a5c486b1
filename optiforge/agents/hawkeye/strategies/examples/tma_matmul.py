"""TMA: device-side tensor descriptors (``tl.make_tensor_descriptor``) move whole tiles with the
Hopper Tensor Memory Accelerator; out-of-bounds lanes are zero-filled by the hardware.

On sm90 the descriptors need 16-byte aligned strides (hence the shapes below) and a
global scratch allocator for the descriptors (``triton.set_allocator``). The interpreter
runs the same code with the same semantics, without any TMA hardware.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from optiforge.agents.hawkeye.strategies.examples._common import MM_TOL, device, matmul_reference

TOL = MM_TOL
M, N, K = 40, 48, 64  # row strides of 48 and 64 fp16 elements are 16-byte multiples


@triton.jit
def _tma_mm(a_ptr, b_ptr, c_ptr, M, N, K,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    a_desc = tl.make_tensor_descriptor(a_ptr, [M, K], [K, 1], [BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, [K, N], [N, 1], [BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BLOCK_M, BLOCK_N])
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        a = a_desc.load([pid_m * BLOCK_M, k0])
        b = b_desc.load([k0, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_ptr.dtype.element_ty))


def make_inputs(seed: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    a = torch.randn((M, K), generator=g).to(device=device(), dtype=torch.float16)
    b = torch.randn((K, N), generator=g).to(device=device(), dtype=torch.float16)
    return a, b


def _scratch(size: int, alignment: int, stream: int | None) -> torch.Tensor:
    return torch.empty(size, dtype=torch.int8, device="cuda")


def launch(
    a: torch.Tensor,
    b: torch.Tensor,
    BLOCK_M: int = 32,
    BLOCK_N: int = 32,  # noqa: N803
    BLOCK_K: int = 32,
    num_warps: int = 4,
) -> torch.Tensor:  # noqa: N803
    """Contiguous fp16 `M x K` @ `K x N` through TMA descriptors."""
    a, b = a.contiguous(), b.contiguous()
    m, k = a.shape
    n = b.shape[1]
    if a.is_cuda:
        triton.set_allocator(_scratch)
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(m, BLOCK_M), triton.cdiv(n, BLOCK_N))
    _tma_mm[grid](a, b, c, m, n, k, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K,
                  num_warps=num_warps)  # fmt: skip
    return c


reference = matmul_reference
