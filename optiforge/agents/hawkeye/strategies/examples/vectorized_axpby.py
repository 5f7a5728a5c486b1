"""Coalesced, vectorized access: flat contiguous offsets with alignment/contiguity hints."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from optiforge.agents.hawkeye.strategies.examples._common import device

TOL = {"float32": (1e-6, 1e-5), "float16": (1e-3, 1e-3), "bfloat16": (1e-2, 1e-2)}


@triton.jit
def _axpby(x_ptr, y_ptr, out_ptr, n, a, b, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    # Hints let the compiler emit 128-bit loads: BLOCK consecutive, BLOCK-aligned lanes.
    offs = tl.max_contiguous(tl.multiple_of(offs, BLOCK), BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, (a * x.to(tl.float32) + b * y.to(tl.float32)).to(x.dtype), mask=mask)


def make_inputs(seed: int) -> tuple[torch.Tensor, ...]:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1000, generator=g).to(device())
    y = torch.randn(1000, generator=g).to(device())
    return x, y


def launch(x: torch.Tensor, y: torch.Tensor, BLOCK: int = 256, num_warps: int = 4) -> torch.Tensor:  # noqa: N803
    """``1.5 x - 0.75 y`` over contiguous flat tensors."""
    x, y = x.contiguous(), y.contiguous()
    out = torch.empty_like(x)
    n = x.numel()
    _axpby[(triton.cdiv(n, BLOCK),)](x, y, out, n, 1.5, -0.75, BLOCK=BLOCK, num_warps=num_warps)
    return out


def reference(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    return (1.5 * x.float() - 0.75 * y.float()).to(x.dtype)
