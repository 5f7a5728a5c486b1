"""Fused attention forward (FlashAttention-2 style online softmax), causal optional.

Shapes: ``q`` `B x H x Nq x D`, ``k`` and ``v`` `B x H x Nk x D`, any strides, one
dtype (fp16 / bf16 / fp32); ``D`` a power of two in [16, 256] (tests use 16-64).
Output `B x H x Nq x D` contiguous in q's dtype. ``sm_scale`` defaults to
``1/sqrt(D)``. Causal masking keeps key ``j`` for query ``i`` iff ``j <= i``
(top-left aligned) and needs ``Nq == Nk``.

Each program owns ``BLOCK_M`` queries of one (batch, head) and streams K/V in
``BLOCK_N`` tiles keeping a running max ``m_i``, a running denominator ``l_i`` and an
unnormalised accumulator in fp32; scores use ``exp2`` with ``log2(e)`` folded into the
scale. Causal programs stop at the diagonal tile. fp32 dots use IEEE precision
(not TF32) so fp32 results match the reference on GPU too. Grid: ``(cdiv(Nq, BLOCK_M), B * H)``.
"""

from __future__ import annotations

import math

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

_LOG2E = 1.4426950408889634


@triton.jit
def _attn_fwd_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, qk_scale, H, N_Q, N_K,
    sqb, sqh, sqm, sqd, skb, skh, skn, skd, svb, svh, svn, svd, sob, soh, som, sod,
    HEAD_D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    bi = bh // H
    hi = bh % H
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_D)
    q = tl.load(
        q_ptr + bi * sqb + hi * sqh + offs_m[:, None] * sqm + offs_d[None, :] * sqd,
        mask=offs_m[:, None] < N_Q,
        other=0.0,
    )
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_D], tl.float32)
    hi_k = N_K
    if CAUSAL:
        hi_k = tl.minimum((pid_m + 1) * BLOCK_M, N_K)
    for start_n in range(0, hi_k, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_mask = offs_n[:, None] < N_K
        k = tl.load(
            k_ptr + bi * skb + hi * skh + offs_n[:, None] * skn + offs_d[None, :] * skd,
            mask=kv_mask,
            other=0.0,
        )
        s = (
            tl.dot(q, tl.trans(k), input_precision="ieee") * qk_scale
        )  # BLOCK_M x BLOCK_N, in log2 units
        valid = offs_n[None, :] < N_K
        if CAUSAL:
            valid = valid & (offs_n[None, :] <= offs_m[:, None])
        s = tl.where(valid, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        # Padded query rows (and fully masked tiles) keep m=-inf; avoid inf-inf NaN.
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m_i - m_safe)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        v = tl.load(
            v_ptr + bi * svb + hi * svh + offs_n[:, None] * svn + offs_d[None, :] * svd,
            mask=kv_mask,
            other=0.0,
        )
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v, input_precision="ieee")
        m_i = m_new
    l_safe = tl.where(l_i == 0.0, 1.0, l_i)
    out = acc / l_safe[:, None]
    tl.store(
        o_ptr + bi * sob + hi * soh + offs_m[:, None] * som + offs_d[None, :] * sod,
        out.to(o_ptr.dtype.element_ty),
        mask=offs_m[:, None] < N_Q,
    )


def attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    sm_scale: float | None = None,
    BLOCK_M: int = 64,  # noqa: N803
    BLOCK_N: int = 64,  # noqa: N803
    num_warps: int = 4,
    num_stages: int = 2,
) -> torch.Tensor:
    """``softmax(q k^T * sm_scale [+ causal mask]) v`` for `B x H x N x D` tensors."""
    for name, t in (("q", q), ("k", k), ("v", v)):
        check_float(name, t)
        if t.dim() != 4:
            raise ValueError(f"{name} must be 4-D `B x H x N x D`, got shape {tuple(t.shape)}")
    check_device(("q", q), ("k", k), ("v", v))
    if not (q.dtype == k.dtype == v.dtype):
        raise ValueError(f"dtype mismatch: q {q.dtype}, k {k.dtype}, v {v.dtype}")
    b, h, n_q, d = q.shape
    if k.shape[:2] != (b, h) or k.shape[3] != d or v.shape != k.shape:
        raise ValueError(
            f"shape mismatch: q {tuple(q.shape)}, k {tuple(k.shape)}, v {tuple(v.shape)}"
        )
    n_k = k.shape[2]
    if causal and n_q != n_k:
        raise ValueError(f"causal attention needs Nq == Nk, got {n_q} and {n_k}")
    check_pow2("head dim D", d, 16)
    if d > 256:
        raise ValueError(f"head dim D={d} > 256 is not supported")
    check_pow2("BLOCK_M", BLOCK_M, 16)
    check_pow2("BLOCK_N", BLOCK_N, 16)
    scale = (1.0 / math.sqrt(d)) if sm_scale is None else float(sm_scale)
    o = torch.empty((b, h, n_q, d), dtype=q.dtype, device=q.device)
    grid = (triton.cdiv(n_q, BLOCK_M), b * h)
    _attn_fwd_kernel[grid](
        q, k, v, o, scale * _LOG2E, h, n_q, n_k,
        *q.stride(), *k.stride(), *v.stride(), *o.stride(),
        HEAD_D=d, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, CAUSAL=causal,
        num_warps=num_warps, num_stages=num_stages,
    )  # fmt: skip
    return o


def reference_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    *,
    causal: bool = False,
    sm_scale: float | None = None,
) -> torch.Tensor:
    """Plain-torch attention: explicit fp32 scores, mask, softmax, weighted sum."""
    scale = (1.0 / math.sqrt(q.shape[-1])) if sm_scale is None else float(sm_scale)
    s = (q.float() @ k.float().transpose(-1, -2)) * scale
    if causal:
        n_q, n_k = q.shape[-2], k.shape[-2]
        keep = torch.ones(n_q, n_k, dtype=torch.bool, device=q.device).tril()
        s = s.masked_fill(~keep, float("-inf"))
    return (torch.softmax(s, dim=-1) @ v.float()).to(q.dtype)
