"""Templated Triton starting kernels for every KernelArena task.

A template is Triton candidate source whose first line is ``PARAMS = {...}``: the
tunables of its main kernel. :func:`render` writes a new ``PARAMS`` line, which is all
the offline autotuner changes. triton2triton tasks start from the registry kernels of
:mod:`optiforge.kernels` with deliberately poor parameters; torch2triton tasks start
from naive (unfused, small-block) Triton compositions written here.
"""

from __future__ import annotations

import ast
from typing import Any

from optiforge.errors import InvalidCandidate

_ROW_KERNELS = """
import torch
import triton
import triton.language as tl


@triton.jit
def _row_stats(x_ptr, max_ptr, sum_ptr, n_cols, sxm, sxn, BLOCK_N: tl.constexpr):
    # Pass 1: row max; pass 2: sum of exp(x - max). Per-lane partials, merged at the end.
    row = tl.program_id(0)
    m = tl.full([BLOCK_N], -float("inf"), tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * sxm + cols * sxn, mask=cols < n_cols, other=-float("inf"))
        m = tl.maximum(m, x.to(tl.float32))
    row_max = tl.max(m, axis=0)
    s = tl.zeros([BLOCK_N], tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + row * sxm + cols * sxn, mask=cols < n_cols, other=-float("inf"))
        s += tl.exp(x.to(tl.float32) - row_max)
    tl.store(max_ptr + row, row_max)
    tl.store(sum_ptr + row, tl.sum(s, axis=0))


def _stats(x, BLOCK_N, num_warps):
    m = x.shape[0]
    mx = torch.empty(m, dtype=torch.float32, device=x.device)
    sm = torch.empty(m, dtype=torch.float32, device=x.device)
    _row_stats[(m,)](x, mx, sm, x.shape[1], x.stride(0), x.stride(1), BLOCK_N=BLOCK_N, num_warps=num_warps)
    return mx, sm
"""

_LOGSOFTMAX = (
    _ROW_KERNELS
    + """

@triton.jit
def _logsoftmax_write(x_ptr, max_ptr, sum_ptr, out_ptr, n_cols, sxm, sxn, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    shift = tl.load(max_ptr + row) + tl.log(tl.load(sum_ptr + row))
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * sxm + cols * sxn, mask=mask, other=0.0).to(tl.float32)
        tl.store(out_ptr + row * n_cols + cols, (x - shift).to(out_ptr.dtype.element_ty), mask=mask)


def launch(x):
    mx, sm = _stats(x, PARAMS["BLOCK_N"], PARAMS["num_warps"])
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    _logsoftmax_write[(x.shape[0],)](x, mx, sm, out, x.shape[1], x.stride(0), x.stride(1),
                                     BLOCK_N=PARAMS["BLOCK_N"], num_warps=PARAMS["num_warps"])
    return out
"""
)

_CROSS_ENTROPY = (
    _ROW_KERNELS
    + """

@triton.jit
def _ce_finish(x_ptr, t_ptr, max_ptr, sum_ptr, out_ptr, sxm, sxn):
    row = tl.program_id(0)
    t = tl.load(t_ptr + row)
    xt = tl.load(x_ptr + row * sxm + t * sxn).to(tl.float32)
    loss = tl.load(max_ptr + row) + tl.log(tl.load(sum_ptr + row)) - xt
    tl.store(out_ptr + row, loss.to(out_ptr.dtype.element_ty))


def launch(logits, target):
    mx, sm = _stats(logits, PARAMS["BLOCK_N"], PARAMS["num_warps"])
    out = torch.empty(logits.shape[0], dtype=logits.dtype, device=logits.device)
    _ce_finish[(logits.shape[0],)](logits, target, mx, sm, out, logits.stride(0), logits.stride(1))
    return out
"""
)

