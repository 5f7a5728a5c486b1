"""The ``rl`` suite: its tasks are ``RLPlanTask``s (and no other family's), plans are
validated against the RL catalogue and the words' numbers with one-line errors, a plan is
trained on the posed problem from the harness's seed and scored on held-out episodes of the
true problem (seeds the method never draws), the references pose the truth, and methods
that do not import are left out. Stand-in methods (``optiforge.testing.rl_methods``) play
the catalogue's entries where the real modules are not merged."""

from __future__ import annotations

import dataclasses
import math
import re
import sys
import types
from typing import Any

import pytest

from optiforge.evals.registry import get_benchmark, resolve_task
from optiforge.evals.suites.bbowp.protocol import WordProblemTask
from optiforge.evals.suites.rl import InvalidPlan, RLTask, parse_objective, validate_plan
from optiforge.evals.suites.rl import benchmark as rlb
from optiforge.evals.suites.rl.protocol import RLPlanTask
from optiforge.evals.suites.train.protocol import TrainPlanTask
from optiforge.solvers.rl import catalogue
from optiforge.solvers.rl.api import KINDS
from optiforge.testing import rl_methods

ALL = tuple(rl_methods.KINDS_OF)


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    rl_methods.install(monkeypatch, ALL)
    rl_methods.SEEN.clear()


def _task(name: str, **change: Any) -> RLTask:
    task = resolve_task(f"rl/{name}")
    assert isinstance(task, RLTask)
    return dataclasses.replace(task, **change) if change else task


def test_every_task_is_an_rl_plan_task_and_no_other_family() -> None:
    bench = get_benchmark("rl")
    tasks = [t for split in bench.splits for t in bench.tasks(split)]
    assert {t.truth.kind for t in tasks} == set(KINDS)
    assert {t.split for t in tasks} == {"dev", "test"} and len(tasks) == 8
    for t in tasks:
        assert isinstance(t, RLPlanTask)
        assert not isinstance(t, TrainPlanTask | WordProblemTask)
        assert not hasattr(t, "problem_kind")  # the kind is the formulator's to read
    assert not any(isinstance(t, RLPlanTask) for t in get_benchmark("train").tasks("dev"))


def test_the_words_state_the_truths_numbers_and_the_facts_reveal_no_truth() -> None:
    for t in [t for s in ("dev", "test") for t in get_benchmark("rl").tasks(s)]:
        text = t.description
        for lim in t.truth.limits:
            assert lim == 0.0 or f"{lim:g}" in text, (t.name, lim)
        assert t.truth.kind not in text and "method" not in text
        assert set(t.facts) <= {"env", "budget", "n_costs", "episodes", "data"}
        assert t.metric in ("penalized_return", "neg_objective")


def _ok(**over: Any) -> dict[str, Any]:
    return {"kind": "cmdp", "limits": [2, 1], "method": "locu", "hparams": {}, **over}


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        (_ok(method="nope"), r"unknown method 'nope' \(catalogue: ppo-lag, cpo, pcpo"),
        (_ok(kind="risky"), r"kind 'risky' is not a problem kind"),
        (
            _ok(kind="statewise"),
            r"method 'locu' does not solve a statewise problem \(it solves cmdp; for statewise: ppo-lag, cpo, pcpo, ascpo\)",
        ),  # fmt: skip
        (_ok(hparams={"gain": 50.0}), r"locu.gain=50 is outside its range \[0.1, 10\]"),
        (_ok(hparams={"lr": 0.1}), r"locu has no hyperparameter 'lr' \(it has gain\)"),
        (
            _ok(limits=[2]),
            r"the plan poses 1 limit\(s\); the description constrains 2 cost\(s\) \(red hazards, blue hazards\)",
        ),  # fmt: skip
        (
            _ok(limits=[2, 5]),
            r"limits\[1\]=5 is not the number the description states for blue hazards",
        ),  # fmt: skip
        (_ok(limits="2,1"), r"limits must be a list of numbers"),
        (
            _ok(kind="mo-offline", method="aetdice", objective="min"),
            r"kind 'mo-offline' does not fit the description: it is about an online system",
        ),  # fmt: skip
        (_ok(env="HalfCheetah-v5+velocity"), r"env 'HalfCheetah-v5\+velocity' is not the system"),
        (["locu"], r"a control plan is a JSON object"),
    ],
    ids=[
        "unknown-method",
        "unknown-kind",
        "method-not-for-kind",
        "out-of-range",
        "unknown-hparam",
        "too-few-limits",
        "wrong-limit",
        "limits-not-a-list",
        "offline-kind-online-task",
        "other-env",
        "not-an-object",
    ],  # fmt: skip
)
def test_invalid_plans_fail_with_one_line(fakes: None, plan: Any, message: str) -> None:
    task = _task("point-two-hazards")
    with pytest.raises(InvalidPlan, match=message) as e:
        validate_plan(plan, task.truth, task.labels)
    assert "\n" not in str(e.value)
    score = task.evaluate(plan)
    assert not score.passed and score.value == math.inf and "\n" not in score.details["reason"]
    assert rl_methods.SEEN == []  # nothing ran


