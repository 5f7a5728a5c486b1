"""Staging on chip: a row is loaded once and reused by max, exp and sum (one HBM read)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from optiforge.agents.hawkeye.strategies.examples._common import device

TOL = {"float32": (1e-5, 1e-4), "float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}


@triton.jit
def _softmax_row(x_ptr, out_ptr, n_cols, sxm, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sxm + cols, mask=mask, other=-float("inf")).to(tl.float32)
    z = x - tl.max(x, axis=0)  # staged row reused: no second load
    num = tl.exp(z)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + cols, (num / den).to(out_ptr.dtype.element_ty), mask=mask)


def make_inputs(seed: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    return ((3.0 * torch.randn((9, 77), generator=g)).to(device()),)


def launch(x: torch.Tensor, num_warps: int = 4) -> torch.Tensor:
    """Row softmax of `M x N` ``x`` (unit column stride)."""
    x = x if x.stride(1) == 1 else x.contiguous()
    m, n = x.shape
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _softmax_row[(m,)](
        x, out, n, x.stride(0), BLOCK_N=triton.next_power_of_2(n), num_warps=num_warps
    )
    return out


def reference(x: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x.float(), dim=-1).to(x.dtype)
