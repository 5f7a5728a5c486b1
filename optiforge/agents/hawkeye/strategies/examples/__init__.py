"""Minimal expert example kernels, one module per (strategy, architecture) variant.

Every module defines the same four names so one generic test runs them all:

- ``make_inputs(seed: int) -> tuple[torch.Tensor, ...]`` (small shapes, CPU or CUDA);
- ``launch(*inputs, **params) -> torch.Tensor`` (the Triton kernel under study);
- ``reference(*inputs) -> torch.Tensor`` (plain torch);
- ``TOL: dict[str, tuple[float, float]]`` (dtype name -> atol, rtol).

Importing a module imports triton (after ``configure_triton_backend``).
"""

from optiforge.kernels._backend import configure_triton_backend

# Runs before any example submodule imports triton (the package is imported first). It can
# only help if triton is not imported yet: a process that imported triton without
# TRITON_INTERPRET (transformers may do so) cannot launch these examples on CPU.
configure_triton_backend()