def test_offline_plans_state_the_words_objective(fakes: None) -> None:
    task = _task("fishing-weighted")
    base = {"kind": "mo-offline", "method": "aetdice"}
    assert task.check_plan({**base, "objective": "linear:0.7, 0.3"}) is None
    assert task.check_plan({**base, "objective": "linear:0.5,0.5"}) == "objective 'linear:0.5,0.5' is not the one the description states"  # fmt: skip
    assert "unknown objective 'maximin'" in str(task.check_plan({**base, "objective": "maximin"}))
    assert "does not fit the description: it is about a logged dataset" in str(
        task.check_plan({"kind": "cmdp", "limits": [], "method": "cpo"}))  # fmt: skip
    assert parse_objective("CVaR:0.2") == ("cvar", (0.2,))
    with pytest.raises(InvalidPlan, match="needs its parameters"):
        parse_objective("linear")


def test_a_method_module_that_does_not_import_is_refused_and_left_out(monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    rl_methods.install(monkeypatch, ("cpo", "ascpo"))
    monkeypatch.setitem(catalogue.ENTRIES, "locu", "optiforge.solvers.rl.not_merged_yet:LOCU")
    task = _task("point-two-hazards")
    why = task.check_plan(_ok())
    assert why is not None and why.startswith("method 'locu' is not available here (ModuleNotFoundError")  # fmt: skip
    assert "locu" not in task.options and {"cpo", "ascpo"} <= set(task.options)
    assert task.options["cpo"]["kinds"] == ["cmdp", "statewise"]
    assert task.options["cpo"]["hparams"]["gain"] == {"low": 0.1, "high": 10.0, "default": 1.0, "log": True, "kind": "float"}  # fmt: skip


def test_a_plan_trains_on_the_posed_problem_from_the_harness_seed_and_scores_held_out(fakes: None) -> None:  # fmt: skip
    task = _task("point-two-hazards")
    plan = {**_ok(method="cpo", hparams={"gain": 2.0}), "seed": 7}
    a, b = task.evaluate(plan, seed=3), task.evaluate(plan, seed=3)
    assert a.passed and a.value == b.value and a.details["ignored"] == ["seed"]
    run = rl_methods.SEEN[0]
    assert run["seed"] == 3 and run["hp"] == {"gain": 2.0} and run["problem"].limits == (2.0, 1.0)
    # the leak test: the method draws its own reset seeds; none is a held-out or validation one
    held = set(range(rlb.HELD_OUT_SEED, rlb.HELD_OUT_SEED + task.episodes))
    val = set(range(rlb.VALIDATION_SEED, rlb.VALIDATION_SEED + task.episodes))
    assert all(not (set(r["resets"]) & (held | val)) for r in rl_methods.SEEN)
    assert "seed" not in run["problem"].options and run["problem"].description == ""
    # the score: -return + penalty x relative excess over the truth's limits
    m = a.metrics
    excess = max(0.0, m["cost_0"] - 2.0) / 2.0 + max(0.0, m["cost_1"] - 1.0) / 1.0
    assert m["excess"] == pytest.approx(excess) and excess > 0  # this controller goes straight
    assert a.value == pytest.approx(-m["return"] + task.penalty * excess)


def test_a_statewise_truth_posed_as_a_cmdp_is_scored_on_the_truth(fakes: None) -> None:
    task = _task("point-never-touch")
    as_cmdp = task.evaluate({"kind": "cmdp", "limits": [0], "method": "ppo-lag"})
    as_statewise = task.evaluate({"kind": "statewise", "limits": [0], "method": "ascpo"})
    assert as_cmdp.passed and as_statewise.passed
    assert rl_methods.SEEN[0]["problem"].kind == "cmdp" and rl_methods.SEEN[1]["problem"].kind == "statewise"  # fmt: skip
    for s in (as_cmdp, as_statewise):  # the same controller: every episode touches a hazard
        assert s.metrics["excess"] == s.metrics["violation"] == 1.0
        assert s.value == pytest.approx(-s.metrics["return"] + task.penalty)


def test_the_references_pose_the_truth(fakes: None) -> None:
    assert _task("point-two-hazards").default_plan() == {"kind": "cmdp", "limits": [2.0, 1.0], "method": "ppo-lag", "hparams": {"gain": 1.0}}  # fmt: skip
    assert _task("point-never-touch").default_plan()["kind"] == "statewise"  # ppo-lag solves it
    assert _task("fishing-max-min").default_plan() == {"kind": "mo-offline", "objective": "min", "method": "linear-scalarization", "hparams": {"gain": 1.0}}  # fmt: skip
    task = _task("point-never-touch")
    found = task.tuned_plan(trials=2, seed=0)
    tried = [r["plan"]["method"] for r in found["search"]]
    assert tried == [n for n in ALL if n in ("ppo-lag", "cpo", "pcpo", "locu", "ascpo") for _ in range(2)]  # fmt: skip
    best = min(found["search"], key=lambda r: r["val"])
    assert {k: v for k, v in found.items() if k != "search"} == best["plan"]
    # locu solves cmdp only: it is tried on the same numbers posed as episode budgets
    assert all(r["plan"]["kind"] == ("cmdp" if r["plan"]["method"] == "locu" else "statewise") for r in found["search"])  # fmt: skip
    assert task.check_plan(best["plan"]) is None


def test_offline_tasks_are_scored_by_the_offline_modules_evaluation(fakes: None, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    task = _task("fishing-max-min")
    plan = {"kind": "mo-offline", "objective": "min", "method": "aetdice"}
    monkeypatch.setattr(rlb, "MO_SCORER", "no_such_module_here:evaluate_objective")
    missing = task.evaluate(plan)
    assert not missing.passed and "mo-offline scoring needs" in missing.details["reason"]
    calls: list[Any] = []

    def evaluate_objective(problem: Any, policy: Any, episodes: int, seed: int) -> dict[str, Any]:
        calls.append((problem.objective, episodes, seed))
        return {"objective": 1.5}

    module = types.ModuleType("fake_mo_scorer")
    module.evaluate_objective = evaluate_objective  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_mo_scorer", module)
    monkeypatch.setattr(rlb, "MO_SCORER", "fake_mo_scorer:evaluate_objective")
    score = task.evaluate(plan, seed=2)
    assert score.passed and score.value == -1.5 and calls == [("min", 50, rlb.HELD_OUT_SEED)]
    assert rl_methods.SEEN[-1]["problem"].objective == "min" and rl_methods.SEEN[-1]["seed"] == 2


def _raises(problem: Any, seed: int, **hp: float) -> Any:
    raise RuntimeError("boom\nsecond line")


def test_a_method_that_raises_fails_its_plan_and_loses_the_search(fakes: None, monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    module = sys.modules["fake_rl_methods"]
    monkeypatch.setattr(module, "PCPO", dataclasses.replace(module.PCPO, run=_raises))
    task = _task("point-one-hazard")
    score = task.evaluate({"kind": "cmdp", "limits": [1], "method": "pcpo"})
    assert not score.passed and score.details["reason"] == "pcpo failed: RuntimeError: boom"
    found = task.tuned_plan(trials=1, seed=0)
    assert found["method"] != "pcpo"
    assert [r["val"] for r in found["search"] if r["plan"]["method"] == "pcpo"] == [math.inf]


def test_no_method_imports_no_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(catalogue.ENTRIES):
        monkeypatch.setitem(catalogue.ENTRIES, name, "optiforge.solvers.rl.not_merged_yet:X")
    task = _task("point-one-hazard")
    assert task.options == {}
    with pytest.raises(InvalidPlan, match=re.escape("no catalogue method that solves cmdp imports here")):  # fmt: skip
        task.tuned_plan(trials=1, seed=0)


def test_the_real_baselines_run_through_the_suite() -> None:
    """CPO / PCPO / Lagrangian PPO from the catalogue on a tiny budget: a plan trains and is
    scored; the same seed gives the same score."""
    pytest.importorskip("optiforge.solvers.rl.baselines")
    truth = dataclasses.replace(_task("point-one-hazard").truth, budget=400)
    task = _task("point-one-hazard", truth=truth, episodes=2)
    assert {"ppo-lag", "cpo", "pcpo"} <= set(task.options)
    for method in ("ppo-lag", "cpo"):
        plan = {"kind": "cmdp", "limits": [1], "method": method, "hparams": {"steps_per_iter": 200}}
        a, b = task.evaluate(plan, seed=1), task.evaluate(plan, seed=1)
        assert a.passed and math.isfinite(a.value) and a.value == b.value, a.details
        assert a.metrics["train_s"] > 0 and "return" in a.metrics


LIST_RL = """
import sys
from optiforge.cli.main import list_rl_methods
list_rl_methods()
print("IMPORTED", [m for m in sys.modules if m.startswith("optiforge.solvers.rl.")
                   and m != "optiforge.solvers.rl.catalogue"], "torch" in sys.modules, file=sys.stderr)
"""


def test_list_optimizers_names_the_rl_catalogue_without_importing_it() -> None:
    import os
    import subprocess

    proc = subprocess.run([sys.executable, "-c", LIST_RL], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "200"})  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "IMPORTED [] False" in proc.stderr
    assert all(name in proc.stdout for name in catalogue.ENTRIES)


def test_offline_task_scored_by_aetdice_against_the_exact_optimum() -> None:
    """The real offline scorer: AETDICE on the fishing max-min task (ESR min of the two
    catches) reaches a held-out objective near the exact DP optimum (0.973); the
    linear-scalarization default, whose best weight nearly reaches max-min on this world
    (0.86, see the AETDICE row), does not beat it."""
    task = _task("fishing-max-min")
    ours = task.evaluate({"kind": "mo-offline", "objective": "min", "method": "aetdice"}, seed=0)
    lin = task.evaluate(task.default_plan(), seed=0)
    assert ours.passed and lin.passed
    assert ours.metrics["dp_optimum"] == pytest.approx(0.973, abs=1e-3)
    assert ours.metrics["objective"] > 0.8
    assert lin.metrics["objective"] <= ours.metrics["objective"]


def test_a_rollout_longer_than_the_budget_is_refused() -> None:
    """SmolLM2 set steps_per_iter=20000 on a 6000-step task: no update would run, so the
    plan is refused with a one-line reason (the LLM path re-asks with it)."""
    task = _task("point-two-hazards")
    plan = {"kind": "cmdp", "limits": [2, 1], "method": "ppo-lag", "hparams": {"steps_per_iter": 20000}}  # fmt: skip
    with pytest.raises(
        InvalidPlan, match=r"steps_per_iter=20000 exceeds the task's budget of 6000"
    ):
        validate_plan(plan, task.truth, task.labels)
    plan["hparams"] = {"steps_per_iter": 3000}
    assert validate_plan(plan, task.truth, task.labels)[1]["steps_per_iter"] == 3000


def test_the_options_an_llm_reads_cap_the_rollout_at_the_budget() -> None:
    from optiforge.agents.formulator.train_plan import grid

    task = _task("point-two-hazards")
    spi = task.options["ppo-lag"]["hparams"]["steps_per_iter"]
    assert spi["high"] == task.budget == 6000 and max(grid(spi)) <= 6000
