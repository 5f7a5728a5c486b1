"""The formulator: offline the heuristic (the fixed default as baseline); with a scripted LLM a good and a misleading
formulation (and an invalid one re-asked); the harness runs the formulated optimization."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from optiforge.config import RunSettings
from optiforge.evals.registry import resolve_task
from optiforge.harness.runner import run_task
from optiforge.harness.summary import RunSummary
from optiforge.runs import iter_events
from optiforge.testing import FunctionLLM

TASK = "bbowp/pressure-vessel@dev"
GOOD = {"variables": [
    {"name": "shell_plates", "kind": "int", "low": 10, "high": 25},
    {"name": "head_plates", "kind": "int", "low": 5, "high": 15},
    {"name": "radius", "kind": "float", "low": 40, "high": 60},
    {"name": "length", "kind": "float", "low": 150, "high": 240}], "method": "tpe", "rationale": "r"}  # fmt: skip
MISLEADING = {"variables": [{"name": "length", "kind": "float", "low": 10, "high": 20}],
              "method": "random", "rationale": "only length matters"}  # fmt: skip


def _run(tmp_path: Path, replies: list[dict[str, Any]]) -> tuple[RunSummary, list[str]]:
    prompts: list[str] = []

    def model(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        prompts.append(messages[-1]["content"])
        return json.dumps(replies[min(len(prompts), len(replies)) - 1])

    summary = run_task("formulator", resolve_task(TASK), RunSettings(model="scripted", memory="none"),
                       tmp_path / "r", llm=FunctionLLM(model), with_baseline=False)  # fmt: skip
    return summary, prompts


@pytest.mark.slow
def test_offline_is_the_heuristic_and_the_default_stays_available(tmp_path: Path) -> None:
    from optiforge.agents.formulator.heuristic import heuristic_formulation

    task = resolve_task(TASK)
    s = run_task(
        "formulator", task, RunSettings(memory="none"), tmp_path / "r", with_baseline=False
    )
    expected = heuristic_formulation(task)
    expected.pop("rationale")
    assert s.extra["formulation"] == expected and s.extra["by"] == "heuristic"
    assert s.status == "finished" and len(s.trace) == task.budget  # the harness ran it
    assert any(e["kind"] == "heuristic_formulation" for e in iter_events(tmp_path / "r"))
    d = run_task("formulator", task, RunSettings(memory="none", agent={"offline": "default"}),
                 tmp_path / "d", with_baseline=False)  # fmt: skip
    assert d.extra["formulation"] == task.default_formulation()  # no seed: the harness's
    assert d.extra["by"] == "default"


def test_a_good_formulation_beats_a_misleading_one(tmp_path: Path) -> None:
    good, prompts = _run(tmp_path / "g", [GOOD])
    bad, _ = _run(tmp_path / "b", [MISLEADING])
    assert good.extra["formulation"]["method"] == "tpe" and good.extra["by"] == "llm"
    assert good.best_score is not None and bad.best_score is not None
    assert good.best_score < bad.best_score  # the harness's re-measurement of each run
    # the prompt is the description: nothing hidden, no human formulation
    assert "important" not in prompts[0] and "40.0, 60.0" not in prompts[0]


def test_an_invalid_formulation_is_reasked_with_its_error(tmp_path: Path) -> None:
    broken = {**GOOD, "variables": [{"name": "radius", "kind": "float", "low": 60, "high": 40}]}
    s, prompts = _run(tmp_path, [broken, GOOD])
    assert s.extra["reasks"] == 1
    assert (
        "That formulation is invalid: variables.0.float: radius: needs finite low < high"
        in prompts[1]
    )
    assert [
        e["attempt"] for e in iter_events(tmp_path / "r") if e["kind"] == "formulation_invalid"
    ] == [0]


def test_a_model_that_never_formulates_fails_the_run(tmp_path: Path) -> None:
    broken = {**GOOD, "variables": [{"name": "radius", "kind": "float", "low": 60, "high": 40}]}
    s, _ = _run(tmp_path, [broken])
    assert s.status == "failed" and "no valid formulation" in str(s.status_reason)


@pytest.mark.slow
def test_every_method_runs_its_optimization_with_the_runs_seed(tmp_path: Path) -> None:
    task = resolve_task(TASK)
    for method in ("default", "human"):
        s = run_task("formulator", task, RunSettings(seed=3, memory="none"), tmp_path / method,
                     method=method)  # fmt: skip
        form = s.extra["formulation"]
        assert "seed" not in form  # the optimizer's seed is the harness's, not the formulation's
        assert s.trace == task.evaluate(form, seed=3).details["trace"]


@pytest.mark.slow
def test_a_revision_after_a_pilot_runs_both_stages_within_the_budget(tmp_path: Path) -> None:
    wide = {**GOOD, "variables": [{**v, "low": 10, "high": 200} if v["name"] == "radius" else v
                                  for v in GOOD["variables"]], "method": "random"}  # fmt: skip
    prompts: list[str] = []

    def model(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        prompts.append(messages[-1]["content"])
        return json.dumps(wide if len(prompts) == 1 else GOOD)

    task = resolve_task(TASK)
    s = run_task("formulator", task, RunSettings(model="scripted", memory="none",
                 agent={"revise_after": 8}), tmp_path / "r", llm=FunctionLLM(model),
                 with_baseline=False)  # fmt: skip
    form = s.extra["formulation"]
    assert form["method"] == "tpe" and form["pilot"]["method"] == "random"
    assert form["pilot"]["evals"] == 8 and s.extra["pilot"]["evals"] == 8
    # the model was shown the pilot's results, then asked for the rest of the budget
    assert "A pilot run of that formulation (random) made 8 evaluations" in prompts[1]
    assert f"for the remaining {task.budget - 8} evaluations" in prompts[1]
    # the harness re-ran both stages: 8 pilot evaluations, then the revision, one budget
    assert len(s.trace) == task.budget
    score = task.evaluate(form)
    assert score.details["stages"] == [8, task.budget - 8]
    assert score.value == s.best_score


def test_a_pilot_cannot_take_more_than_half_the_budget() -> None:
    task = resolve_task(TASK)
    form = {**task.human, "pilot": {**task.human, "evals": task.budget}}
    score = task.evaluate(form)
    assert not score.passed and "pilot evals must be 1.." in score.details["reason"]


def test_a_kernel_expression_is_checked_and_run(tmp_path: Path) -> None:
    task = resolve_task(TASK)
    bad = task.evaluate({**task.human, "method": "gp", "kernel": "__import__('os')"})
    assert not bad.passed and "kernel" in bad.details["reason"]
    wrong = task.evaluate({**task.human, "method": "tpe", "kernel": "RBF_ARD"})
    assert not wrong.passed and "needs method gp or kernel_search" in wrong.details["reason"]


def test_integer_ranges_written_with_fractions_keep_the_integers_in_them() -> None:
    from optiforge.agents.formulator.problem import llm_schema, to_formulation

    task = resolve_task(TASK)
    schema = llm_schema(sorted(task.knobs), 12)
    reply = {"variables": [{"name": "shell_plates", "kind": "int", "low": 9.5, "high": 18.1}],
             "method": "tpe"}  # fmt: skip
    form = to_formulation(schema.model_validate(reply), task.knobs)
    assert form["space"]["variables"][0]["low"] == 10
    assert form["space"]["variables"][0]["high"] == 18


def test_a_reply_is_read_against_the_knob_api() -> None:
    from optiforge.agents.formulator.problem import llm_schema, to_formulation

    task = resolve_task(TASK)
    knobs = task.knobs
    schema = llm_schema(sorted(knobs), 12)
    reply = {"variables": [{"name": "radius", "kind": "float"},  # no range: the valid range
                           {"name": "shell_plates", "kind": "float", "low": 10, "high": 20},
                           {"name": "radius", "kind": "float", "low": 1, "high": 2}],  # twice
             "method": "gp"}  # fmt: skip
    space = to_formulation(schema.model_validate(reply), knobs)["space"]["variables"]
    assert [v["name"] for v in space] == ["radius", "shell_plates"]
    assert (space[0]["low"], space[0]["high"]) == (knobs["radius"]["low"], knobs["radius"]["high"])
    assert space[1]["kind"] == "int"  # the API says shell_plates is an integer knob
