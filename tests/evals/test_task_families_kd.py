"""The task families of hdbo, kernelarena, saddle and code tasks: every task of the suite
is one, other suites' tasks are not, and an agent's spec refuses them by name."""

from __future__ import annotations

import pytest

from optiforge.agents import get_agent
from optiforge.errors import ConfigError
from optiforge.evals.protocol import CodeTask, SeededTask
from optiforge.evals.registry import get_benchmark
from optiforge.evals.suites.hdbo.protocol import HDBOTask
from optiforge.evals.suites.kernelarena.protocol import KernelTask
from optiforge.evals.suites.saddle.protocol import SaddleTask

FAMILIES = {"hdbo": HDBOTask, "kernelarena": KernelTask, "saddle": SaddleTask, "funcfit": CodeTask}
AGENTS = {"hdbo": "kernel-discovery", "kernelarena": "hawkeye", "saddle": "terminal",
          "funcfit": "evolve"}  # fmt: skip


@pytest.mark.parametrize("suite", sorted(FAMILIES))
def test_each_suites_tasks_are_of_its_family_and_no_other(suite: str) -> None:
    tasks = get_benchmark(suite).tasks("dev")
    assert tasks
    for name, family in FAMILIES.items():
        got = {isinstance(t, family) for t in tasks}
        assert got == {name == suite}, (suite, family.__name__)
    assert get_agent(AGENTS[suite]).task_type is FAMILIES[suite]


def test_a_kernel_task_is_seeded_and_a_funcfit_task_is_not() -> None:
    assert all(isinstance(t, SeededTask) for t in get_benchmark("kernelarena").tasks("dev"))
    assert not any(isinstance(t, SeededTask) for t in get_benchmark("funcfit").tasks("dev"))


def test_the_spec_refuses_another_familys_task_naming_what_it_lacks() -> None:
    task = get_benchmark("funcfit").tasks("dev")[0]
    with pytest.raises(
        ConfigError, match=r"hawkeye runs on kernelarena tasks \(KernelTask\); funcfit/.*has no"
    ):
        get_agent("hawkeye").check_task(task)
    saddle = get_benchmark("saddle").tasks("dev")[0]
    assert get_agent("terminal").check_task(saddle) is saddle