_ROW_REDUCE = """
import torch
import triton
import triton.language as tl


@triton.jit
def _row_reduce(x_ptr, out_ptr, n_cols, sxm, sxn, IS_MAX: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    if IS_MAX:
        acc = tl.full([BLOCK_N], -float("inf"), tl.float32)
    else:
        acc = tl.zeros([BLOCK_N], tl.float32)
    for start in range(0, n_cols, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        if IS_MAX:
            x = tl.load(x_ptr + row * sxm + cols * sxn, mask=cols < n_cols, other=-float("inf"))
            acc = tl.maximum(acc, x.to(tl.float32))
        else:
            x = tl.load(x_ptr + row * sxm + cols * sxn, mask=cols < n_cols, other=0.0)
            acc += x.to(tl.float32)
    if IS_MAX:
        r = tl.max(acc, axis=0)
    else:
        r = tl.sum(acc, axis=0)
    tl.store(out_ptr + row, r.to(out_ptr.dtype.element_ty))


def launch(x):
    out = torch.empty(x.shape[0], dtype=x.dtype, device=x.device)
    _row_reduce[(x.shape[0],)](x, out, x.shape[1], x.stride(0), x.stride(1), IS_MAX=__IS_MAX__,
                               BLOCK_N=PARAMS["BLOCK_N"], num_warps=PARAMS["num_warps"])
    return out
"""

_SILU_MUL = """
import torch
import triton
import triton.language as tl


@triton.jit
def _silu_mul(a_ptr, b_ptr, out_ptr, n_cols, sam, san, sbm, sbn, BLOCK_N: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = cols < n_cols
    a = tl.load(a_ptr + row * sam + cols * san, mask=mask).to(tl.float32)
    b = tl.load(b_ptr + row * sbm + cols * sbn, mask=mask).to(tl.float32)
    y = a / (1.0 + tl.exp(-a)) * b
    tl.store(out_ptr + row * n_cols + cols, y.to(out_ptr.dtype.element_ty), mask=mask)


def launch(a, b):
    m, n = a.shape
    out = torch.empty((m, n), dtype=a.dtype, device=a.device)
    grid = (m, triton.cdiv(n, PARAMS["BLOCK_N"]))
    _silu_mul[grid](a, b, out, n, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                    BLOCK_N=PARAMS["BLOCK_N"], num_warps=PARAMS["num_warps"])
    return out
"""

_ROW_SPACE = {"BLOCK_N": (16, 32, 64, 128, 256, 512), "num_warps": (1, 2, 4, 8)}
_EW_SPACE = {"BLOCK_N": (16, 32, 64, 128, 256, 1024), "num_warps": (1, 2, 4, 8)}
_NORM_SPACE = {"BLOCK_N": (16, 32, 64, 128, 256, 512), "num_warps": (1, 2, 4, 8)}
_MM_SPACE = {"BLOCK_M": (16, 32, 64), "BLOCK_N": (16, 32, 64), "BLOCK_K": (16, 32, 64),
             "GROUP_M": (1, 4, 8), "SPLIT_K": (1, 2, 4), "num_warps": (1, 2, 4, 8),
             "num_stages": (1, 2, 3, 4)}  # fmt: skip
_ATT_SPACE = {
    "BLOCK_M": (16, 32, 64),
    "BLOCK_N": (16, 32, 64),
    "num_warps": (1, 2, 4),
    "num_stages": (1, 2, 3),
}
_SOFTMAX_SPACE = {"variant": ("looped", "one_block", "auto"), "BLOCK_N": (16, 32, 64, 128, 256, 512),
                  "num_warps": (1, 2, 4, 8)}  # fmt: skip

_POOR_EW = {"BLOCK_N": 16, "num_warps": 1}
_POOR_MM = {
    "BLOCK_M": 16,
    "BLOCK_N": 16,
    "BLOCK_K": 16,
    "GROUP_M": 1,
    "SPLIT_K": 1,
    "num_warps": 1,
    "num_stages": 1,
}

