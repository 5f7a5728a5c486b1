"""Helpers for the AutoREM tests: cached instances, prompt parsing, a simulated model."""

from __future__ import annotations

import functools
import json
from typing import Any

from optiforge.agents.autorem.proposers import counterpart_program
from optiforge.evals.suites.autoro import AutoROTask, make_instance
from optiforge.solvers.robust import parse_problem
from optiforge.solvers.robust.instance import ROInstance

_MARKER = "Problem JSON (instance.json):\n"


@functools.cache
def instance(split: str, index: int, difficulty: int) -> ROInstance:
    """A generated instance (cached: generation solves the reference counterpart)."""
    offset = {"dev": 0, "test": 1000, "heldout": 2000}[split]
    return make_instance(split, index, seed=offset, difficulty=difficulty)


def task(split: str, index: int, difficulty: int) -> AutoROTask:
    return AutoROTask(instance(split, index, difficulty))


def problem_from_prompt(messages: list[dict[str, Any]]) -> Any:
    """The ROProblem a prompt shows (what a model reads from the task description)."""
    user = next(m["content"] for m in messages if m["role"] == "user")
    line = user.split(_MARKER, 1)[1].splitlines()[0]
    return parse_problem(json.loads(line))


def fenced(code: str) -> str:
    return f"Here is the counterpart.\n```python\n{code}```\n"


def sloppy_model(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
    """Simulated LLM: forgets the robust support term unless told (lesson or verdict).

    A stand-in for a real model's typical mistake; it writes the reference program once
    the prompt carries a lesson or the verifier's rejection.
    """
    text = "\n".join(str(m.get("content")) for m in messages)
    told = "Lessons from earlier failures" in text or "The verifier rejected" in text
    return fenced(counterpart_program(problem_from_prompt(messages), robust=told))
