"""The task family of ``kernelarena``: what an agent (``hawkeye``) may read from a task.

A runtime-checkable Protocol declared beside the suite's tasks; agents import it instead of
the suite's modules.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from optiforge.evals.protocol import SeededTask, Task


class KernelSpecView(Protocol):
    """The parts of a task's spec (``specs.TaskSpec``) an agent reads."""

    timing: dict[str, Any]
    """The timing case: ``{"shape": {...}, ...}`` (roofline facts are computed at it)."""
    facts: dict[str, Any]
    """Declared kernel facts (``strategies.KernelFacts`` fields)."""


@runtime_checkable
class KernelTask(Task, SeededTask, Protocol):
    """A Triton kernel to write for one op, scored by the suite's sandboxed harness.

    ``seed_code`` is the templated starting kernel (``kernels.templates.render(op, {})``).
    """

    op: str
    """The op (a ``kernels.templates.TEMPLATES`` key), e.g. ``softmax``."""
    family: str
    """The op's family, e.g. ``t2t``."""
    spec: KernelSpecView
    param_space: dict[str, tuple[Any, ...]]
    """The templated kernel's tunable params -> their values."""

    def for_split(self, split: str) -> KernelTask:
        """The same task bound to another split (agents search on ``dev``)."""
        ...
