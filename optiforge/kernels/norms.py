"""RMSNorm and LayerNorm forward over the last dim of an `M x N` tensor.

``rmsnorm``: ``y = x / sqrt(mean(x^2) + eps) * w``; ``layernorm``:
``y = (x - mean) / sqrt(var + eps) * w + b`` (biased variance, as torch). ``w``, ``b``
are `N` (optional: ``None`` means 1 / 0). One program per row streams the row in
``BLOCK_N`` chunks twice (statistics, then normalise), so any N works; with
``BLOCK_N >= N`` the second read hits cache. Statistics in fp32; output `M x N`
contiguous in x's dtype. LayerNorm's variance is two-pass (mean first) for stability.
"""

from __future__ import annotations

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


@triton.jit
def _norm_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, n_cols, sxm, sxn, eps,
    IS_RMS: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    row = tl.program_id(0)
    base = x_ptr + row * sxm
    mean = 0.0
    if not IS_RMS:
        acc = tl.zeros([BLOCK_N], tl.float32)
        for start in range(0, n_cols, BLOCK_N):
            cols = start + tl.arange(0, BLOCK_N)
            acc += tl.load(base + cols * sxn, mask=cols < n_cols, other=0.0).to(tl.float32)
        mean = tl.sum(acc, axis=0) / n_cols
    acc2 = tl.zeros([BLOCK_N], tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(base + cols * sxn, mask=mask, other=0.0).to(tl.float32)
        d = tl.where(mask, x - mean, 0.0)
        acc2 += d * d
    rstd = 1.0 / tl.sqrt(tl.sum(acc2, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(base + cols * sxn, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd
        if HAS_W:
            y = y * tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        if HAS_B:
            y = y + tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + row * n_cols + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def _launch(
    is_rms: bool,
    x: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    eps: float,
    block_n: int | None,
    num_warps: int,
) -> torch.Tensor:
    check_float("x", x)
    if x.dim() != 2:
        raise ValueError(f"norm expects a 2-D `M x N` tensor, got shape {tuple(x.shape)}")
    m, n = x.shape
    named = [("x", x)]
    for name, p in (("weight", weight), ("bias", bias)):
        if p is None:
            continue
        check_float(name, p)
        if p.shape != (n,):
            raise ValueError(f"{name} must have shape ({n},), got {tuple(p.shape)}")
        if not p.is_contiguous():
            raise ValueError(f"{name} must be contiguous")
        named.append((name, p))
    check_device(*named)
    if not eps > 0:
        raise ValueError(f"eps must be > 0, got {eps}")
    block = block_n or min(4096, triton.next_power_of_2(n))
    check_pow2("BLOCK_N", block, 16)
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    dummy = x  # never read when HAS_W / HAS_B is False
    _norm_kernel[(m,)](
        x, weight if weight is not None else dummy, bias if bias is not None else dummy, out,
        n, x.stride(0), x.stride(1), float(eps),
        IS_RMS=is_rms, HAS_W=weight is not None, HAS_B=bias is not None,
        BLOCK_N=block, num_warps=num_warps,
    )  # fmt: skip
    return out


def rmsnorm(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    *,
    eps: float = 1e-6,
    BLOCK_N: int | None = None,  # noqa: N803
    num_warps: int = 4,
) -> torch.Tensor:
    """RMSNorm of `M x N` ``x`` with optional `N` ``weight``."""
    return _launch(True, x, weight, None, eps, BLOCK_N, num_warps)


def layernorm(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-5,
    BLOCK_N: int | None = None,  # noqa: N803
    num_warps: int = 4,
) -> torch.Tensor:
    """LayerNorm of `M x N` ``x`` with optional `N` ``weight`` and ``bias``."""
    return _launch(False, x, weight, bias, eps, BLOCK_N, num_warps)


def reference_rmsnorm(
    x: torch.Tensor, weight: torch.Tensor | None = None, *, eps: float = 1e-6
) -> torch.Tensor:
    """Plain-torch RMSNorm (``torch.nn.functional.rms_norm``) in fp32."""
    w = weight.float() if weight is not None else None
    return torch.nn.functional.rms_norm(x.float(), (x.shape[-1],), w, eps).to(x.dtype)


def reference_layernorm(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-5,
) -> torch.Tensor:
    """Plain-torch LayerNorm (``torch.nn.functional.layer_norm``) in fp32."""
    w = weight.float() if weight is not None else None
    b = bias.float() if bias is not None else None
    return torch.nn.functional.layer_norm(x.float(), (x.shape[-1],), w, b, eps).to(x.dtype)
