"""Kernel sources shared by the kernelarena and hawkeye tests."""

SOFTMAX_JIT = """
import torch
import triton
import triton.language as tl


@triton.jit
def _softmax(x_ptr, out_ptr, n_cols, sxm, sxn, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sxm + cols * sxn, mask=mask, other=-float("inf")).to(tl.float32)
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    tl.store(out_ptr + row * n_cols + cols, (num / tl.sum(num, axis=0)).to(out_ptr.dtype.element_ty), mask=mask)
"""
"""A correct row-softmax Triton kernel (no ``launch``: each test adds its own)."""

SOFTMAX_LAUNCH = """

def launch(x):
    m, n = x.shape
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _softmax[(m,)](x, out, n, x.stride(0), x.stride(1), BLOCK_N=triton.next_power_of_2(n))
    return out
"""
GOOD_SOFTMAX = SOFTMAX_JIT + SOFTMAX_LAUNCH
"""A correct Triton softmax candidate (row-staged)."""
TORCH_SOFTMAX = "import torch\n\n\ndef launch(x):\n    return torch.softmax(x, dim=-1)\n"
"""A candidate the static checks reject (torch compute)."""
