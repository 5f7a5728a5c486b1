"""The KernelArena task table: 26 tasks (10 triton2triton, 16 torch2triton).

Every task has dev cases (visible; small enough for the CPU interpreter) and held-out
cases (unseen sizes, non-power-of-two dims, strided and transposed layouts, fp16),
``SEEDS`` seeds per case, dtype-aware tolerances plus a relative-norm bound, a GPU
timing shape, and roofline facts for strategy choice.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

SEEDS: tuple[int, ...] = (0, 1)

EW_TOL = {"float32": (1e-5, 1e-5), "float16": (2e-3, 2e-3), "bfloat16": (2e-2, 2e-2)}
RED_TOL = {"float32": (1e-4, 1e-4), "float16": (4e-3, 4e-3), "bfloat16": (3e-2, 3e-2)}
MM_TOL = {"float32": (2e-4, 2e-4), "float16": (2e-2, 1e-2), "bfloat16": (1e-1, 2e-2)}
REL_NORM = {"float32": 1e-4, "float16": 5e-3, "bfloat16": 3e-2}


class Case(BaseModel):
    """One shape x dtype, run for every seed."""

    model_config = ConfigDict(extra="forbid")

    shape: dict[str, Any]
    dtype: str = "float32"
    seeds: tuple[int, ...] = SEEDS
    cost: bool = False
    """A counting case of the CPU cost model: a shape that is a multiple of every tile in the
    task's parameter space, so counted re-reads carry to the timing shape (see
    ``optiforge.kernels.traffic``). When a split has counting cases, they alone decide
    ``cost_speedup``; every case is still checked for correctness."""


class TaskSpec(BaseModel):
    """A KernelArena task before it is bound to a split."""

    model_config = ConfigDict(extra="forbid")

    name: str
    family: str
    """``triton2triton`` (start: a templated Triton kernel, often a library call with slow
    PARAMS) or ``torch2triton`` (start: a torch reference)."""
    op: str
    """Key into ``references.REFERENCES`` and ``optiforge.kernels.templates.TEMPLATES``."""
    description: str
    dev: list[Case]
    heldout: list[Case]
    timing: dict[str, Any]
    """GPU timing shape and dtype (correctness of the timed outputs is checked too)."""
    tolerances: dict[str, tuple[float, float]]
    rel_norm: dict[str, float] = Field(default_factory=lambda: dict(REL_NORM))
    facts: dict[str, Any]
    """Roofline/profile facts (``KernelFacts`` fields)."""


def _c(dtype: str = "float32", cost: bool = False, **shape: Any) -> Case:
    return Case(shape=shape, dtype=dtype, cost=cost)


_MN_DEV = [_c(M=8, N=48), _c("float16", M=5, N=40)]
_MN_HELD = [
    _c(M=7, N=131),
    _c(M=6, N=50, layout="strided"),
    _c("float16", M=9, N=67, layout="transposed"),
]
# the last is the cost model's counting case: 64 is a multiple of every BLOCK_M/N/K of the
# matmul template's space (16, 32, 64), so each tile choice shows its true re-read count
_MM_DEV = [
    _c(M=32, N=24, K=40),
    _c("float16", M=16, N=32, K=32),
    _c("float16", True, M=64, N=64, K=64),
]
_MM_HELD = [
    _c(M=37, N=29, K=53),
    _c(M=24, N=20, K=70, layout="transposed"),
    _c("float16", M=33, N=17, K=45),
]
_ATT_DEV = [_c(B=1, H=2, N=16, D=16), _c("float16", B=1, H=1, N=32, D=16)]
_ATT_HELD = [_c(B=1, H=2, N=27, D=16), _c(B=2, H=1, N=19, D=32, layout="transposed")]
_T_MN = {"shape": {"M": 4096, "N": 4096}, "dtype": "float16"}
_T_MM = {"shape": {"M": 4096, "N": 4096, "K": 4096}, "dtype": "float16"}
_T_ATT = {"shape": {"B": 4, "H": 16, "N": 2048, "D": 64}, "dtype": "float16"}
_MEM = {"bound": "memory"}
_RED = {"bound": "memory", "reduction": True}
_MM = {"bound": "compute", "matmul": True, "low_precision": True}


def _spec(name: str, family: str, op: str, desc: str, kind: str, tol: dict[str, tuple[float, float]],
          facts: dict[str, Any]) -> TaskSpec:  # fmt: skip
    dev, held, timing = {"mn": (_MN_DEV, _MN_HELD, _T_MN), "mm": (_MM_DEV, _MM_HELD, _T_MM),
                         "att": (_ATT_DEV, _ATT_HELD, _T_ATT)}[kind]  # fmt: skip
    start = ("Start from the starting kernel shown (correct, with slow parameters; for most ops it calls a "
             "Triton kernel of optiforge.kernels through its PARAMS line, whose source is not shown) and make it "
             "faster: tune its PARAMS, or write your own Triton kernels."
             if family == "triton2triton" else "Implement the torch reference in Triton.")  # fmt: skip
    return TaskSpec(name=name, family=family, op=op, description=f"{desc}. {start}", dev=dev, heldout=held,
                    timing=timing, tolerances=tol, facts=facts)  # fmt: skip


SPECS: list[TaskSpec] = [
    _spec("t2t_add", "triton2triton", "add", "out = x + y for M x N tensors", "mn", EW_TOL, _MEM),
    _spec("t2t_mul", "triton2triton", "mul", "out = x * y for M x N tensors", "mn", EW_TOL, _MEM),
    _spec("t2t_axpby", "triton2triton", "axpby", "out = 1.5 x - 0.75 y for M x N tensors", "mn", EW_TOL, _MEM),
    _spec("t2t_relu", "triton2triton", "relu", "out = relu(x)", "mn", EW_TOL, _MEM),
    _spec("t2t_gelu", "triton2triton", "gelu", "out = exact (erf) GELU of x", "mn", RED_TOL, _MEM),
    _spec("t2t_softmax", "triton2triton", "softmax", "row-wise softmax over the last dim of M x N x", "mn", RED_TOL, _RED),
    _spec("t2t_rmsnorm", "triton2triton", "rmsnorm", "RMSNorm of M x N x with weight w (eps 1e-6)", "mn", RED_TOL, _RED),
    _spec("t2t_layernorm", "triton2triton", "layernorm", "LayerNorm of M x N x with weight w, bias b (eps 1e-5)", "mn", RED_TOL, _RED),
    _spec("t2t_matmul", "triton2triton", "matmul", "C = A @ B for M x K and K x N", "mm", MM_TOL, _MM),
    _spec("t2t_attention", "triton2triton", "attention", "softmax(q k^T / sqrt(D)) v for B x H x N x D", "att",
          {"float32": (1e-4, 1e-4), "float16": (5e-3, 5e-3), "bfloat16": (3e-2, 3e-2)}, _MM),
    _spec("torch_softmax", "torch2triton", "softmax", "torch.softmax(x, dim=-1) for M x N x", "mn", RED_TOL, _RED),
    _spec("torch_logsoftmax", "torch2triton", "logsoftmax", "torch.log_softmax(x, dim=-1) for M x N x", "mn", RED_TOL, _RED),
    _spec("torch_layernorm", "torch2triton", "layernorm", "F.layer_norm(x, (N,), w, b, eps=1e-5)", "mn", RED_TOL, _RED),
    _spec("torch_rmsnorm", "torch2triton", "rmsnorm", "x * rsqrt(mean(x^2, -1) + 1e-6) * w", "mn", RED_TOL, _RED),
    _spec("torch_gelu", "torch2triton", "gelu", "F.gelu(x) (exact erf form)", "mn", RED_TOL, _MEM),
    _spec("torch_relu", "torch2triton", "relu", "torch.relu(x)", "mn", EW_TOL, _MEM),
    _spec("torch_silu_mul", "torch2triton", "silu_mul", "F.silu(a) * b (SwiGLU gate)", "mn", RED_TOL,
          {"bound": "memory", "elementwise_chain": 2}),
    _spec("torch_axpby", "torch2triton", "axpby", "1.5 * x - 0.75 * y", "mn", EW_TOL, {"bound": "memory", "elementwise_chain": 2}),
    _spec("torch_rowsum", "torch2triton", "rowsum", "x.sum(-1) for M x N x (output M)", "mn", RED_TOL, _RED),
    _spec("torch_rowmax", "torch2triton", "rowmax", "x.amax(-1) for M x N x (output M)", "mn", EW_TOL, _RED),
    _spec("torch_cross_entropy", "torch2triton", "cross_entropy",
          "F.cross_entropy(logits, target, reduction='none') for M x N logits, M int64 targets", "mn", RED_TOL, _RED),
    _spec("torch_add_layernorm", "torch2triton", "add_layernorm", "F.layer_norm(x + r, (N,), w, b, eps=1e-5)",
          "mn", RED_TOL, {"bound": "memory", "reduction": True, "elementwise_chain": 2}),
    _spec("torch_matmul", "torch2triton", "matmul", "a @ b for M x K and K x N", "mm", MM_TOL, _MM),
    _spec("torch_matmul_bias_relu", "torch2triton", "matmul_bias_relu", "torch.relu(a @ b + bias)", "mm", MM_TOL,
          {**_MM, "elementwise_chain": 3}),
    _spec("torch_gelu_linear", "torch2triton", "gelu_linear", "F.gelu(a @ b)", "mm", MM_TOL, {**_MM, "elementwise_chain": 2}),
    _spec("torch_attention", "torch2triton", "attention", "F.scaled_dot_product_attention(q, k, v) (non-causal)", "att",
          {"float32": (1e-4, 1e-4), "float16": (5e-3, 5e-3), "bfloat16": (3e-2, 3e-2)}, _MM),
]  # fmt: skip
