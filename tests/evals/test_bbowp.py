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


def test_an_asktell_optimizer_runs_in_the_sandbox() -> None:
    """The sandbox ships the ask/tell optimizers the portfolio names (not only solvers.bo)."""
    task = resolve_task("bbowp/pressure-vessel@dev")
    res = task.evaluate({"space": task.human["space"], "method": "gp_bts"}, LocalSandbox())
    assert res.passed, res.details.get("reason")
    assert len(res.details["trace"]) == task.budget


def test_formulation_quality_metrics() -> None:
    from optiforge.evals.suites.bbowp import BBOWPBenchmark, space_quality

    task = resolve_task("bbowp/svm-tumours@dev")
    assert space_quality(task.human, task) == {"precision": 1.0, "recall": 1.0, "range_iou": 1.0}
    one = {"space": {"variables": [{"kind": "float", "name": "C", "low": 1.0, "high": 1e3, "log": True},
                                   {"kind": "int", "name": "degree", "low": 1, "high": 3}]}, "method": "tpe"}  # fmt: skip
    q = space_quality(one, task)
    assert q["precision"] == 0.5 and q["recall"] == 0.5  # C is important, degree is not
    assert q["range_iou"] == pytest.approx((3 / 5) / 2)  # C: 3 of 5 decades; gamma: missing
    rows = [
        {"task": task.name, "seed": 0, "method": "human", "best_score": 0.02, "extra": {"formulation": task.human}},
        {"task": task.name, "seed": 0, "method": "formulator", "best_score": 0.03,
         "extra": {"formulation": one, "by": "llm"}},
        {"task": task.name, "seed": 0, "method": "default", "best_score": 0.05,
         "extra": {"formulation": task.default_formulation()}},
    ]  # fmt: skip
    sm = BBOWPBenchmark().suite_metrics(rows)
    assert sm is not None
    assert sm["formulator"]["beats_default"] == 1.0 and sm["formulator"]["beats_human"] == 0.0
    assert sm["human"]["beats_default"] == 1.0 and "beats_human" not in sm["human"]
    assert sm["formulator"]["optimizers"] == {"tpe": 1}
    assert (
        "| formulator | 50% | 50% |" in BBOWPBenchmark().report_sections({"suite_metrics": sm})[0]
    )


@pytest.mark.slow
def test_cheat_a_formulation_cannot_choose_the_optimizer_seed() -> None:
    """Red-team (issue 39): the harness fixes the seed; a formulation that names one gets
    the same score whatever it names (before the fix: the spread over seeds was ~15%)."""
    task = resolve_task("bbowp/pressure-vessel@dev")
    sb = LocalSandbox()
    form = {"space": task.human["space"], "method": "random"}
    honest = task.evaluate(form, sb)
    assert honest.passed
    chosen = [task.evaluate({**form, "seed": s}, sb) for s in (1, 2, 3)]
    assert [c.value for c in chosen] == [honest.value] * 3
    assert all("seed" in c.details["ignored"] for c in chosen)
    # the harness's seed is what moves the run: another harness seed, another result
    assert task.evaluate(form, sb, seed=1).value != honest.value
