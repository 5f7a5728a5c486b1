"""Tiled matmul ``C = A @ B`` with grouped tile order and optional split-K.

Shapes: ``a`` `M x K`, ``b`` `K x N`, any strides (transposed views work without a
copy), same dtype (fp16 / bf16 / fp32). ``C`` is `M x N` contiguous in the input dtype;
accumulation is fp32.

Meta-parameters: ``BLOCK_M``, ``BLOCK_N``, ``BLOCK_K`` (powers of two >= 16, the
minimum ``tl.dot`` accepts), ``GROUP_M`` (tile swizzle for L2 reuse), ``SPLIT_K``,
``num_warps``, ``num_stages``. Grid: ``(cdiv(M, BM) * cdiv(N, BN), SPLIT_K)``.

Split-K: program ``(pid, s)`` reduces the K-tiles ``s, s + SPLIT_K, ...`` and
atomically adds its partial tile into an fp32 `M x N` workspace that starts at zero;
the workspace is cast to the output dtype afterwards. Atomic fp32 adds make the
result order-dependent on GPU (bitwise non-deterministic, not inaccurate); under the
interpreter programs run one after another, so the atomics are trivially ordered and
races are invisible there.
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
def _matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    sam, sak, sbk, sbn, scm, scn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr, INPUT_PRECISION: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    pid_k = tl.program_id(1)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # Grouped ordering: GROUP_M row-tiles share B column tiles while they are in L2.
    num_in_group = GROUP_M * num_pid_n
    group_id = pid // num_in_group
    first_m = group_id * GROUP_M
    group_size = tl.minimum(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % num_in_group) % group_size
    pid_n = (pid % num_in_group) // group_size

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kt in range(pid_k, tl.cdiv(K, BLOCK_K), SPLIT_K):
        rk = kt * BLOCK_K + tl.arange(0, BLOCK_K)
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
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
    c_ptrs = c_ptr + rm[:, None] * scm + rn[None, :] * scn
    c_mask = (rm[:, None] < M) & (rn[None, :] < N)
    if SPLIT_K == 1:
        tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=c_mask)
    else:
        tl.atomic_add(c_ptrs, acc, mask=c_mask)


def matmul(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    BLOCK_M: int = 64,  # noqa: N803
    BLOCK_N: int = 64,  # noqa: N803
    BLOCK_K: int = 32,  # noqa: N803
    GROUP_M: int = 8,  # noqa: N803
    SPLIT_K: int = 1,  # noqa: N803
    num_warps: int = 4,
    num_stages: int = 3,
    allow_tf32: bool = False,
) -> torch.Tensor:
    """`M x K` @ `K x N` -> `M x N`.

    allow_tf32: let fp32 inputs use TF32 tensor cores on GPU (faster, ~1e-3 relative
    error); off by default so fp32 results match the reference tightly.
    """
    check_float("a", a)
    check_float("b", b)
    check_device(("a", a), ("b", b))
    if a.dim() != 2 or b.dim() != 2:
        raise ValueError(f"matmul expects 2-D inputs, got {tuple(a.shape)} and {tuple(b.shape)}")
    if a.shape[1] != b.shape[0]:
        raise ValueError(f"inner dims differ: a is {tuple(a.shape)}, b is {tuple(b.shape)}")
    if a.dtype != b.dtype:
        raise ValueError(f"dtype mismatch: a {a.dtype} vs b {b.dtype}")
    for name, v in (("BLOCK_M", BLOCK_M), ("BLOCK_N", BLOCK_N), ("BLOCK_K", BLOCK_K)):
        check_pow2(name, v, 16)
    if GROUP_M < 1 or SPLIT_K < 1:
        raise ValueError(f"GROUP_M and SPLIT_K must be >= 1, got {GROUP_M}, {SPLIT_K}")
    m, k = a.shape
    n = b.shape[1]
    if SPLIT_K == 1:
        c = torch.empty((m, n), dtype=a.dtype, device=a.device)
    else:
        c = torch.zeros((m, n), dtype=torch.float32, device=a.device)
    grid = (triton.cdiv(m, BLOCK_M) * triton.cdiv(n, BLOCK_N), SPLIT_K)
    _matmul_kernel[grid](
        a, b, c, m, n, k,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, BLOCK_K=BLOCK_K, GROUP_M=GROUP_M, SPLIT_K=SPLIT_K,
        INPUT_PRECISION="tf32" if allow_tf32 and a.dtype == torch.float32 else "ieee",
        num_warps=num_warps, num_stages=num_stages,
    )  # fmt: skip
    return c if SPLIT_K == 1 else c.to(a.dtype)


def reference_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Plain-torch matmul in fp64 (an independent accumulation order), rounded to ``a.dtype``."""
    return (a.double() @ b.double()).to(a.dtype)
