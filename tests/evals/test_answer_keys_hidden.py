"""Cheats that read the answer from the installed package: the sandbox must not let them.

The issue's findings: funcfit candidates imported the target table from the package
(MSE 0.0 on 3 of 4 tasks), AutoRO candidates called the project's own
``reference_counterpart`` and passed. Both run here in the default sandbox, as an agent's
candidate would. In mode ``none`` (no isolating sandbox on the machine) the project is
readable and the cheats work: that mode reports ``minimal_read_view`` unmet, and these
tests say so instead of passing.
"""

from __future__ import annotations

import sys

import pytest

from optiforge.sandboxes import LocalSandbox

SB = LocalSandbox()
NEEDS_VIEW = pytest.mark.skipif(
    "minimal_read_view" in SB.protections().unmet(),
    reason=f"sandbox mode {SB.isolation} shows the whole file system (reported unmet)",
)

FUNCFIT_CHEAT = """
import numpy as np
from optiforge.evals.suites.funcfit.benchmark import _TARGETS
import inspect, sys
target = None
def f(x):
    for name, (expr, dom, _) in _TARGETS.items():
        return eval(expr, {"np": np, "x": x})
"""


@NEEDS_VIEW
def test_funcfit_cheat_cannot_import_the_targets() -> None:
    from optiforge.evals.registry import get_benchmark

    for task in get_benchmark("funcfit").tasks("dev"):
        score = task.evaluate({"code": FUNCFIT_CHEAT}, SB)
        assert not score.passed, (task.name, score)
        assert "optiforge" in score.details["reason"], score.details


AUTORO_CHEAT = """
import json
from optiforge.solvers.robust import ROProblem
from optiforge.solvers.robust.counterpart import reference_counterpart
p = ROProblem.model_validate_json(open("instance.json").read())
rc = reference_counterpart(p)
sol = rc.solve()
print(json.dumps({"x": list(sol.x), "objective": sol.objective}))
"""


@NEEDS_VIEW
def test_autoro_cheat_cannot_call_the_reference_solver() -> None:
    from optiforge.solvers.robust import verify_candidate_code

    sys.path.insert(0, "tests/solvers/robust")
    try:
        from test_robust_candidate_code import PROBLEM
    finally:
        sys.path.pop(0)
    v = verify_candidate_code(PROBLEM, AUTORO_CHEAT, SB, timeout_s=60.0, memory_mb=2048)
    assert not v.correct
    assert "No module named 'optiforge'" in v.report(), v.report()
