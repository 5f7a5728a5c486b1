"""The task family of ``hdbo``: what an agent (``kernel-discovery``) may read from a task.

A runtime-checkable Protocol declared beside the suite's tasks; agents import it instead of
the suite's modules (tensors are typed ``Any`` here: this module imports no torch).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from optiforge.evals.protocol import Score, Task


class BOObjective(Protocol):
    """One seed's objective on the unit cube (``solvers.bo.loop.Problem``): noisy calls."""

    dim: int
    """Input dimension ``D``."""

    @property
    def bounds(self) -> Any:
        """`2 x D` box (a float64 tensor)."""
        ...

    def __call__(self, X: Any) -> Any:
        """`n x D` -> `n` noisy values to minimise."""
        ...


@runtime_checkable
class HDBOTask(Task, Protocol):
    """A high-dimensional BO problem whose GP kernels the task can score."""

    n_init: int
    """Initial design size of one run."""
    max_hyperparameters: int
    """The most hyperparameters a kernel candidate may have."""
    agent_name: str
    """Opaque name for prompts and lessons (``name`` is the CLI id and names the function)."""

    @property
    def dim(self) -> int:
        """Input dimension ``D`` (the one task feature an agent may see)."""
        ...

    def problem(self, seed: int = 0) -> BOObjective:
        """The objective; ``seed`` drives observation noise only."""
        ...

    def score_kernel(
        self,
        candidate: Any,
        X: Any,
        y: Any,
        sandbox: Any | None = None,
        *,
        seed: int = 0,
        n_restarts: int = 2,
        n_fingerprint: int = 16,
        heldout: list[list[int]] | None = None,
        tracer: Any | None = None,
    ) -> Score:
        """A kernel's (library ``KernelSpec`` or ``{"source": str}``) selection score on
        ``X`` (`n x D` unit cube), ``y`` (`n` standardised): LOO-CRPS, or the mean held-out
        CRPS over ``heldout`` index sets; kernel source runs only in a sandbox."""
        ...
