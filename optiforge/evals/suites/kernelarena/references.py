"""KernelArena references and input generators (copied into every sandbox run).

This file is one of the harness files: it imports only torch, runs inside the sandbox,
and its sha256 is checked before and after each run (a candidate that rewrites it is
rejected). ``make_inputs(op, shape, dtype, seed, device)`` builds the inputs
deterministically from ``seed`` on the CPU generator (same values on every machine),
then moves them; ``REFERENCES[op](*inputs)`` is the torch ground truth, computed in
fp32/fp64 and rounded to the input dtype.

Shape keys: ``M``, ``N`` (rows, cols), ``K`` (matmul inner dim), ``B``, ``H``, ``D``
(attention: `B x H x N x D`), ``layout``: ``contig`` | ``strided`` (the main input is
every other column of an `M x 2N` buffer) | ``transposed`` (the main input is the
transpose of an `N x M` buffer).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

Inputs = tuple[Any, ...]


def _randn(
    shape: tuple[int, ...], g: torch.Generator, scale: float = 1.0, shift: float = 0.0
) -> torch.Tensor:
    return torch.randn(shape, generator=g, dtype=torch.float32) * scale + shift


def _main(
    m: int, n: int, layout: str, g: torch.Generator, scale: float = 1.0, shift: float = 0.0
) -> torch.Tensor:
    """`M x N` main input in the requested memory layout (values independent of layout)."""
    x = _randn((m, n), g, scale, shift)
    if layout == "strided":
        buf = torch.zeros((m, 2 * n))
        buf[:, ::2] = x
        return buf[:, ::2]
    if layout == "transposed":
        return x.t().contiguous().t()
    if layout != "contig":
        raise ValueError(f"unknown layout {layout!r}")
    return x


def make_inputs(op: str, shape: dict[str, Any], dtype: str, seed: int, device: str) -> Inputs:
    """Deterministic inputs of ``op`` for ``shape`` in ``dtype`` on ``device``."""
    g = torch.Generator().manual_seed(seed)
    dt = getattr(torch, dtype)
    lay = str(shape.get("layout", "contig"))
    m, n = int(shape.get("M", 1)), int(shape.get("N", 1))

    def mv(t: torch.Tensor) -> torch.Tensor:
        # .to keeps a non-contiguous layout's strides only for same-device casts; rebuild views.
        if t.is_contiguous():
            return t.to(device=device, dtype=dt)
        if lay == "strided":
            buf = torch.zeros((t.shape[0], 2 * t.shape[1]), dtype=dt, device=device)
            buf[:, ::2] = t.to(device=device, dtype=dt)
            return buf[:, ::2]
        return t.t().contiguous().to(device=device, dtype=dt).t()

    if op in ("add", "mul", "axpby", "silu_mul"):
        return mv(_main(m, n, lay, g)), mv(_randn((m, n), g))
    if op in ("relu", "gelu", "rowsum", "rowmax"):
        return (mv(_main(m, n, lay, g)),)
    if op in ("softmax", "logsoftmax"):
        return (mv(_main(m, n, lay, g, 3.0)),)
    if op == "rmsnorm":
        return mv(_main(m, n, lay, g, 2.0, 0.5)), mv(_randn((n,), g))
    if op == "layernorm":
        return mv(_main(m, n, lay, g, 2.0, 0.5)), mv(_randn((n,), g)), mv(_randn((n,), g))
    if op == "add_layernorm":
        return (mv(_main(m, n, lay, g, 2.0, 0.5)), mv(_randn((m, n), g)), mv(_randn((n,), g)),
                mv(_randn((n,), g)))  # fmt: skip
    if op == "cross_entropy":
        logits = mv(_main(m, n, lay, g, 2.0))
        target = torch.randint(0, n, (m,), generator=g).to(device)
        return logits, target
    if op in ("matmul", "matmul_bias_relu", "gelu_linear"):
        k = int(shape["K"])
        a = mv(_main(m, k, lay, g))
        b = mv(_randn((k, n), g) / math.sqrt(k))
        if op == "matmul_bias_relu":
            return a, b, mv(_randn((n,), g))
        return a, b
    if op == "attention":
        bb, h, d = int(shape["B"]), int(shape["H"]), int(shape["D"])
        q, k_, v = (_randn((bb, h, n, d), g).to(device=device, dtype=dt) for _ in range(3))
        if lay == "transposed":  # `B x N x H x D` storage viewed as `B x H x N x D`
            q = q.transpose(1, 2).contiguous().transpose(1, 2)
        return q, k_, v
    raise ValueError(f"unknown op {op!r}")


def _f(t: torch.Tensor) -> torch.Tensor:
    return t.float()


def _layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(_f(x), (x.shape[-1],), _f(w), _f(b), eps=1e-5).to(x.dtype)


def _attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    s = (q.double() @ k.double().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return (torch.softmax(s, dim=-1) @ v.double()).to(q.dtype)


def _cross_entropy(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(_f(logits), target, reduction="none").to(logits.dtype)


REFERENCES: dict[str, Callable[..., torch.Tensor]] = {
    "add": lambda x, y: (_f(x) + _f(y)).to(x.dtype),
    "mul": lambda x, y: (_f(x) * _f(y)).to(x.dtype),
    "axpby": lambda x, y: (1.5 * _f(x) - 0.75 * _f(y)).to(x.dtype),
    "silu_mul": lambda a, b: (torch.nn.functional.silu(_f(a)) * _f(b)).to(a.dtype),
    "relu": lambda x: torch.relu(_f(x)).to(x.dtype),
    "gelu": lambda x: torch.nn.functional.gelu(_f(x)).to(x.dtype),
    "rowsum": lambda x: _f(x).sum(-1).to(x.dtype),
    "rowmax": lambda x: _f(x).amax(-1).to(x.dtype),
    "softmax": lambda x: torch.softmax(_f(x), dim=-1).to(x.dtype),
    "logsoftmax": lambda x: torch.log_softmax(_f(x), dim=-1).to(x.dtype),
    "rmsnorm": lambda x, w: (
        _f(x) * torch.rsqrt(_f(x).pow(2).mean(-1, keepdim=True) + 1e-6) * _f(w)
    ).to(x.dtype),
    "layernorm": _layernorm,
    "add_layernorm": lambda x, r, w, b: _layernorm((_f(x) + _f(r)).to(x.dtype), w, b),
    "cross_entropy": _cross_entropy,
    "matmul": lambda a, b: (a.double() @ b.double()).to(a.dtype),
    "matmul_bias_relu": lambda a, b, bias: torch.relu(a.double() @ b.double() + bias.double()).to(
        a.dtype
    ),
    "gelu_linear": lambda a, b: torch.nn.functional.gelu(a.double() @ b.double()).to(a.dtype),
    "attention": _attention,
}
