"""The ``train`` suite: its problems satisfy the training api's Protocols, its tasks are
``TrainPlanTask``s (and no other family's), plans are validated against the catalogue with
one-line errors, a plan is scored by training on held-out data from the harness's seed,
and the ``tuned`` reference searches every applicable catalogue entry on validation data,
a method added to the catalogue included."""

from __future__ import annotations

import dataclasses
import math
import os
import re
import subprocess
import sys
import types

import pytest
import torch

from optiforge.evals.registry import get_benchmark, resolve_task
from optiforge.evals.suites.bbowp.protocol import WordProblemTask
from optiforge.evals.suites.train import InvalidPlan, TrainTask, validate_plan
from optiforge.evals.suites.train.problems import (
    DigitsCleaning,
    DigitsMLP,
    GrammarLM,
    MatrixSensing,
)
from optiforge.evals.suites.train.protocol import TrainPlanTask
from optiforge.solvers.train import api, catalogue
from optiforge.solvers.train.api import HParam, TrainMethod, TrainResult
from optiforge.solvers.train.baselines import fit_model


def _tiny(ref: str, steps: int = 30) -> TrainTask:
    task = resolve_task(ref)
    assert isinstance(task, TrainTask)
    return dataclasses.replace(task, budget=steps)


def test_problems_satisfy_the_training_protocols() -> None:
    for p in (DigitsMLP(), GrammarLM(), MatrixSensing()):
        assert isinstance(p, api.ModelProblem) and not isinstance(p, api.BilevelProblem)
    assert isinstance(MatrixSensing(), api.LowRankProblem)
    assert not isinstance(DigitsMLP(), api.LowRankProblem)
    cleaning = DigitsCleaning()
    assert isinstance(cleaning, api.BilevelProblem) and not isinstance(cleaning, api.ModelProblem)
    gen = torch.Generator().manual_seed(0)
    for p in (DigitsMLP(), GrammarLM(), MatrixSensing()):
        model = p.make_model(0)
        losses = p.losses(model, p.batch(0, gen))
        assert losses.shape == (p.batch_size,) and bool(torch.isfinite(losses).all())
    m = MatrixSensing()
    w = m.make_model(0).matrix()  # type: ignore[operator]
    assert w.shape == m.shape and math.isclose(m.evaluate_matrix(torch.zeros(m.shape)), 1.0)
    model, lam = cleaning.make(0)
    x, y, idx = cleaning.inner_batch(0, gen)
    assert lam.shape == (cleaning.n_train,) and int(idx.max()) < cleaning.n_train
    assert cleaning.inner_loss(model, lam, (x, y, idx)).ndim == 0
    assert cleaning.outer_loss(model, cleaning.outer_batch(0, gen)).ndim == 0


def test_the_held_out_part_is_not_what_methods_train_on() -> None:
    p = DigitsMLP()
    x_train = p._data()[0]
    assert p.for_tuning().held == "val" and p.held == "test"
    assert len(p._held()[0]) + len(p.for_tuning()._held()[0]) + len(x_train) == 1797
    lm = GrammarLM()
    assert not torch.equal(lm._stream("train")[:200], lm._stream("test")[:200])


