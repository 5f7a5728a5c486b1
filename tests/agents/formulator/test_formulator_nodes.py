"""The formulator's nodes called directly, with a hand-built ``AgentContext``."""

from __future__ import annotations

import json
from typing import Any

from langgraph.runtime import Runtime

from optiforge.agents.formulator import FormulatorConfig
from optiforge.agents.formulator.heuristic import heuristic_formulation
from optiforge.agents.formulator.nodes import formulate, revise
from optiforge.agents.kit import RunContext
from optiforge.agents.kit.context import AgentContext
from optiforge.evals.registry import resolve_task
from optiforge.evals.suites.bbowp.protocol import WordProblemTask
from optiforge.testing import FunctionLLM

TASK = "bbowp/pressure-vessel@dev"


def _runtime(config: FormulatorConfig, llm: Any = None) -> Runtime[Any]:
    task = resolve_task(TASK)
    assert isinstance(task, WordProblemTask)
    return Runtime(context=AgentContext.of(RunContext(llm=llm), task, config))


def test_formulate_offline_is_the_heuristic_or_the_default() -> None:
    rt = _runtime(FormulatorConfig())
    out = formulate({}, rt)
    expected = heuristic_formulation(rt.context.task)
    expected.pop("rationale")
    assert out == {"formulation": expected, "by": "heuristic", "reasks": 0}
    assert revise(out, rt) == {}  # no LLM: nothing to revise
    d = formulate({}, _runtime(FormulatorConfig(offline="default")))
    assert d["by"] == "default" and d["formulation"] == rt.context.task.default_formulation()


def test_formulate_with_an_llm_reasks_an_invalid_reply() -> None:
    good = {"variables": [{"name": "radius", "kind": "float", "low": 40, "high": 60}],
            "method": "tpe", "rationale": "r"}  # fmt: skip
    bad = {**good, "variables": [{"name": "radius", "kind": "float", "low": 60, "high": 40}]}
    replies = iter([bad, good])
    llm = FunctionLLM(lambda messages, tools, schema: json.dumps(next(replies)))
    out = formulate({}, _runtime(FormulatorConfig(), llm))
    assert out["by"] == "llm" and out["reasks"] == 1 and out["formulation"]["method"] == "tpe"
