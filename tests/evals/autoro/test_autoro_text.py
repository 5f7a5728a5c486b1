"""Text-only application tasks: the statement is words (no JSON), the splits partition the
set, OOD means set types unseen in training, and a formulation is scored on the hidden JSON."""

from __future__ import annotations

import re

from optiforge.evals.suites.autoro import AutoROBenchmark, app_instances
from optiforge.evals.suites.autoro.applications import APP_SPLITS
from optiforge.evals.suites.autoro.text import problem_text


def test_app_splits_partition_the_set_and_ood_is_unseen_set_types() -> None:
    names = [n for split in APP_SPLITS.values() for n in split]
    assert len(names) == len(set(names)) == len(app_instances()) == 22
    bench = AutoROBenchmark(n_per_split=0)
    seen = {t for task in bench.tasks("app-train") for t in task.instance.set_types}
    assert seen == {"box", "ellipsoidal", "budget"}
    for task in bench.tasks("app-id") + bench.tasks("app-val"):
        assert set(task.instance.set_types) <= seen, task.name
    for task in bench.tasks("app-ood"):
        assert set(task.instance.set_types) - seen, task.name  # an unseen set type
    assert all(t.split == "app-ood" and t.text_only for t in bench.tasks("app-ood"))


def test_statement_is_words_not_the_json() -> None:
    for task in AutoROBenchmark(n_per_split=0).tasks("app"):
        text = task.description
        assert task.instance.problem.to_json() not in text
        assert (
            '"constraints"' not in text
            and '"a":' not in text
            and "[[" not in text.split("Model sheet", 1)[1].split("Modelling protocol", 1)[0]
        )
        assert "Problem JSON" not in text and "Modelling protocol" in text
        # every coefficient of the hidden model is stated in the sheet, in words
        sheet = problem_text(task.instance.problem)
        assert sheet in task.statement
        for con in task.instance.problem.constraints:
            assert f" {con.sense} " in sheet


def test_text_only_task_scores_formulations_against_the_hidden_json() -> None:
    from optiforge.agents.autorem.modeller import reference_modeller
    from optiforge.agents.autorem.proposers import counterpart_program
    from optiforge.sandboxes import get_sandbox

    local_sandbox = get_sandbox("local")

    task = next(t for t in AutoROBenchmark(n_per_split=0).tasks("app-id") if "portfolio" in t.name)
    model = reference_modeller(task.statement)
    code = counterpart_program(model)
    bare = task.evaluate(code, local_sandbox)
    assert not bare.passed and "formulation" in bare.details["reasons"][0]
    good = task.evaluate({"model": model.model_dump(mode="json"), "code": code}, local_sandbox)
    assert good.passed and good.metrics["model_match"] == 1.0
    # a model that drops the objective's uncertainty: a wrong answer, and the field named
    wrong = model.model_dump(mode="json")
    wrong["objective"]["uncertainty"] = None
    from optiforge.solvers.robust import parse_problem

    bad = task.evaluate(
        {"model": wrong, "code": counterpart_program(parse_problem(wrong))}, local_sandbox
    )
    assert not bad.passed and bad.metrics["model_match"] == 0.0
    assert bad.details["model_fields"] == ["objective.uncertainty"]
    assert all(not re.search(r"\d", f) for f in bad.details["model_fields"])  # paths, no values
