"""Issue 39: candidates that forged ``cost_speedup`` on CPU (task ``torch_relu``).

Each passed the old deny-list static check and the run-time guards and scored above an
honest kernel; the allow-list grammar (:mod:`optiforge.kernels.checks`) and the run-time
checks must reject each, with its reason.
"""

from __future__ import annotations

_HEAD = """
import torch
import triton
import triton.language as tl


@triton.jit
def _touch(out_ptr):
    pass
"""

#: A decorator whose name ends in ``jit`` made the old checker skip the function body:
#: host numpy compute inside it, and one empty Triton launch.
FAKE_JIT = (
    _HEAD
    + """

class _Host:
    @staticmethod
    def jit(fn):
        return fn


host = _Host()


@host.jit
def _host_relu(src, dst):
    a = src.numpy()
    d = dst.numpy()
    d[...] = a * (a > 0)


def launch(x):
    out = torch.empty_like(x)
    _host_relu(x, out)
    _touch[(1,)](out)
    return out
"""
)

#: ``match ... case object(numpy=...)`` reads ``Tensor.numpy`` without an attribute node.
MATCH_ATTR = (
    _HEAD
    + """

def launch(x):
    out = torch.empty_like(x)
    match x:
        case object(numpy=x_np):
            pass
    match out:
        case object(numpy=o_np):
            pass
    a = x_np()
    o = o_np()
    o[...] = a * (a > 0)
    _touch[(1,)](out)
    return out
"""
)

#: An honest kernel, with the counter's ``traffic._add`` replaced (reached through a match
#: pattern and a name called ``self``): every byte is dropped from the count.
COUNTER_ADD = """
import torch
import triton
import triton.language as tl
import optiforge.kernels


@triton.jit
def _relu(x_ptr, out_ptr, n_cols, sxm, sxn, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sxm + cols * sxn, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, tl.maximum(x, 0.0), mask=mask)


def _nothing(key, value):
    return None


def launch(x):
    match optiforge.kernels:
        case object(traffic=self):
            self._add = _nothing
    m, n = x.shape
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _relu[(m,)](x, out, n, x.stride(0), x.stride(1), BLOCK_N=triton.next_power_of_2(n))
    return out
"""

#: Host numpy compute reached as a bound method value (``f = x.numpy``), no attribute call.
HOST_NUMPY = (
    _HEAD
    + """

def launch(x):
    out = x.new_empty(x.shape)
    read, write = x.numpy, out.numpy
    a = read()
    write()[...] = a * (a > 0)
    _touch[(1,)](out)
    return out
"""
)

#: Only the largest dev case (8 x 48) was counted: an honest kernel on every other shape,
#: host compute and an empty launch on that one.
LARGEST_CASE_ONLY = """
import torch
import triton
import triton.language as tl


@triton.jit
def _relu(x_ptr, out_ptr, n_cols, sxm, sxn, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sxm + cols * sxn, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, tl.maximum(x, 0.0), mask=mask)


def launch(x):
    m, n = x.shape
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    if m * n == 384:
        match x:
            case object(numpy=x_np):
                a = x_np()
        match out:
            case object(numpy=o_np):
                o_np()[...] = a * (a > 0)
        _relu[(1,)](x, out, 0, x.stride(0), x.stride(1), BLOCK_N=16)
        return out
    _relu[(m,)](x, out, n, x.stride(0), x.stride(1), BLOCK_N=triton.next_power_of_2(n))
    return out
"""

#: The honest reference point: one row-wise Triton kernel.
HONEST_RELU = """
import torch
import triton
import triton.language as tl


@triton.jit
def _relu(x_ptr, out_ptr, n_cols, sxm, sxn, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * sxm + cols * sxn, mask=mask, other=0.0)
    tl.store(out_ptr + row * n_cols + cols, tl.maximum(x, 0.0), mask=mask)


def launch(x):
    m, n = x.shape
    out = torch.empty((m, n), dtype=x.dtype, device=x.device)
    _relu[(m,)](x, out, n, x.stride(0), x.stride(1), BLOCK_N=triton.next_power_of_2(n))
    return out
"""

CHEATS = {"fake_jit": FAKE_JIT, "match_attr": MATCH_ATTR, "counter_add": COUNTER_ADD,
          "host_numpy": HOST_NUMPY, "largest_case_only": LARGEST_CASE_ONLY}  # fmt: skip
