"""Small budgets that change what a run measures say so (issue 42): knowevo below the
budget whose run asks its LLM, smith's templates baseline limited like the agent, the
formulator's unspent --budget in its result."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from optiforge.agents.kit import RunContext
from optiforge.agents.knowevo.agent import first_llm_budget
from optiforge.agents.knowevo.config import KnowEvoConfig
from optiforge.agents.smith.baselines import templates
from optiforge.config import RunSettings
from optiforge.evals.registry import resolve_task
from optiforge.harness.runner import run_task
from optiforge.testing import FunctionLLM


def _never(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
    raise AssertionError("the LLM was called")


def test_knowevo_first_llm_budget_follows_its_config() -> None:
    assert first_llm_budget(KnowEvoConfig()) == 19  # 3 rollouts of 6 picks, then one more
    cfg = KnowEvoConfig(min_measured=8, picks_per_rollout=3, expand_every=2)
    assert first_llm_budget(cfg) == 4 * 3 + 1  # ceil(8/3)=3 rollouts, next multiple of 2


def test_knowevo_llm_run_too_small_to_ask_the_llm_says_so(tmp_path: Path) -> None:
    settings = RunSettings(budget=8, model="scripted", memory="none")
    s = run_task("knowevo", resolve_task("protein/thermostability-a@dev"), settings, tmp_path,
                 llm=FunctionLLM(_never), with_baseline=False)  # fmt: skip
    assert s.llm_calls == 0
    (note,) = s.notes
    assert note.startswith("budget 8 < 19") and "--budget 19" in note


def test_smith_templates_baseline_is_limited_by_the_budget() -> None:
    task = resolve_task("procedural/train-families@dev")
    full = templates(task, RunContext(), None)
    assert full.extra["built"] == len(task.build_tasks) == 9
    six = templates(task, RunContext(), 6)
    assert six.extra["built"] == 6 and six.extra["budget"] == 6


def test_smith_budget_below_the_build_tasks_is_noted(tmp_path: Path) -> None:
    settings = RunSettings(budget=6, memory="none")
    s = run_task("smith", resolve_task("procedural/train-families@dev"), settings, tmp_path,
                 with_baseline=False)  # fmt: skip
    (note,) = s.notes
    assert "budget 6 validations < 9 build tasks" in note


@pytest.mark.slow
def test_formulator_result_carries_its_budget(tmp_path: Path) -> None:
    task = resolve_task("bbowp/" + _first_bbowp() + "@dev")
    s = run_task("formulator", task, RunSettings(budget=task.budget + 5, memory="none"),
                 tmp_path, with_baseline=False)  # fmt: skip
    assert s.extra["budget"] == task.budget and s.extra["budget_asked"] == task.budget + 5
    (note,) = s.notes
    assert f"--budget {task.budget + 5} is not used" in note


def _first_bbowp() -> str:
    from optiforge.evals.registry import get_benchmark

    return str(get_benchmark("bbowp").tasks("dev")[0].name)
