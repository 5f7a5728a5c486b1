"""The formulator on ``train`` tasks: the spec accepts both families (word problems stay as
they were), the heuristic's stated rules (reading no score), the LLM path's schema and
re-asks through a scripted model, ``agent.optimizer``, and one eval row per method."""

from __future__ import annotations

import dataclasses
import json
import sys
import types
from typing import Any

import pytest
from langgraph.runtime import Runtime

from optiforge.agents import get_agent
from optiforge.agents.formulator import FormulatorConfig
from optiforge.agents.formulator.nodes import plan
from optiforge.agents.formulator.train_plan import grid, heuristic_plan, plan_schema
from optiforge.agents.kit import RunContext
from optiforge.agents.kit.context import AgentContext
from optiforge.config import RunSettings
from optiforge.errors import ConfigError
from optiforge.evals.registry import get_benchmark, resolve_task
from optiforge.evals.suites.bbowp.protocol import WordProblemTask
from optiforge.evals.suites.train import TrainTask
from optiforge.harness.runner import run_eval, run_task
from optiforge.solvers.train import catalogue
from optiforge.solvers.train.baselines import ADAMW
from optiforge.testing import FunctionLLM


class Sealed(TrainTask):
    """A train task whose scores an offline planner must never read."""

    def evaluate(self, *a: Any, **k: Any) -> Any:
        raise AssertionError("the heuristic read a score")

    def tuned_plan(self, *a: Any, **k: Any) -> Any:
        raise AssertionError("the heuristic ran the search")


def _task(name: str) -> TrainTask:
    task = resolve_task(f"train/{name}")
    return Sealed(**{f.name: getattr(task, f.name) for f in dataclasses.fields(task)})


def _runtime(task: TrainTask, config: FormulatorConfig, llm: Any = None) -> Runtime[Any]:
    return Runtime(context=AgentContext.of(RunContext(llm=llm), task, config))


def test_the_spec_reads_word_problems_and_train_tasks_with_their_own_baselines() -> None:
    spec = get_agent("formulator")
    assert spec.task_type is WordProblemTask
    bbowp, train = get_benchmark("bbowp").tasks("dev")[0], _task("digits-mlp")
    assert spec.check_task(bbowp) is bbowp and spec.check_task(train) is train
    assert list(spec.baselines_for(bbowp)) == ["default", "human"]
    assert list(spec.baselines_for(train)) == ["adamw", "tuned"]
    funcfit = get_benchmark("funcfit").tasks("dev")[0]
    with pytest.raises(ConfigError, match=r"formulator runs on bbowp tasks \(WordProblemTask\) or train tasks \(TrainPlanTask\) or rl tasks \(RLPlanTask\); funcfit/"):  # fmt: skip
        spec.check_task(funcfit)


@pytest.fixture
def more_methods(monkeypatch: pytest.MonkeyPatch) -> None:
    """``imuon`` and ``bros`` in the catalogue, as the other helpers' entries will be."""
    module = types.ModuleType("fake_methods")
    module.IMUON = dataclasses.replace(ADAMW, name="imuon", kinds=frozenset({"lowrank"}))  # type: ignore[attr-defined]
    module.BROS = dataclasses.replace(ADAMW, name="bros", kinds=frozenset({"bilevel"}))  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "fake_methods", module)
    monkeypatch.setitem(catalogue.ENTRIES, "imuon", "fake_methods:IMUON")
    monkeypatch.setitem(catalogue.ENTRIES, "bros", "fake_methods:BROS")


def test_the_heuristic_rules() -> None:
    p = heuristic_plan(_task("digits-mlp"))  # 4810 parameters, 600 steps: a small model
    assert p["optimizer"] == "adamw" and p["hparams"] == {"lr": pytest.approx(3e-3), "weight_decay": 0.01}  # fmt: skip
    assert "small model" in p["rationale"]
    assert (
        heuristic_plan(_task("digits-cleaning"))["optimizer"] == "bros"
    )  # the catalogue's bilevel method
    forced = heuristic_plan(_task("digits-mlp"), "sgd")
    assert forced == {"optimizer": "sgd", "hparams": {"lr": pytest.approx(0.15), "momentum": 0.9},
                      "rationale": forced["rationale"]}  # fmt: skip
    long = dataclasses.replace(_task("digits-mlp"), budget=5000)  # a long budget: the default lr
    assert heuristic_plan(long)["hparams"]["lr"] == 1e-3


