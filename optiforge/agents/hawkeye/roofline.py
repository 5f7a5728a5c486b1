"""Roofline facts for a KernelArena task on a target architecture.

Arithmetic intensity (flops per byte of compulsory HBM traffic) at the task's timing
shape is compared with the ridge point of the target (peak fp16 tensor flops / HBM
bandwidth): below it the kernel is memory-bound, above it compute-bound.
"""

from __future__ import annotations

from typing import Any

from optiforge.agents.hawkeye.strategies import KernelFacts

#: arch -> (peak dense fp16 TFLOP/s, HBM TB/s); interpreter uses sm80 numbers for planning.
PEAKS: dict[str, tuple[float, float]] = {
    "sm80": (312.0, 2.0),
    "sm90": (989.0, 3.35),
    "interpreter": (312.0, 2.0),
}


def detect_arch() -> str:
    """``sm90``/``sm80`` from the CUDA device's capability, ``interpreter`` without CUDA."""
    import torch

    if not torch.cuda.is_available():
        return "interpreter"
    major, _ = torch.cuda.get_device_capability()
    return "sm90" if major >= 9 else "sm80"


def flops_and_bytes(op: str, shape: dict[str, Any], elem_bytes: int = 2) -> tuple[float, float]:
    """Approximate flops and compulsory bytes of ``op`` at ``shape``."""
    m, n = float(shape.get("M", 1)), float(shape.get("N", 1))
    if op in ("matmul", "matmul_bias_relu", "gelu_linear"):
        k = float(shape["K"])
        return 2 * m * n * k, elem_bytes * (m * k + k * n + m * n)
    if op == "attention":
        b, h, d = (float(shape[x]) for x in ("B", "H", "D"))
        return 4 * b * h * n * n * d, elem_bytes * 4 * b * h * n * d
    n_in = {"add": 2, "mul": 2, "axpby": 2, "silu_mul": 2, "add_layernorm": 2}.get(op, 1)
    n_out = 1 if op not in ("rowsum", "rowmax", "cross_entropy") else 0
    flops_per = {"gelu": 8, "softmax": 5, "logsoftmax": 5, "layernorm": 8, "rmsnorm": 5, "cross_entropy": 5,
                 "add_layernorm": 9, "silu_mul": 6}.get(op, 1)  # fmt: skip
    return flops_per * m * n, elem_bytes * m * n * (n_in + n_out)


def task_facts(task: Any, arch: str) -> tuple[KernelFacts, dict[str, float]]:
    """KernelFacts of a KernelArena task plus the roofline numbers behind them."""
    shape = task.spec.timing["shape"]
    flops, nbytes = flops_and_bytes(task.op, shape)
    tflops, tbs = PEAKS.get(arch, PEAKS["sm80"])
    ridge = tflops / tbs  # flops per byte where the roofline bends
    intensity = flops / nbytes
    given = dict(task.spec.facts)
    given["bound"] = "compute" if intensity > ridge else "memory"
    if task.op in ("matmul", "matmul_bias_relu", "gelu_linear"):
        m, n, k = (float(shape[x]) for x in ("M", "N", "K"))
        given.setdefault("small_output", m * n < 128 * 128 * 100)
        given.setdefault("long_k", k > 4 * max(m, n))
    numbers = {"flops": flops, "bytes": nbytes, "intensity": intensity, "ridge": ridge,
               "min_time_us": max(flops / (tflops * 1e12), nbytes / (tbs * 1e12)) * 1e6}  # fmt: skip
    return KernelFacts.model_validate(given), numbers
