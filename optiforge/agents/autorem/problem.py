"""AutoREM's problem: the graph state, the instance as the agent sees it, and any
accepted input as a task.

The agent reads its task through the ``ROTask`` family (``suites/autoro/protocol.py``).
The instance type itself (``ROInstance``) lives in ``optiforge.solvers.robust.instance``;
``load_task`` wraps a user's instance or problem in the suite's ``AutoROTask`` (the
instance plus the suite's verifier: the ``autorem solve`` CLI), so this module is the
agent's only import of a suite (``tests/test_import_direction.py`` allows it).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, TypedDict

from optiforge.errors import InvalidTask
from optiforge.evals.suites.autoro.benchmark import AutoROTask
from optiforge.evals.suites.autoro.protocol import ROTask
from optiforge.solvers.robust.instance import ROInstance, parse_instance
from optiforge.solvers.robust.model import ROProblem

__all__ = [
    "AutoREMState",
    "AutoROTask",
    "load_task",
    "model_view",
    "structure_features",
    "with_timeout",
]


class AutoREMState(TypedDict, total=False):
    """Graph state (serializable only)."""

    messages: list[dict[str, Any]]
    model: dict[str, Any] | None
    """Text-only tasks: the model the agent wrote (ROProblem JSON); None otherwise."""
    model_origin: str
    """``llm`` or ``reference-modeller`` (text-only tasks)."""
    model_retrieved: list[str]
    """Ids of the modelling lessons shown to the modelling step."""
    retrieved: list[dict[str, Any]]
    """``{"id", "entry"}`` for every retrieved entry."""
    attempts: list[dict[str, Any]]
    reflected: list[str]
    """Ids of the experience records written by this trajectory."""
    llm_calls: int
    tokens: int
    done: bool
    stop_reason: str


def with_timeout(task: ROTask, timeout_s: float) -> ROTask:
    """``task`` whose candidate programs run with ``timeout_s`` (a copy when it differs):
    the agent's own attempts use the configured limit; the harness keeps the task's."""
    if task.timeout_s == timeout_s:
        return task
    out = copy.copy(task)
    out.timeout_s = timeout_s
    return out


def structure_features(problem: ROProblem) -> list[str]:
    """Structure tags of a model (what retrieval matches): ``ge_rows``, ``soc``,
    ``uncertain_objective``, ``equality``."""
    feats: list[str] = []
    if any(c.sense == ">=" and c.uncertainty is not None for c in problem.constraints):
        feats.append("ge_rows")
    if problem.soc_constraints:
        feats.append("soc")
    if problem.objective.uncertainty is not None:
        feats.append("uncertain_objective")
    if any(c.sense == "==" for c in problem.constraints):
        feats.append("equality")
    return sorted(feats)


def model_view(task: ROTask, problem: ROProblem) -> ROInstance:
    """The instance as the agent sees it on a text-only task: the statement and ITS model.

    Set types and features come from the agent's model, so retrieval and reflection read
    nothing hidden; ``reference_objective`` is a 0.0 placeholder (unknown to the agent,
    never read from a view).
    """
    return ROInstance(
        id=task.instance.id,
        split=task.instance.split,
        difficulty=task.instance.difficulty,
        description=task.statement,
        problem=problem,
        reference_objective=0.0,
        reference_x=[],
        set_types=problem.set_types(),
        features=structure_features(problem),
    )


def load_task(data: Any) -> AutoROTask:
    """The agent's entry point for an instance: task, ``ROInstance``, problem, JSON or path.

    A JSON object with a ``problem`` key is an ``ROInstance``; any other object is an
    ``ROProblem`` (its reference optimum is solved here so the verifier can compare).
    Bad input (malformed JSON, unknown set type, non-convex nominal model) raises
    ``InvalidTask`` with one line. Free text is not accepted here: it has no ground truth to
    verify against; text-only tasks (the suite's ``app`` splits) carry their hidden JSON.
    """
    from optiforge.solvers.robust import parse_problem, reference_counterpart

    if isinstance(data, AutoROTask):
        return data
    if isinstance(data, ROInstance):
        return AutoROTask(data)
    if isinstance(data, Path):
        try:
            data = data.read_text()
        except OSError as exc:
            raise InvalidTask(f"cannot read instance file {data}: {exc.strerror}") from None
    if isinstance(data, str | bytes):
        head = data.lstrip()[:1]
        if head not in ("{", b"{", "[", b"["):
            raise InvalidTask(
                "AutoREM input must be the instance or problem JSON: free text has no ground "
                "truth to verify against (text-only tasks are the autoro app splits, whose "
                "verifier holds the hidden JSON)"
            )
        try:
            data = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InvalidTask(f"malformed JSON for AutoREM input: {exc}") from None
    if isinstance(data, dict) and "problem" in data:
        return AutoROTask(parse_instance(data))
    problem = data if isinstance(data, ROProblem) else parse_problem(data)
    from optiforge.errors import SolverError

    try:
        ref = reference_counterpart(problem).solve()
    except SolverError as exc:
        raise InvalidTask(f"problem has no robust optimum to verify against: {exc}") from None
    inst = ROInstance(
        id=problem.name or "user-problem",
        split="user",
        difficulty=1,
        description="A robust optimization problem given as JSON.",
        problem=problem,
        reference_objective=ref.objective,
        reference_x=ref.x.tolist(),
        set_types=problem.set_types(),
        features=[],
    )
    return AutoROTask(inst)