def test_the_heuristic_prefers_the_structured_methods_when_the_catalogue_has_them(more_methods: None) -> None:  # fmt: skip
    assert heuristic_plan(_task("lowrank-sensing"))["optimizer"] == "imuon"
    assert heuristic_plan(_task("digits-cleaning"))["optimizer"] == "bros"
    assert heuristic_plan(_task("grammar-lm"))["optimizer"] == "adamw"


def test_the_llm_schema_offers_each_applicable_method_with_its_own_grid() -> None:
    task = _task("digits-mlp")
    schema = plan_schema(task.options)
    ok = schema.model_validate({"optimizer": "sgd", "hparams": {"lr": 0.1, "momentum": 0.9}})
    assert ok.model_dump() == {"optimizer": "sgd", "hparams": {"lr": 0.1, "momentum": 0.9}}
    for bad in ({"optimizer": "adamw", "hparams": {"lr": 0.1, "momentum": 0.9}},
                {"optimizer": "adamw", "hparams": {"lr": 0.001, "weight_decay": 1.0}},
                {"optimizer": "imuon", "hparams": {"lr": 0.001}}):  # fmt: skip
        with pytest.raises(ValueError):
            schema.model_validate(bad)
    assert grid({"low": 1e-4, "high": 0.1, "default": 1e-3, "log": True}) == (
        1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1)  # fmt: skip
    assert grid({"low": 0.0, "high": 0.99, "default": 0.9, "log": False})[-2:] == (0.9, 0.99)


def test_the_llm_path_reasks_an_invalid_reply_and_respects_a_forced_optimizer() -> None:
    replies = iter([{"optimizer": "adamw", "hparams": {"lr": 0.001, "weight_decay": 1.0}},
                    {"optimizer": "adamw", "hparams": {"lr": 0.003, "weight_decay": 0.01}}])  # fmt: skip
    seen: list[Any] = []

    def reply(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        seen.append(schema)
        return json.dumps(next(replies))

    out = plan({}, _runtime(_task("digits-mlp"), FormulatorConfig(), FunctionLLM(reply)))
    assert out["by"] == "llm" and out["plan"] == {"optimizer": "adamw", "hparams": {"lr": 0.003, "weight_decay": 0.01}}  # fmt: skip
    assert seen[0].__name__ == "TrainPlan"
    forced = FunctionLLM(lambda m, t, s: json.dumps({"optimizer": "sgd", "hparams": {"lr": 0.1, "momentum": 0.9}}))  # fmt: skip
    out = plan({}, _runtime(_task("digits-mlp"), FormulatorConfig(optimizer="sgd"), forced))
    assert out["plan"]["optimizer"] == "sgd"
    refused = FunctionLLM(lambda m, t, s: json.dumps({"optimizer": "adamw", "hparams": {"lr": 0.1, "weight_decay": 0.1}}))  # fmt: skip
    out = plan({}, _runtime(_task("digits-mlp"), FormulatorConfig(optimizer="sgd"), refused))
    assert out["plan"] == {} and "error" in out  # adamw is not offered: never valid


def test_a_forced_optimizer_that_does_not_exist_is_refused_before_the_run(tmp_path: Any) -> None:
    settings = RunSettings(memory="none", agent={"optimizer": "nope"})
    with pytest.raises(ConfigError, match=r"agent.optimizer=nope: unknown optimizer 'nope'"):
        run_task("formulator", resolve_task("train/digits-mlp"), settings, tmp_path / "r")


@pytest.mark.slow
def test_an_eval_row_per_method_on_one_problem(tmp_path: Any) -> None:
    settings = RunSettings(memory="none", agent={"tune_trials": 2})
    summary = run_eval("formulator", "train", settings, tmp_path / "ev", split="dev", seeds=1,
                       tasks=["lowrank-sensing"])  # fmt: skip
    rows = [json.loads(line) for line in (tmp_path / "ev" / "results.jsonl").read_text().splitlines()]  # fmt: skip
    by = {r["method"]: r for r in rows}
    assert set(by) == {"formulator", "adamw", "tuned"} and not summary["errors"]
    assert (
        by["formulator"]["extra"]["plan"]["optimizer"] == "imuon"
    )  # the heuristic's low-rank rule
    lowrank = [n for n in catalogue.ENTRIES if "lowrank" in catalogue.info(n)["kinds"]]
    assert len(by["tuned"]["extra"]["search"]) == 2 * len(
        lowrank
    )  # every applicable method, 2 trials each
    # the heuristic's larger step beats the fixed default on this short budget
    assert by["formulator"]["best_score"] < by["adamw"]["best_score"]