# name -> (body without the PARAMS line, starting params, search space)
TEMPLATES: dict[str, tuple[str, dict[str, Any], dict[str, tuple[Any, ...]]]] = {
    "add": ("from optiforge.kernels import vector\n\n\ndef launch(x, y):\n    return vector.add(x, y, **PARAMS)\n", _POOR_EW, _EW_SPACE),
    "mul": ("from optiforge.kernels import vector\n\n\ndef launch(x, y):\n    return vector.mul(x, y, **PARAMS)\n", _POOR_EW, _EW_SPACE),
    "axpby": ("from optiforge.kernels import vector\n\n\ndef launch(x, y):\n    return vector.axpby(1.5, x, -0.75, y, **PARAMS)\n", _POOR_EW, _EW_SPACE),
    "relu": ("from optiforge.kernels import vector\n\n\ndef launch(x):\n    return vector.relu(x, **PARAMS)\n", _POOR_EW, _EW_SPACE),
    "gelu": ("from optiforge.kernels import vector\n\n\ndef launch(x):\n    return vector.gelu(x, **PARAMS)\n", _POOR_EW, _EW_SPACE),
    "softmax": ("from optiforge.kernels import softmax\n\n\ndef launch(x):\n    return softmax.softmax(x, **PARAMS)\n",
                {"variant": "looped", "BLOCK_N": 16, "num_warps": 1}, _SOFTMAX_SPACE),
    "rmsnorm": ("from optiforge.kernels import norms\n\n\ndef launch(x, w):\n    return norms.rmsnorm(x, w, **PARAMS)\n", _POOR_EW, _NORM_SPACE),
    "layernorm": ("from optiforge.kernels import norms\n\n\ndef launch(x, w, b):\n    return norms.layernorm(x, w, b, **PARAMS)\n", _POOR_EW, _NORM_SPACE),
    "add_layernorm": ("from optiforge.kernels import norms, vector\n\n\ndef launch(x, r, w, b):\n"
                      "    return norms.layernorm(vector.add(x, r), w, b, **PARAMS)\n", _POOR_EW, _NORM_SPACE),
    "matmul": ("from optiforge.kernels import matmul\n\n\ndef launch(a, b):\n    return matmul.matmul(a, b, **PARAMS)\n", _POOR_MM, _MM_SPACE),
    "matmul_bias_relu": ("from optiforge.kernels import matmul, vector\n\n\ndef launch(a, b, bias):\n"
                         "    c = matmul.matmul(a, b, **PARAMS)\n"
                         "    return vector.relu(vector.add(c, bias.expand(c.shape[0], c.shape[1])))\n", _POOR_MM, _MM_SPACE),
    "gelu_linear": ("from optiforge.kernels import matmul, vector\n\n\ndef launch(a, b):\n"
                    "    return vector.gelu(matmul.matmul(a, b, **PARAMS))\n", _POOR_MM, _MM_SPACE),
    "attention": ("from optiforge.kernels import attention\n\n\ndef launch(q, k, v):\n    return attention.attention(q, k, v, **PARAMS)\n",
                  {"BLOCK_M": 16, "BLOCK_N": 16, "num_warps": 1, "num_stages": 1}, _ATT_SPACE),
    "logsoftmax": (_LOGSOFTMAX, _POOR_EW, _ROW_SPACE),
    "cross_entropy": (_CROSS_ENTROPY, _POOR_EW, _ROW_SPACE),
    "rowsum": (_ROW_REDUCE.replace("__IS_MAX__", "False"), _POOR_EW, _ROW_SPACE),
    "rowmax": (_ROW_REDUCE.replace("__IS_MAX__", "True"), _POOR_EW, _ROW_SPACE),
    "silu_mul": (_SILU_MUL, _POOR_EW, _EW_SPACE),
}  # fmt: skip


def render(op: str, params: dict[str, Any]) -> str:
    """Template of ``op`` with ``params`` as its PARAMS line (unknown keys are an error)."""
    if op not in TEMPLATES:
        raise InvalidCandidate(f"no template for op {op!r}")
    body, start, space = TEMPLATES[op]
    unknown = set(params) - set(space)
    if unknown:
        raise InvalidCandidate(f"{op}: unknown params {sorted(unknown)}; tunable: {sorted(space)}")
    merged = {**start, **params}
    return f"PARAMS = {merged!r}\n" + body.lstrip("\n")


def read_params(code: str) -> dict[str, Any] | None:
    """The literal ``PARAMS = {...}`` of a rendered template (None if absent or not literal)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return None
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "PARAMS" for t in node.targets
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            return value if isinstance(value, dict) else None
    return None
