"""Registry of the Triton kernels: launcher, reference, input factory, shapes, tunables.

Each :class:`KernelInfo` gives an agent (Hawkeye) or a benchmark (KernelArena) what it
needs to launch, check and tune a kernel without knowing it:

* ``make_inputs(shape, dtype, seed, device)`` -> ``(args, kwargs)`` feeding both
  ``launcher(*args, **kwargs, **meta)`` and ``reference(*args, **kwargs)``;
* ``dev_shapes``: small shapes that run under the CPU interpreter; ``bench_shapes``:
  realistic GPU shapes (only meaningful with CUDA);
* ``tunables``: meta-parameter name -> allowed values (the autotuner's search space);
* ``tolerances``: dtype name -> (atol, rtol) for :func:`check_output`.

Importing this module imports triton (through the kernel modules).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field

from optiforge.errors import InvalidCandidate
from optiforge.kernels import attention, inquant, matmul, norms, softmax, vector

Inputs = tuple[tuple[Any, ...], dict[str, Any]]
MakeInputs = Callable[[Mapping[str, int], torch.dtype, int, str], Inputs]


class KernelInfo(BaseModel):
    """Everything needed to launch, verify and tune one kernel."""

    model_config = ConfigDict(extra="forbid", frozen=True, arbitrary_types_allowed=True)

    name: str
    description: str
    launcher: Callable[..., torch.Tensor]
    """Triton launcher: ``launcher(*args, **kwargs, **meta)``."""
    reference: Callable[..., torch.Tensor]
    """Plain-torch implementation with the launcher's positional/keyword inputs."""
    make_inputs: MakeInputs
    """``(shape, dtype, seed, device) -> (args, kwargs)``."""
    shape_keys: tuple[str, ...]
    """Names of the dims a shape mapping must give (e.g. ``("M", "N", "K")``)."""
    dev_shapes: tuple[dict[str, int], ...]
    """Small shapes for interpreter runs and correctness checks."""
    bench_shapes: tuple[dict[str, int], ...] = ()
    """Realistic shapes for GPU timing."""
    tunables: dict[str, tuple[Any, ...]] = Field(default_factory=dict)
    """Meta-parameter -> allowed values; the first value is the default."""
    dtypes: tuple[str, ...] = ("float32", "float16")
    """Input dtypes the kernel accepts (bf16 additionally on CUDA only)."""
    tolerances: dict[str, tuple[float, float]]
    """dtype name -> (atol, rtol)."""


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _randn(
    shape: tuple[int, ...], dtype: torch.dtype, g: torch.Generator, device: str
) -> torch.Tensor:
    return torch.randn(shape, generator=g).to(device=device, dtype=dtype)


def _need(shape: Mapping[str, int], keys: tuple[str, ...]) -> list[int]:
    missing = [k for k in keys if k not in shape]
    if missing:
        raise ValueError(f"shape is missing {missing}; needs {list(keys)}")
    vals = [int(shape[k]) for k in keys]
    if any(v < 1 for v in vals):
        raise ValueError(f"shape dims must be >= 1, got {dict(shape)}")
    return vals


def _binary_inputs(shape: Mapping[str, int], dtype: torch.dtype, seed: int, device: str) -> Inputs:
    m, n = _need(shape, ("M", "N"))
    g = _gen(seed)
    return (_randn((m, n), dtype, g, device), _randn((m, n), dtype, g, device)), {}


def _axpby_inputs(shape: Mapping[str, int], dtype: torch.dtype, seed: int, device: str) -> Inputs:
    (x, y), _ = _binary_inputs(shape, dtype, seed, device)
    return (1.5, x, -0.75, y), {}


def _unary_inputs(shape: Mapping[str, int], dtype: torch.dtype, seed: int, device: str) -> Inputs:
    m, n = _need(shape, ("M", "N"))
    return (_randn((m, n), dtype, _gen(seed), device),), {}


def _softmax_inputs(shape: Mapping[str, int], dtype: torch.dtype, seed: int, device: str) -> Inputs:
    m, n = _need(shape, ("M", "N"))
    return ((3.0 * _randn((m, n), dtype, _gen(seed), device)),), {}


