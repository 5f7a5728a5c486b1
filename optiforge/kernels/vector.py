"""Element-wise vector kernels: add, mul, fused axpby (``a*x + b*y``), relu, gelu.

Shapes: inputs are 1-D (``N``) or 2-D (``M x N``) with arbitrary strides; higher-rank
tensors are viewed as ``1 x numel`` when contiguous (otherwise a contiguous copy is
made, said here because it costs a copy). Output is a fresh contiguous tensor of the
input's shape and dtype. Arithmetic runs in fp32 and is rounded once on store.

Grid: ``(M, cdiv(N, BLOCK_N))``; ``BLOCK_N`` and ``num_warps`` are tunable.
"""

from __future__ import annotations

import math
from typing import Literal

import torch

from optiforge.kernels._backend import (
    check_device,
    check_float,
    check_pow2,
    configure_triton_backend,
)

configure_triton_backend()

import triton  # noqa: E402
import triton.language as tl  # noqa: E402

BinaryOp = Literal["add", "mul"]
UnaryOp = Literal["relu", "gelu"]


@triton.jit
def _binary_kernel(
    x_ptr, y_ptr, out_ptr, n_cols,
    sxm, sxn, sym, syn,
    a, b,
    OP: tl.constexpr,  # 0 add, 1 mul, 2 axpby
    BLOCK_N: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sxm + cols * sxn, mask=mask).to(tl.float32)
    y = tl.load(y_ptr + row * sym + cols * syn, mask=mask).to(tl.float32)
    if OP == 0:
        r = x + y
    elif OP == 1:
        r = x * y
    else:
        r = a * x + b * y
    tl.store(out_ptr + row * n_cols + cols, r.to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _unary_kernel(
    x_ptr, out_ptr, n_cols, sxm, sxn,
    OP: tl.constexpr,  # 0 relu, 1 gelu (erf form)
    BLOCK_N: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sxm + cols * sxn, mask=mask).to(tl.float32)
    if OP == 0:  # noqa: SIM108 -- a constexpr branch, resolved at compile time
        r = tl.maximum(x, 0.0)
    else:
        r = 0.5 * x * (1.0 + tl.erf(x * 0.7071067811865476))
    tl.store(out_ptr + row * n_cols + cols, r.to(out_ptr.dtype.element_ty), mask=mask)


def _as_2d(name: str, t: torch.Tensor) -> torch.Tensor:
    """View ``t`` as `M x N` keeping its strides (1-D -> `1 x N`)."""
    check_float(name, t)
    if t.dim() == 1:
        return t.unsqueeze(0)
    if t.dim() == 2:
        return t
    return t.contiguous().reshape(1, t.numel())


def _launch_binary(
    op: int, x: torch.Tensor, y: torch.Tensor, a: float, b: float, block_n: int, num_warps: int
) -> torch.Tensor:
    if x.shape != y.shape:
        raise ValueError(f"shape mismatch: x {tuple(x.shape)} vs y {tuple(y.shape)}")
    if x.dtype != y.dtype:
        raise ValueError(f"dtype mismatch: x {x.dtype} vs y {y.dtype}")
    check_device(("x", x), ("y", y))
    check_pow2("BLOCK_N", block_n, 16)
    x2, y2 = _as_2d("x", x), _as_2d("y", y)
    m, n = x2.shape
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    grid = (m, triton.cdiv(n, block_n))
    _binary_kernel[grid](
        x2, y2, out, n, x2.stride(0), x2.stride(1), y2.stride(0), y2.stride(1),
        float(a), float(b), OP=op, BLOCK_N=block_n, num_warps=num_warps,
    )  # fmt: skip
    return out.reshape(x.shape)


def add(
    x: torch.Tensor, y: torch.Tensor, *, BLOCK_N: int = 1024, num_warps: int = 4
) -> torch.Tensor:  # noqa: N803
    """``x + y`` for same-shape `M x N` (or `N`) tensors."""
    return _launch_binary(0, x, y, 0.0, 0.0, BLOCK_N, num_warps)


def mul(
    x: torch.Tensor, y: torch.Tensor, *, BLOCK_N: int = 1024, num_warps: int = 4
) -> torch.Tensor:  # noqa: N803
    """``x * y`` for same-shape `M x N` (or `N`) tensors."""
    return _launch_binary(1, x, y, 0.0, 0.0, BLOCK_N, num_warps)


def axpby(
    a: float,
    x: torch.Tensor,
    b: float,
    y: torch.Tensor,
    *,
    BLOCK_N: int = 1024,  # noqa: N803
    num_warps: int = 4,
) -> torch.Tensor:
    """Fused ``a*x + b*y`` (one read of each input, one write) with scalar ``a``, ``b``."""
    if not (math.isfinite(a) and math.isfinite(b)):
        raise ValueError(f"axpby scalars must be finite, got a={a}, b={b}")
    return _launch_binary(2, x, y, a, b, BLOCK_N, num_warps)


def _launch_unary(op: int, x: torch.Tensor, block_n: int, num_warps: int) -> torch.Tensor:
    check_device(("x", x))
    check_pow2("BLOCK_N", block_n, 16)
    x2 = _as_2d("x", x)
    m, n = x2.shape
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    grid = (m, triton.cdiv(n, block_n))
    _unary_kernel[grid](
        x2, out, n, x2.stride(0), x2.stride(1), OP=op, BLOCK_N=block_n, num_warps=num_warps
    )
    return out.reshape(x.shape)


def relu(x: torch.Tensor, *, BLOCK_N: int = 1024, num_warps: int = 4) -> torch.Tensor:  # noqa: N803
    """``max(x, 0)`` element-wise."""
    return _launch_unary(0, x, BLOCK_N, num_warps)


def gelu(x: torch.Tensor, *, BLOCK_N: int = 1024, num_warps: int = 4) -> torch.Tensor:  # noqa: N803
    """Exact (erf) GELU ``0.5 x (1 + erf(x / sqrt 2))`` element-wise."""
    return _launch_unary(1, x, BLOCK_N, num_warps)


def reference_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Plain-torch ``x + y`` computed in fp32, rounded to ``x.dtype``."""
    return (x.float() + y.float()).to(x.dtype)


def reference_mul(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Plain-torch ``x * y`` computed in fp32, rounded to ``x.dtype``."""
    return (x.float() * y.float()).to(x.dtype)


def reference_axpby(a: float, x: torch.Tensor, b: float, y: torch.Tensor) -> torch.Tensor:
    """Plain-torch ``a*x + b*y`` in fp32, rounded to ``x.dtype``."""
    return (a * x.float() + b * y.float()).to(x.dtype)


def reference_relu(x: torch.Tensor) -> torch.Tensor:
    """Plain-torch ReLU."""
    return torch.relu(x.float()).to(x.dtype)


def reference_gelu(x: torch.Tensor) -> torch.Tensor:
    """Plain-torch exact GELU."""
    return torch.nn.functional.gelu(x.float()).to(x.dtype)
