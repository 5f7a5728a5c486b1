"""``NCOTask``: what an agent may read from an ``nco`` task (the task family EPB runs on).

The suite's tasks (``nco.NCOTask``, a dataclass) satisfy it; agents import this Protocol,
never the suite's modules. A portfolio candidate is ``{"programs": {name: source},
"router": K x F weights, "beta": {name: sharpness}}``; program code runs only in the
sandbox.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from optiforge.evals.protocol import Task

if TYPE_CHECKING:  # pragma: no cover - a type only; the suite's tasks import sandboxes lazily
    from optiforge.sandboxes import Sandbox


@runtime_checkable
class NCOTask(Task, Protocol):
    """A TSP instance set whose black-box teacher an agent may query on its own instances."""

    def teacher_trajectories(self, count: int, seed: int) -> list[dict[str, Any]]:
        """The teacher on ``count`` fresh training instances: per instance ``coords``
        (n x 2), its greedy ``tour`` from city 0 and its next-city ``probs`` per step."""
        ...

    def practice_instances(self, count: int, seed: int) -> np.ndarray:
        """Fresh instances of the teacher's training distribution (``count x n x 2``),
        never the test instances."""
        ...

    def program_scores(
        self,
        programs: dict[str, str],
        trajectories: list[dict[str, Any]],
        sandbox: Sandbox | None = None,
    ) -> list[dict[str, Any]]:
        """Per trajectory, in the sandbox: the router ``features`` along its tour and every
        program's standardized scores ``z`` (visited cities None); ``{"error"}`` on failure."""
        ...

    def construct(
        self, portfolio: dict[str, Any], instances: list[np.ndarray], sandbox: Sandbox | None = None
    ) -> list[list[int] | None]:
        """Greedy tours (from city 0) ``portfolio`` builds on ``instances`` in the sandbox;
        None where it failed."""
        ...