def test_every_task_is_a_train_plan_task_and_no_word_problem() -> None:
    bench = get_benchmark("train")
    tasks = [t for split in bench.splits for t in bench.tasks(split)]
    assert {t.problem_kind for t in tasks} == {"classify", "lowrank", "lm", "bilevel"}
    assert all(isinstance(t, TrainPlanTask) and not isinstance(t, WordProblemTask) for t in tasks)
    assert not any(isinstance(t, TrainPlanTask) for t in get_benchmark("bbowp").tasks("dev"))


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ({"optimizer": "nope"}, r"unknown optimizer 'nope' \(catalogue: adamw, sgd"),
        (
            {"optimizer": "adamw", "hparams": {"beta": 0.9}},
            r"adamw has no hyperparameter 'beta' \(it has lr, weight_decay\)",
        ),  # fmt: skip
        (
            {"optimizer": "adamw", "hparams": {"lr": 5.0}},
            r"adamw.lr=5 is outside its range \[0.0001, 0.1\]",
        ),  # fmt: skip
        ({"optimizer": "sgd", "hparams": {"lr": "fast"}}, r"sgd.lr must be a finite number"),
        ({"optimizer": "sgd", "hparams": [0.1]}, r"hparams must be an object"),
        (["adamw"], r"a training plan is a JSON object"),
    ],
    ids=[
        "unknown-optimizer",
        "unknown-hparam",
        "out-of-range",
        "not-a-number",
        "hparams-list",
        "not-an-object",
    ],  # fmt: skip
)
def test_invalid_plans_fail_with_one_line(plan: object, message: str) -> None:
    with pytest.raises(InvalidPlan, match=message) as e:
        validate_plan(plan, "classify")
    assert "\n" not in str(e.value)
    score = _tiny("train/digits-mlp").evaluate(plan)
    assert not score.passed and score.value == math.inf and "\n" not in score.details["reason"]


def _lowrank_only(problem: object, hp: dict[str, float], steps: int, seed: int) -> TrainResult:
    lr = hp["lr"]
    return fit_model(problem, lambda ps: torch.optim.SGD(ps, lr=lr), steps, seed)  # type: ignore[arg-type]


LOWRANK_ONLY = TrainMethod(
    name="lowrank-only",
    description="a test method that applies to lowrank problems only",
    kinds=frozenset({"lowrank"}),
    hparams={"lr": HParam(1e-3, 1.0, 0.1)},
    run=_lowrank_only,
)


@pytest.fixture
def extra_entry(monkeypatch: pytest.MonkeyPatch) -> str:
    """A method added to the catalogue as another helper's would be (one ENTRIES line)."""
    module = types.ModuleType("fake_train_method")
    module.METHOD = LOWRANK_ONLY  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_train_method", module)
    monkeypatch.setitem(catalogue.ENTRIES, "lowrank-only", "fake_train_method:METHOD")
    return "lowrank-only"


def test_a_method_that_does_not_apply_is_refused_naming_those_that_do(extra_entry: str) -> None:
    for_classify = ", ".join(
        n for n in catalogue.ENTRIES if "classify" in catalogue.info(n)["kinds"]
    )
    why = f"'lowrank-only' does not apply to a classify problem (it runs on lowrank; for classify: {for_classify})"  # fmt: skip
    with pytest.raises(InvalidPlan, match=re.escape(why)):
        validate_plan({"optimizer": extra_entry}, "classify")
    assert extra_entry in _tiny("train/lowrank-sensing").options
    assert extra_entry not in _tiny("train/digits-mlp").options


def test_a_plan_is_trained_from_the_harness_seed_and_scored_held_out() -> None:
    task = _tiny("train/digits-mlp", steps=40)
    plan = {"optimizer": "adamw", "hparams": {"lr": 3e-3}, "seed": 123}
    a, b, c = task.evaluate(plan, seed=0), task.evaluate(plan, seed=0), task.evaluate(plan, seed=1)
    assert a.passed and a.value == b.value != c.value
    assert a.details["ignored"] == ["seed"] and a.details["hparams"]["weight_decay"] == 0.01
    assert 0.0 < a.metrics["accuracy"] <= 1.0
    diverged = _tiny("train/lowrank-sensing", steps=60).evaluate({"optimizer": "sgd", "hparams": {"lr": 1.0}})  # fmt: skip
    assert not diverged.passed and "diverged" in diverged.details["reason"]


def test_the_bilevel_default_is_erm_with_uniform_weights() -> None:
    task = _tiny("train/digits-cleaning", steps=20)
    plan = task.default_plan()
    assert plan == {"optimizer": "adamw", "hparams": catalogue.get("adamw").defaults()}
    res = catalogue.get("adamw").run(task.problem, plan["hparams"], 20, 0)
    assert res.lam is not None and bool((res.lam == 0).all())  # lam untouched: no cleaning
    assert task.evaluate(plan).passed


