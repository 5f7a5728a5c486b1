"""``evolve``'s search problem: Python programs defining one function, scored by the task."""

from __future__ import annotations

import ast
from collections.abc import Callable
from typing import Any

from optiforge.agents.kit import Evaluated, Proposal, RunContext
from optiforge.agents.kit.evaluator import SandboxedTaskEvaluator
from optiforge.agents.kit.lineage import Lesson
from optiforge.errors import InvalidCandidate
from optiforge.evals.protocol import CodeTask, Score, SeededTask, Task

SEED_CODE = "def f(x):\n    return 0.0 * x\n"
"""The program the search starts from when the task declares no ``seed_code``."""


def seed_code(task: CodeTask) -> str:
    """The program a search on ``task`` starts from: the task's own (a ``SeededTask``), else
    ``SEED_CODE``."""
    return task.seed_code if isinstance(task, SeededTask) else SEED_CODE


class CodeProblem:
    """Search over Python programs defining ``function_name`` for a code-scored task."""

    def __init__(
        self,
        task: Task,
        seed_code: str,
        function_name: str = "f",
        backend: str = "local",
        events_path: str | None = None,
    ):
        self.events_path = events_path
        self.task = task
        self.higher_is_better = task.higher_is_better
        self.seed_code = seed_code
        self.function_name = function_name
        self.backend = backend

    def initial(self, ctx: RunContext) -> list[Proposal]:
        return [Proposal(payload={"code": self.seed_code}, origin="seed")]

    def materialize(self, proposal: Proposal, ctx: RunContext) -> dict[str, Any]:
        code = proposal.payload.get("code")
        if not isinstance(code, str) or not code.strip():
            raise InvalidCandidate("no code in proposal")
        try:
            tree = ast.parse(code)
        except SyntaxError as err:
            raise InvalidCandidate(f"syntax error: {err.msg} (line {err.lineno})") from err
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        if self.function_name not in names:
            raise InvalidCandidate(f"code does not define {self.function_name}()")
        # Normalise formatting so cosmetic variants count as duplicates.
        return {"code": ast.unparse(tree) + "\n"}

    def evaluator(self) -> Callable[[dict[str, Any]], Score]:
        return SandboxedTaskEvaluator(self.task, self.backend, self.events_path)

    def reflect(
        self, batch: list[Evaluated], population: list[Evaluated], ctx: RunContext
    ) -> list[Lesson]:
        # Lessons are only recorded when something new was learned: a failure mode.
        failures = [ev.error for ev in batch if ev.error and not ev.error.startswith("invalid")]
        # the lesson may reach other runs' prompts: no task name (on funcfit it names the curve).
        # The error is the candidate's own output: stored as such, shown only quoted.
        return [
            Lesson(text=f"a candidate failed: {err[:200]}", provenance="candidate")
            for err in failures[:2]
        ]
