"""Triton kernels with plain-torch references (vector ops, softmax, norms, matmul,
fused attention, InQuant KV-cache quantisation) and a registry that agents and
benchmarks use to launch, check and tune them. ``templates`` holds the templated
starting kernels of the KernelArena tasks and ``checks`` the static checks on a
candidate kernel's source (pure Python: neither imports torch nor triton).

Nothing here imports triton at ``import optiforge`` time: import a submodule
(``optiforge.kernels.matmul``) or ``optiforge.kernels.registry`` explicitly. Each
submodule calls :func:`optiforge.kernels._backend.configure_triton_backend` before
importing triton, which sets ``TRITON_INTERPRET=1`` when CUDA is absent (Triton's
CPU interpreter only honours the variable if it is set before triton is imported).
"""

from __future__ import annotations

__all__ = ["attention", "inquant", "matmul", "norms", "registry", "softmax", "vector"]