def test_tuned_searches_every_applicable_entry_on_validation_data(extra_entry: str) -> None:
    task = _tiny("train/lowrank-sensing", steps=30)
    found = task.tuned_plan(trials=2, seed=0)
    search = found["search"]
    lowrank = {n for n in catalogue.ENTRIES if "lowrank" in catalogue.info(n)["kinds"]}
    assert {
        "adamw",
        "sgd",
        "imuon",
        extra_entry,
    } <= lowrank  # the merged catalogue's, and the new one
    assert {r["optimizer"] for r in search} == lowrank
    assert (
        len(search) == 2 * len(lowrank)
        and search[0]["hparams"] == catalogue.get("adamw").defaults()
    )
    best = min(search, key=lambda r: r["val"])
    assert (found["optimizer"], found["hparams"]) == (best["optimizer"], best["hparams"])
    # scored on validation measurements (their mean squared error), not the recovery error
    val = task.problem.for_tuning()
    method = catalogue.get(best["optimizer"])
    assert math.isclose(val.evaluate(method.run(val, best["hparams"], 30, 0).model), best["val"])


def test_stored_catalogue_descriptions_are_the_methods_own() -> None:
    """Regenerate with `python -m optiforge.solvers.train.catalogue` when a method changes;
    an entry not stored yet is described by importing it (``catalogue.info``)."""
    stored = catalogue.load_index()
    assert set(stored) == set(catalogue.ENTRIES), (
        "regenerate: python -m optiforge.solvers.train.catalogue"
    )
    for name, d in stored.items():
        assert d == catalogue.describe(name), name


LIST_OPTIMIZERS = """
import sys
from optiforge.cli.main import list_training_methods
list_training_methods()
print("IMPORTED", [m for m in sys.modules if m.startswith("optiforge.solvers.train.")
                   and m != "optiforge.solvers.train.catalogue"], file=sys.stderr)
"""


def test_list_optimizers_names_the_catalogue_without_importing_methods() -> None:
    proc = subprocess.run([sys.executable, "-c", LIST_OPTIMIZERS], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "250"})  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "IMPORTED []" in proc.stderr
    assert (
        "adamw" in proc.stdout and "sgd" in proc.stdout and "lr [0.0001, 0.1] 0.001" in proc.stdout
    )


def _raises(problem: object, hp: dict[str, float], steps: int, seed: int) -> TrainResult:
    raise RuntimeError("boom\nsecond line")


def test_a_method_that_raises_fails_its_plan_and_loses_the_search(monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    module = types.ModuleType("fake_raising_method")
    module.METHOD = dataclasses.replace(LOWRANK_ONLY, name="raises", run=_raises)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_raising_method", module)
    monkeypatch.setitem(catalogue.ENTRIES, "raises", "fake_raising_method:METHOD")
    task = _tiny("train/lowrank-sensing", steps=10)
    score = task.evaluate({"optimizer": "raises"})
    assert not score.passed and score.details["reason"] == "raises failed: RuntimeError: boom"
    found = task.tuned_plan(trials=1, seed=0)
    assert found["optimizer"] != "raises"
    assert [r["val"] for r in found["search"] if r["optimizer"] == "raises"] == [math.inf]


class OwnFactors(torch.nn.Module):
    """A method's own low-rank module (not the suite's ``Factors``): it holds L and R."""

    def __init__(self, left: torch.Tensor, right: torch.Tensor) -> None:
        super().__init__()
        self.L, self.R = torch.nn.Parameter(left), torch.nn.Parameter(right)


def test_a_low_rank_model_is_scored_through_its_factors() -> None:
    p = MatrixSensing()
    w_star = p._data()[0]
    u, s, vh = torch.linalg.svd(w_star)
    r = p.rank
    exact = OwnFactors(u[:, :r] * s[:r], vh[:r].T)
    assert p.evaluate(exact) < 1e-5
    assert (
        float(p.losses(exact, p.batch(0, torch.Generator().manual_seed(0))).mean().detach()) < 1e-3
    )
