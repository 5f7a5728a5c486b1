"""Tiling + autotuning: ``@triton.autotune`` benchmarks a config list per (M, N, K) on the GPU.

GPU only: under the interpreter, autotuning would time numpy emulation, which says
nothing about tile choice, so the interpreter entry uses ``tiled_matmul`` instead.
"""

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

_CONFIGS = [
    triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk}, num_warps=w, num_stages=s)
    for bm, bn, bk, w, s in ((128, 128, 32, 8, 3), (64, 128, 32, 4, 4), (128, 64, 64, 4, 3),
                             (64, 64, 32, 4, 2), (32, 32, 32, 2, 2))
]  # fmt: skip


@triton.autotune(configs=_CONFIGS, key=["M", "N", "K"])
@triton.jit
def _autotuned_mm(a_ptr, b_ptr, c_ptr, M, N, K, sam, sak, sbk, sbn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
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
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))  # fmt: skip


def make_inputs(seed: int) -> tuple[torch.Tensor, ...]:
    return matmul_inputs(seed, torch.float16)


def launch(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """`M x K` @ `K x N` -> `M x N` with the autotuner's tile choice."""
    m, k = a.shape
    n = b.shape[1]
    c = torch.empty((m, n), dtype=a.dtype, device=a.device)

    def grid(meta: dict[str, int]) -> tuple[int, int]:
        return (triton.cdiv(m, meta["BLOCK_M"]), triton.cdiv(n, meta["BLOCK_N"]))

    _autotuned_mm[grid](a, b, c, m, n, k, a.stride(0), a.stride(1), b.stride(0), b.stride(1))
    return c


reference = matmul_reference
