"""``ProceduralTask``: what an agent may read from a ``procedural`` task (the task family
SMITH runs on and its GRPO trainer trains on).

The suite's tasks (``procedural.ProceduralTask``, a dataclass) satisfy it; agents import
this Protocol, never the suite's modules. A tool is ``{"name", "description",
"parameters" (JSON Schema), "code"}``; tool code runs only in the sandbox.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from optiforge.evals.protocol import Task

if TYPE_CHECKING:  # pragma: no cover - a type only; the suite's tasks import sandboxes lazily
    from optiforge.sandboxes import Sandbox


@runtime_checkable
class ProceduralTask(Task, Protocol):
    """An episode: build tasks (solved examples per family) and use questions (answers hidden)."""

    @property
    def build_tasks(self) -> list[dict[str, Any]]:
        """``[{"id", "examples": [{"question", "answer"}]}]``, one per family."""
        ...

    @property
    def use_questions(self) -> list[dict[str, str]]:
        """``[{"id", "question"}]`` (answers hidden)."""
        ...

    def validate(
        self, build_id: str, tool: Any, sandbox: Sandbox | None = None, seed: int = 0
    ) -> dict[str, Any]:
        """``tool``'s three reward axes (``schema``, ``code``, ``outcome``) and ``passed`` on
        the build task's validation instances, in the sandbox."""
        ...

    def with_seed(self, seed: int) -> ProceduralTask:
        """The same families with other examples and questions."""
        ...

    def score_calls(
        self,
        calls: dict[str, dict[str, Any]],
        pool: list[dict[str, Any]],
        sandbox: Sandbox | None = None,
    ) -> dict[str, dict[str, Any]]:
        """The use-rollout axes of one call per question id (answers stay hidden)."""
        ...
