"""Shared input factory and reference for the matmul-shaped examples."""

from __future__ import annotations

import torch

from optiforge.kernels._backend import configure_triton_backend

configure_triton_backend()

#: `M x K` @ `K x N` with non-multiple-of-tile sizes so masks are exercised.
M, N, K = 40, 36, 72


def device() -> str:
    """CUDA when present, else CPU (the interpreter)."""
    return "cuda" if torch.cuda.is_available() else "cpu"


def matmul_inputs(
    seed: int, dtype: torch.dtype = torch.float32
) -> tuple[torch.Tensor, torch.Tensor]:
    """`M x K` and `K x N` standard-normal inputs."""
    g = torch.Generator().manual_seed(seed)
    a = torch.randn((M, K), generator=g).to(device=device(), dtype=dtype)
    b = torch.randn((K, N), generator=g).to(device=device(), dtype=dtype)
    return a, b


def matmul_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """fp64 matmul rounded to the input dtype."""
    return (a.double() @ b.double()).to(a.dtype)


MM_TOL = {"float32": (1e-4, 1e-4), "float16": (2e-2, 1e-2), "bfloat16": (1e-1, 2e-2)}
