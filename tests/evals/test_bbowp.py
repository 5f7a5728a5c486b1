"""The bbowp suite: black boxes, descriptions that leak nothing, formulations run in the
sandbox, the human formulation against the fixed default."""

from __future__ import annotations

import math

import pytest

from optiforge.evals.registry import get_benchmark, resolve_task
from optiforge.sandboxes import LocalSandbox
from optiforge.solvers.blackbox import PORTFOLIO, SearchSpace
from optiforge.solvers.blackbox.problems import BLACK_BOXES

TASKS = get_benchmark("bbowp").tasks("dev") + get_benchmark("bbowp").tasks("heldout")


def test_instances_cover_four_domains_and_both_splits() -> None:
    assert {t.domain for t in TASKS} == {"ml", "engineering", "science", "mixed"}
    assert {t.split for t in TASKS} == {"dev", "heldout"}
    assert any(not t.informative for t in TASKS)  # the paper's hard case is there
    assert len({t.name for t in TASKS}) == len(TASKS)


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.name)
def test_every_instance_is_consistent(task: object) -> None:
    box = BLACK_BOXES[task.black_box]  # type: ignore[attr-defined]
    human = SearchSpace.model_validate(task.human["space"])  # type: ignore[attr-defined]
    assert task.human["method"] in PORTFOLIO  # type: ignore[attr-defined]
    assert set(human.names) <= set(box.knobs)  # the human space names the box's knobs
    assert set(task.hidden["important"]) <= set(box.knobs)  # type: ignore[attr-defined]
    default = SearchSpace.model_validate(task.default_formulation()["space"])  # type: ignore[attr-defined]
    assert set(default.names) == set(box.knobs)
    assert math.isfinite(box({}))  # the defaults run
    assert math.isnan(box({"no_such_knob": 1}))  # a knob the system lacks fails
    # the description names the knobs (a practitioner knows them) but never the answer
    desc = task.description.lower()  # type: ignore[attr-defined]
    for word in ("important", "optimum", "best value", "matters most"):
        assert word not in desc


def test_a_formulation_runs_in_the_sandbox_and_is_scored() -> None:
    task = resolve_task("bbowp/pressure-vessel@dev")
    sb = LocalSandbox()
    human = task.evaluate(task.human, sb)
    assert (
        human.passed and math.isfinite(human.value) and len(human.details["trace"]) == task.budget
    )
    bad = task.evaluate({"space": task.human["space"], "method": "annealing"}, sb)
    assert not bad.passed and "not one of" in bad.details["reason"]
    broken = task.evaluate({"space": {"variables": []}, "method": "gp"}, sb)
    assert not broken.passed and "invalid space" in broken.details["reason"]
    outside = task.evaluate({"space": {"variables": [
        {"kind": "float", "name": "radius", "low": 500.0, "high": 900.0}]}, "method": "random"}, sb)  # fmt: skip
    assert not outside.passed and "no evaluation was feasible" in outside.details["reason"]