def _norm_inputs(
    with_bias: bool,
) -> MakeInputs:
    def make(shape: Mapping[str, int], dtype: torch.dtype, seed: int, device: str) -> Inputs:
        m, n = _need(shape, ("M", "N"))
        g = _gen(seed)
        x = _randn((m, n), dtype, g, device) * 2 + 0.5
        w = _randn((n,), dtype, g, device)
        if with_bias:
            return (x, w, _randn((n,), dtype, g, device)), {}
        return (x, w), {}

    return make


def _matmul_inputs(shape: Mapping[str, int], dtype: torch.dtype, seed: int, device: str) -> Inputs:
    m, n, k = _need(shape, ("M", "N", "K"))
    g = _gen(seed)
    return (_randn((m, k), dtype, g, device), _randn((k, n), dtype, g, device)), {}


def _attention_inputs(
    shape: Mapping[str, int], dtype: torch.dtype, seed: int, device: str
) -> Inputs:
    b, h, n, d = _need(shape, ("B", "H", "N", "D"))
    g = _gen(seed)
    q, k, v = (_randn((b, h, n, d), dtype, g, device) for _ in range(3))
    return (q, k, v), {"causal": bool(shape.get("causal", 0))}


def _inquant_inputs(shape: Mapping[str, int], dtype: torch.dtype, seed: int, device: str) -> Inputs:
    h, t, d = _need(shape, ("H", "T", "D"))
    k, _, _ = inquant_eval_kv(h, t, d, seed)
    x = k.to(device=device, dtype=dtype)
    desc = inquant.build_descriptor(x, min(4, d // 2), n_sample=min(64, t), seed=seed)
    return (x, desc), {"group_size": int(shape.get("G", min(32, d)))}


def inquant_eval_kv(
    h: int, t: int, d: int, seed: int
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Synthetic outlier-heavy K/V (see :mod:`optiforge.kernels.inquant_eval`)."""
    from optiforge.kernels.inquant_eval import make_synthetic_kv

    return make_synthetic_kv(h, t, d, min(4, d // 2), seed)


def inquant_roundtrip(
    x: torch.Tensor,
    descriptor: inquant.InQuantDescriptor,
    *,
    group_size: int = 32,
    num_warps: int = 1,
) -> torch.Tensor:
    """Triton quantise -> dequantise of `H x T x D` ``x`` (output in x's dtype)."""
    cache = inquant.quantize(x, descriptor, group_size=group_size, num_warps=num_warps)
    return inquant.dequantize(cache, dtype=x.dtype, num_warps=num_warps)


def reference_inquant_roundtrip(
    x: torch.Tensor, descriptor: inquant.InQuantDescriptor, *, group_size: int = 32
) -> torch.Tensor:
    """Plain-torch quantise -> dequantise, same format as :func:`inquant_roundtrip`."""
    cache = inquant.reference_quantize(x, descriptor, group_size=group_size)
    return inquant.reference_dequantize(cache, dtype=x.dtype)


_EW_TOL = {"float32": (1e-6, 1e-5), "float16": (1e-3, 1e-3), "bfloat16": (1e-2, 1e-2)}
_RED_TOL = {"float32": (1e-5, 1e-4), "float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}
_MM_TOL = {"float32": (1e-4, 1e-4), "float16": (2e-2, 1e-2), "bfloat16": (1e-1, 2e-2)}
_EW_TUNE = {"BLOCK_N": (1024, 128, 256, 512, 2048, 4096), "num_warps": (4, 1, 2, 8)}
_EW_DEV = ({"M": 7, "N": 100}, {"M": 1, "N": 1000})
_EW_BENCH = ({"M": 4096, "N": 4096},)

KERNELS: dict[str, KernelInfo] = {
    info.name: info
    for info in (
        KernelInfo(name="add", description="elementwise x + y", launcher=vector.add,
                   reference=vector.reference_add, make_inputs=_binary_inputs,
                   shape_keys=("M", "N"), dev_shapes=_EW_DEV, bench_shapes=_EW_BENCH,
                   tunables=_EW_TUNE, tolerances=_EW_TOL),
        KernelInfo(name="mul", description="elementwise x * y", launcher=vector.mul,
                   reference=vector.reference_mul, make_inputs=_binary_inputs,
                   shape_keys=("M", "N"), dev_shapes=_EW_DEV, bench_shapes=_EW_BENCH,
                   tunables=_EW_TUNE, tolerances=_EW_TOL),
        KernelInfo(name="axpby", description="fused a*x + b*y", launcher=vector.axpby,
                   reference=vector.reference_axpby, make_inputs=_axpby_inputs,
                   shape_keys=("M", "N"), dev_shapes=_EW_DEV, bench_shapes=_EW_BENCH,
                   tunables=_EW_TUNE, tolerances=_EW_TOL),
        KernelInfo(name="relu", description="elementwise max(x, 0)", launcher=vector.relu,
                   reference=vector.reference_relu, make_inputs=_unary_inputs,
                   shape_keys=("M", "N"), dev_shapes=_EW_DEV, bench_shapes=_EW_BENCH,
                   tunables=_EW_TUNE, tolerances=_EW_TOL),
        KernelInfo(name="gelu", description="elementwise exact GELU", launcher=vector.gelu,
                   reference=vector.reference_gelu, make_inputs=_unary_inputs,
                   shape_keys=("M", "N"), dev_shapes=_EW_DEV, bench_shapes=_EW_BENCH,
                   tunables=_EW_TUNE, tolerances=_RED_TOL),
        KernelInfo(name="softmax", description="row-wise softmax of M x N",
                   launcher=softmax.softmax, reference=softmax.reference_softmax,
                   make_inputs=_softmax_inputs, shape_keys=("M", "N"),
                   dev_shapes=({"M": 5, "N": 77}, {"M": 3, "N": 300}),
                   bench_shapes=({"M": 4096, "N": 4096}, {"M": 1024, "N": 32768}),
                   tunables={"variant": ("auto", "one_block", "looped"),
                             "BLOCK_N": (None, 256, 512, 1024, 2048, 4096),
                             "num_warps": (4, 1, 2, 8, 16)},
                   tolerances=_RED_TOL),
        KernelInfo(name="rmsnorm", description="RMSNorm forward with weight",
                   launcher=norms.rmsnorm, reference=norms.reference_rmsnorm,
                   make_inputs=_norm_inputs(False), shape_keys=("M", "N"),
                   dev_shapes=({"M": 6, "N": 96}, {"M": 3, "N": 130}),
                   bench_shapes=({"M": 4096, "N": 4096},),
                   tunables={"BLOCK_N": (None, 256, 512, 1024, 2048, 4096),
                             "num_warps": (4, 1, 2, 8, 16)},
                   tolerances=_RED_TOL),
        KernelInfo(name="layernorm", description="LayerNorm forward with weight and bias",
                   launcher=norms.layernorm, reference=norms.reference_layernorm,
                   make_inputs=_norm_inputs(True), shape_keys=("M", "N"),
                   dev_shapes=({"M": 6, "N": 96}, {"M": 3, "N": 130}),
                   bench_shapes=({"M": 4096, "N": 4096},),
                   tunables={"BLOCK_N": (None, 256, 512, 1024, 2048, 4096),
                             "num_warps": (4, 1, 2, 8, 16)},
                   tolerances=_RED_TOL),
        KernelInfo(name="matmul", description="tiled matmul M x K @ K x N, split-K",
                   launcher=matmul.matmul, reference=matmul.reference_matmul,
                   make_inputs=_matmul_inputs, shape_keys=("M", "N", "K"),
                   dev_shapes=({"M": 64, "N": 48, "K": 40}, {"M": 33, "N": 17, "K": 70}),
                   bench_shapes=({"M": 4096, "N": 4096, "K": 4096},
                                 {"M": 256, "N": 256, "K": 16384}),
                   tunables={"BLOCK_M": (64, 16, 32, 128, 256), "BLOCK_N": (64, 16, 32, 128, 256),
                             "BLOCK_K": (32, 16, 64, 128), "GROUP_M": (8, 1, 4, 16),
                             "SPLIT_K": (1, 2, 4, 8, 16), "num_warps": (4, 2, 8),
                             "num_stages": (3, 1, 2, 4, 5)},
                   tolerances=_MM_TOL),
        KernelInfo(name="attention", description="fused attention forward (FA2 online softmax)",
                   launcher=attention.attention, reference=attention.reference_attention,
                   make_inputs=_attention_inputs, shape_keys=("B", "H", "N", "D"),
                   dev_shapes=({"B": 1, "H": 2, "N": 32, "D": 16},
                               {"B": 2, "H": 1, "N": 45, "D": 32, "causal": 1}),
                   bench_shapes=({"B": 4, "H": 32, "N": 2048, "D": 64},
                                 {"B": 4, "H": 32, "N": 4096, "D": 128, "causal": 1}),
                   tunables={"BLOCK_M": (64, 16, 32, 128), "BLOCK_N": (64, 16, 32, 128),
                             "num_warps": (4, 2, 8), "num_stages": (2, 1, 3, 4)},
                   tolerances={"float32": (1e-4, 1e-4), "float16": (5e-3, 5e-3),
                               "bfloat16": (3e-2, 3e-2)}),
        KernelInfo(name="inquant", description="InQuant KV cache quantise -> dequantise",
                   launcher=inquant_roundtrip, reference=reference_inquant_roundtrip,
                   make_inputs=_inquant_inputs, shape_keys=("H", "T", "D"),
                   dev_shapes=({"H": 2, "T": 12, "D": 64, "G": 32},),
                   bench_shapes=({"H": 64, "T": 4096, "D": 128, "G": 32},),
                   tunables={"num_warps": (1, 2, 4, 8)},
                   # bit-identical on CPU; on GPU dequantised values may differ by an ulp.
                   tolerances={"float32": (1e-5, 1e-5), "float16": (1e-3, 1e-3)}),
    )
}  # fmt: skip


def get_kernel(name: str) -> KernelInfo:
    """Registry lookup with a one-line error naming the known kernels."""
    try:
        return KERNELS[name]
    except KeyError:
        raise ValueError(f"unknown kernel {name!r}; known: {', '.join(sorted(KERNELS))}") from None


def check_output(info: KernelInfo, out: torch.Tensor, ref: torch.Tensor) -> None:
    """Raise InvalidCandidate unless ``out`` matches ``ref`` within ``info``'s tolerances.

    Also rejects constant (e.g. all-zero) or non-finite outputs when the reference is
    not constant: such outputs passed several KernelBench tasks at loose tolerances.
    """
    if not isinstance(out, torch.Tensor):
        raise InvalidCandidate(f"{info.name}: output is {type(out).__name__}, not a tensor")
    if out.shape != ref.shape:
        raise InvalidCandidate(
            f"{info.name}: output shape {tuple(out.shape)} != {tuple(ref.shape)}"
        )
    if out.dtype != ref.dtype:
        raise InvalidCandidate(f"{info.name}: output dtype {out.dtype} != {ref.dtype}")
    key = str(ref.dtype).removeprefix("torch.")
    if key not in info.tolerances:
        raise InvalidCandidate(f"{info.name}: no tolerance for dtype {key}")
    atol, rtol = info.tolerances[key]
    o, r = out.float(), ref.float()
    if not torch.isfinite(o).all() and torch.isfinite(r).all():
        raise InvalidCandidate(f"{info.name}: output has non-finite values")
    if r.numel() > 1 and r.std() > 0 and o.std() == 0:
        raise InvalidCandidate(f"{info.name}: output is constant but the reference is not")
    err = (o - r).abs()
    bad = err > atol + rtol * r.abs()
    if bad.any():
        raise InvalidCandidate(
            f"{info.name}: {int(bad.sum())}/{bad.numel()} elements off, max abs err "
            f"{float(err.max()):.3g} (atol {atol}, rtol {rtol})"
        )


def run_check(
    name: str,
    shape: Mapping[str, int],
    dtype: torch.dtype = torch.float32,
    *,
    seed: int = 0,
    device: str | None = None,
    **meta: Any,
) -> torch.Tensor:
    """Launch kernel ``name`` on fresh inputs with ``meta``, verify against its reference.

    Returns the kernel's output; raises InvalidCandidate on a mismatch.
    """
    info = get_kernel(name)
    dev = device or ("cuda" if torch.cuda.is_available() else "cpu")
    unknown = set(meta) - set(info.tunables)
    if unknown:
        raise ValueError(
            f"{name}: unknown meta-parameters {sorted(unknown)}; tunable: {sorted(info.tunables)}"
        )
    args, kwargs = info.make_inputs(shape, dtype, seed, dev)
    ref = info.reference(*args, **kwargs)
    try:
        out = info.launcher(*args, **kwargs, **meta)
    except ValueError as exc:  # a bad meta-parameter combination is the candidate's fault
        raise InvalidCandidate(f"{name}: {exc}") from exc
    check_output(info, out, ref)
    return out
