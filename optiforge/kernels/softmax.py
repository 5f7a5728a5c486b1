"""Row-wise softmax over the last dim of an `M x N` tensor (arbitrary strides).

Two kernels: ``one_block`` keeps a whole row in one tile (``BLOCK_N >= N``, one read,
one write), ``looped`` streams a long row in ``BLOCK_N`` chunks with an online max /
rescaled sum (Milakov & Gimelshein 2018) and then a second pass that writes
``exp(x - max) / sum``. ``softmax(..., variant="auto")`` picks ``one_block`` when the
row fits ``MAX_ONE_BLOCK`` elements. Output: contiguous `M x N`, input dtype; math in fp32.
"""

from __future__ import annotations

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

MAX_ONE_BLOCK = 8192
Variant = Literal["auto", "one_block", "looped"]


@triton.jit
def _softmax_one_block_kernel(x_ptr, out_ptr, n_cols, sxm, sxn, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sxm + cols * sxn, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    den = tl.sum(num, axis=0)
    tl.store(out_ptr + row * n_cols + cols, (num / den).to(out_ptr.dtype.element_ty), mask=mask)


@triton.jit
def _softmax_looped_kernel(x_ptr, out_ptr, n_cols, sxm, sxn, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * sxm
    # Per-lane running max / sum; lanes are merged at the end (avoids a scalar carry).
    m_i = tl.full([BLOCK_N], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_N], tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(base + cols * sxn, mask=cols < n_cols, other=-float("inf")).to(tl.float32)
        m_new = tl.maximum(m_i, x)
        # Lanes that have seen only -inf: shift by 0 instead of -inf so that no
        # (-inf) - (-inf) NaN appears; exp(-inf - 0) = 0 keeps l = 0 there.
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        l_i = l_i * tl.exp(m_i - m_safe) + tl.exp(x - m_safe)
        m_i = m_new
    m_row = tl.max(m_i, axis=0)
    m_lane = tl.where(m_i == -float("inf"), m_row, m_i)  # l_i is 0 on such lanes
    l_row = tl.sum(l_i * tl.exp(m_lane - m_row), axis=0)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(base + cols * sxn, mask=mask, other=-float("inf")).to(tl.float32)
        y = tl.exp(x - m_row) / l_row
        tl.store(out_ptr + row * n_cols + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(
    x: torch.Tensor,
    *,
    variant: Variant = "auto",
    BLOCK_N: int | None = None,  # noqa: N803
    num_warps: int = 4,
) -> torch.Tensor:
    """Softmax over the last dim of `M x N` ``x``.

    BLOCK_N: tile width; defaults to ``next_pow2(N)`` for ``one_block`` (must be >= N)
    and ``min(1024, next_pow2(N))`` for ``looped``.
    """
    check_float("x", x)
    check_device(("x", x))
    if x.dim() != 2:
        raise ValueError(f"softmax expects a 2-D `M x N` tensor, got shape {tuple(x.shape)}")
    m, n = x.shape
    if variant == "auto":
        variant = "one_block" if n <= MAX_ONE_BLOCK else "looped"
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    if variant == "one_block":
        block = BLOCK_N or triton.next_power_of_2(n)
        check_pow2("BLOCK_N", block, 16)
        if block < n:
            raise ValueError(f"one_block softmax needs BLOCK_N >= N ({block} < {n}); use looped")
        _softmax_one_block_kernel[(m,)](
            x, out, n, x.stride(0), x.stride(1), BLOCK_N=block, num_warps=num_warps
        )
    elif variant == "looped":
        block = BLOCK_N or min(1024, triton.next_power_of_2(n))
        check_pow2("BLOCK_N", block, 16)
        _softmax_looped_kernel[(m,)](
            x, out, n, x.stride(0), x.stride(1), BLOCK_N=block, num_warps=num_warps
        )
    else:
        raise ValueError(f"unknown softmax variant {variant!r}; use auto, one_block or looped")
    return out


def reference_softmax(x: torch.Tensor) -> torch.Tensor:
    """Plain-torch softmax over the last dim, in fp32, rounded to ``x.dtype``."""
    return torch.softmax(x.float(), dim=-1).to(x.dtype)
