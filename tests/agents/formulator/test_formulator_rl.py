"""The formulator on ``rl`` tasks: the spec accepts the third family with its own baselines,
the heuristic's stated rules (kind, limits and objective read off the words; method by the
posed structure; reading no score and never the truth), the LLM path's schema and re-asks
through a scripted model, ``agent.rl_method``, and an eval row per method. Stand-in methods
(``optiforge.testing.rl_methods``) play the catalogue where the real modules are not merged."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from langgraph.runtime import Runtime

from optiforge.agents import get_agent
from optiforge.agents.formulator import FormulatorConfig
from optiforge.agents.formulator.nodes import control_plan
from optiforge.agents.formulator.rl_plan import (
    allowed,
    heuristic_rl_plan,
    read_words,
    rl_prompt,
    rl_schema,
    stated_numbers,
)
from optiforge.agents.kit import RunContext
from optiforge.agents.kit.context import AgentContext
from optiforge.config import RunSettings
from optiforge.errors import ConfigError
from optiforge.evals.registry import get_benchmark, resolve_task
from optiforge.evals.suites.rl import RLTask
from optiforge.harness.runner import run_eval, run_task
from optiforge.solvers.rl import catalogue
from optiforge.testing import FunctionLLM, rl_methods

ALL = tuple(rl_methods.KINDS_OF)


@pytest.fixture
def fakes(monkeypatch: pytest.MonkeyPatch) -> None:
    rl_methods.install(monkeypatch, ALL)
    rl_methods.SEEN.clear()


class Sealed(RLTask):
    """An rl task whose scores an offline planner must never read."""

    def evaluate(self, *a: Any, **k: Any) -> Any:
        raise AssertionError("the heuristic read a score")

    def tuned_plan(self, *a: Any, **k: Any) -> Any:
        raise AssertionError("the heuristic ran the search")


def _task(name: str) -> Sealed:
    task = resolve_task(f"rl/{name}")
    return Sealed(**{f.name: getattr(task, f.name) for f in dataclasses.fields(task)})


class PublicView:
    """What an ``RLPlanTask`` shows (description, kinds, facts, options) and nothing else:
    no truth, no score, no check."""

    def __init__(self, task: RLTask) -> None:
        self.description, self.kinds = task.description, task.kinds
        self.facts, self.options = task.facts, task.options


def _plan_sealed(task: RLTask, method: str | None = None) -> dict[str, Any]:
    """The heuristic's plan from the task's public face only (the leak test: its inputs
    name no winning plan and hold no truth)."""
    view = PublicView(task)
    assert "truth" not in vars(view) and not any("method" in str(v) for v in view.facts.values())
    return heuristic_rl_plan(view, method)  # type: ignore[arg-type]


def _runtime(task: RLTask, config: FormulatorConfig, llm: Any = None) -> Runtime[Any]:
    return Runtime(context=AgentContext.of(RunContext(llm=llm), task, config))


def test_the_spec_reads_rl_tasks_with_their_own_baselines() -> None:
    spec = get_agent("formulator")
    rl, bbowp, train = _task("point-two-hazards"), get_benchmark("bbowp").tasks("dev")[0], resolve_task("train/digits-mlp")  # fmt: skip
    assert spec.check_task(rl) is rl and spec.check_task(bbowp) is bbowp and spec.check_task(train) is train  # fmt: skip
    assert list(spec.baselines_for(rl)) == ["default", "tuned"]
    assert list(spec.baselines_for(train)) == ["adamw", "tuned"]
    assert list(spec.baselines_for(bbowp)) == ["default", "human"]
    with pytest.raises(ConfigError, match=r"or train tasks \(TrainPlanTask\) or rl tasks \(RLPlanTask\); funcfit/"):  # fmt: skip
        spec.check_task(get_benchmark("funcfit").tasks("dev")[0])


EXPECTED = {
    "point-two-hazards": ({"kind": "cmdp", "limits": [2.0, 1.0]}, "locu"),
    "point-one-hazard": ({"kind": "cmdp", "limits": [1.0]}, "cpo"),
    "point-never-touch": ({"kind": "statewise", "limits": [0.0]}, "ascpo"),
    "fishing-max-min": ({"kind": "mo-offline", "objective": "min"}, "aetdice"),
    "point-three-hazards-corridor": ({"kind": "cmdp", "limits": [1.0, 1.0, 2.0, 0.5]}, "locu"),
    "cheetah-speed-limit": ({"kind": "statewise", "limits": [0.0]}, "ascpo"),
    "point-noisy-two-never": ({"kind": "statewise", "limits": [0.0, 0.0]}, "ascpo"),
    "fishing-weighted": (
        {"kind": "mo-offline", "objective": "linear:0.7,0.3"},
        "linear-scalarization",
    ),  # fmt: skip
}


@pytest.mark.parametrize("name", list(EXPECTED))
def test_the_heuristic_poses_every_task_as_its_words_state_it(fakes: None, name: str) -> None:
    task = _task(name)
    plan = _plan_sealed(task)
    posed, method = EXPECTED[name]
    assert {k: plan[k] for k in posed} == posed and plan["method"] == method
    assert plan["hparams"] == {"gain": 1.0} and plan["rationale"]
    rationale = plan.pop("rationale")
    assert task.check_plan(plan) is None, rationale  # consistent with the truth it never read


def test_the_heuristic_falls_back_to_what_imports(monkeypatch: pytest.MonkeyPatch) -> None:
    rl_methods.install(monkeypatch, ("ppo-lag", "cpo", "pcpo"))  # locu, ascpo, aetdice: not merged
    for name in ("locu", "ascpo", "aetdice", "linear-scalarization", "markov-dice"):
        monkeypatch.setitem(catalogue.ENTRIES, name, "optiforge.solvers.rl.not_merged_yet:X")
    assert _plan_sealed(_task("point-two-hazards"))["method"] == "cpo"
    assert _plan_sealed(_task("point-never-touch"))["method"] == "cpo"
    with pytest.raises(ValueError, match="no offered RL method solves a mo-offline problem"):
        _plan_sealed(_task("fishing-max-min"))
    out = control_plan({}, _runtime(_task("fishing-max-min"), FormulatorConfig()))
    assert out["plan"] == {} and "mo-offline" in out["error"]
    forced = _plan_sealed(_task("point-two-hazards"), "ppo-lag")
    assert forced["method"] == "ppo-lag" and forced["limits"] == [2.0, 1.0]


def test_read_words_rules() -> None:
    assert read_words("never enter the red zone in any step", 2) == {
        "kind": "statewise", "limits": [0.0, 0.0], "why": read_words("never enter the red zone in any step", 2)["why"]}  # fmt: skip
    assert read_words("at most 3 steps per episode in a hazard", 1)["limits"] == [3.0]
    assert (
        read_words("a logged dataset; maximize the worst 20% of trips", 2)["objective"]
        == "cvar:0.2"
    )
    assert read_words("an offline dataset; keep both crews' totals fair", 2)["objective"] == "fair"
    words = "From this dataset, weights 0.25 and 0.75. Budget: 2000 gradient steps."
    assert read_words(words, 2)["objective"] == "linear:0.25,0.75"


def test_the_llm_schema_offers_each_method_with_its_kinds_and_grid(fakes: None) -> None:
    task = _task("point-two-hazards")
    schema = rl_schema(task.options)
    assert schema.__name__ == "ControlPlan"
    ok = schema.model_validate({"method": "locu", "kind": "cmdp", "limits": [2, 1], "hparams": {"gain": 3.0}})  # fmt: skip
    assert ok.model_dump()["limits"] == [2.0, 1.0]
    for bad in ({"method": "locu", "kind": "statewise", "limits": [2, 1], "hparams": {"gain": 1.0}},
                {"method": "locu", "kind": "cmdp", "limits": [2, 1], "hparams": {"gain": 2.5}},
                {"method": "aetdice", "kind": "mo-offline", "hparams": {"gain": 1.0}},
                {"method": "cpo", "kind": "cmdp", "hparams": {"gain": 1.0}}):  # fmt: skip
        with pytest.raises(ValueError):
            schema.model_validate(bad)
    tight = rl_schema(task.options, 2, stated_numbers(task.description))  # what llm_rl_plan asks
    assert stated_numbers(task.description) == (0.0, 1.0, 2.0, 200.0, 6000.0)
    tight.model_validate({"method": "locu", "kind": "cmdp", "limits": [2, 1], "hparams": {"gain": 1.0}})  # fmt: skip
    for limits in ([2], [2, 1, 1], [3, 1]):  # the declared cost count; only the words' numbers
        with pytest.raises(ValueError):
            tight.model_validate({"method": "locu", "kind": "cmdp", "limits": limits, "hparams": {"gain": 1.0}})  # fmt: skip
    text = rl_prompt(task)[1]["content"]
    assert "locu (solves cmdp)" in text and "n_costs=2" in text and "at most 2 steps" in text


def test_the_llm_path_reasks_a_plan_with_the_wrong_numbers(fakes: None) -> None:
    replies = iter([{"method": "locu", "kind": "cmdp", "limits": [1, 2], "hparams": {"gain": 1.0}},
                    {"method": "locu", "kind": "cmdp", "limits": [2, 1], "hparams": {"gain": 3.0}}])  # fmt: skip
    asked: list[Any] = []

    def reply(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        asked.append(messages[-1]["content"])
        return json.dumps(next(replies))

    out = control_plan({}, _runtime(_task("point-two-hazards"), FormulatorConfig(), FunctionLLM(reply)))  # fmt: skip
    assert out["by"] == "llm" and out["reasks"] == 1
    assert out["plan"] == {"kind": "cmdp", "limits": [2.0, 1.0], "method": "locu", "hparams": {"gain": 3.0}}  # fmt: skip
    assert "limits[0]=1 is not the number the description states for red hazards" in asked[1]
    forced = FunctionLLM(lambda m, t, s: json.dumps({"method": "cpo", "kind": "cmdp", "limits": [2, 1], "hparams": {"gain": 1.0}}))  # fmt: skip
    out = control_plan({}, _runtime(_task("point-two-hazards"), FormulatorConfig(rl_method="cpo"), forced))  # fmt: skip
    assert out["plan"]["method"] == "cpo"
    refused = FunctionLLM(lambda m, t, s: json.dumps({"method": "locu", "kind": "cmdp", "limits": [2, 1], "hparams": {"gain": 1.0}}))  # fmt: skip
    out = control_plan({}, _runtime(_task("point-two-hazards"), FormulatorConfig(rl_method="cpo"), refused))  # fmt: skip
    assert out["plan"] == {} and "error" in out  # locu is not offered: never valid


def test_a_forced_rl_method_not_offered_is_refused_before_the_run(fakes: None, tmp_path: Any) -> None:  # fmt: skip
    settings = RunSettings(memory="none", agent={"rl_method": "nope"})
    with pytest.raises(ConfigError, match=r"agent.rl_method=nope: not offered here \(offered: ppo-lag, cpo"):  # fmt: skip
        run_task("formulator", resolve_task("rl/point-one-hazard"), settings, tmp_path / "r")


def test_an_eval_row_per_method_on_one_task(fakes: None, tmp_path: Any) -> None:
    settings = RunSettings(memory="none", agent={"tune_trials": 2})
    summary = run_eval("formulator", "rl", settings, tmp_path / "ev", split="dev", seeds=1,
                       tasks=["point-two-hazards"])  # fmt: skip
    rows = [json.loads(line) for line in (tmp_path / "ev" / "results.jsonl").read_text().splitlines()]  # fmt: skip
    by = {r["method"]: r for r in rows}
    assert set(by) == {"formulator", "default", "tuned"} and not summary["errors"]
    assert by["formulator"]["extra"]["plan"]["method"] == "locu"
    assert by["default"]["extra"]["plan"]["method"] == "ppo-lag"
    assert len(by["tuned"]["extra"]["search"]) == 2 * 4  # ppo-lag, cpo, pcpo, locu: 2 trials each
    assert all(isinstance(by[m]["best_score"], float) for m in by)


def test_the_llm_is_offered_the_methods_that_fit_the_tasks_data(fakes: None) -> None:
    """SmolLM2 posed every online test task as mo-offline while the offline methods were
    offered there: a logged dataset (a public fact of the task) now decides which side is
    offered; the online kind stays the model's to pose."""
    online, offline = _task("point-two-hazards"), _task("fishing-max-min")
    assert all("mo-offline" not in o["kinds"] for o in allowed(online, None).values())
    assert all("mo-offline" in o["kinds"] for o in allowed(offline, None).values())
    assert {"locu", "ascpo", "cpo"} <= set(allowed(online, None))
    assert list(allowed(online, "aetdice")) == ["aetdice"]  # forcing a method still works
