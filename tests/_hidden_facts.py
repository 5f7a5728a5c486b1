"""What each benchmark hides from an agent: phrases and numbers no task text may contain.

Shared by the leak tests (``tests/evals/test_task_leaks.py``) and the prompt tests of
the agents that read those tasks. Each list is written from the task's hidden ground
truth, not from the text it is checked against.
"""

from __future__ import annotations

from typing import Any


def hdbo_hidden_phrases(task: Any) -> list[str]:
    """The function's name (and its parts), the CLI name, and a smaller effective dimension."""
    h = task.hidden
    fn, k = str(h["function"]), int(h["effective_dims"])
    out = [fn, *fn.split("_"), task.name, "effective", "embed", "active dim", "inert"]
    if k != task.dim:  # the input dimension is public; a smaller effective one is not
        out += [f"{k} effective", f"{k}-d", f"{k} dim", f"{k}d ", f"first {k}", f"{k} active"]
    if fn == "rover":
        out += ["obstacle", "trajectory", "spline"]
    if fn == "lasso":
        out += ["penalt", "regression"]
    return out
