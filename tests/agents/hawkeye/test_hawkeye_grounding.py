"""Hawkeye grounded in measurements: bottleneck-driven strategy choice, the check that an
attempt applied the strategy it was asked for, and the agentic tool loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _kernels import GOOD_SOFTMAX, TORCH_SOFTMAX

from optiforge.agents.hawkeye.problem import KernelProblem, strategy_checks
from optiforge.agents.hawkeye.proposers import LLMKernelProposer
from optiforge.agents.hawkeye.strategies import KernelFacts, bottlenecks, choose_strategies
from optiforge.agents.kit import RunContext, SearchConfig, run_search
from optiforge.agents.kit.tools import ToolsConfig
from optiforge.evals.suites.kernelarena import KernelArenaBenchmark
from optiforge.testing import FunctionLLM

GOOD, BAD = GOOD_SOFTMAX, TORCH_SOFTMAX


def _task(name: str):  # type: ignore[no-untyped-def]
    return next(t for t in KernelArenaBenchmark().tasks("dev") if t.name == name)


def test_measured_bottlenecks_reorder_the_strategies() -> None:
    mm = KernelFacts(matmul=True, bound="compute")
    plain = [s.name for s in choose_strategies(mm, "interpreter", 3)]
    measured = bottlenecks(
        mm, {"cost_launches": 3.0, "cost_amplification": 2.0, "cost_tensor_cores": 0.0}
    )
    assert set(measured) == {
        "fusion",
        "shared_memory_staging",
        "tiling_autotune",
        "tensor_cores_low_precision",
    }
    assert "3 launches" in measured["fusion"][1]
    grounded = [s.name for s in choose_strategies(mm, "interpreter", 3, measured)]
    assert (
        grounded[0] == "tensor_cores_low_precision"
        and "fusion" in grounded
        and "fusion" not in plain
    )
    assert bottlenecks(mm, {}) == {}  # nothing counted (a GPU run): the facts alone decide
    memory = KernelFacts(bound="memory")
    assert set(bottlenecks(memory, {"cost_launches": 1.0, "cost_amplification": 1.0})) == {
        "coalesced_vectorized"
    }


def test_attempts_record_whether_the_requested_strategy_is_in_the_kernel(tmp_path: Path) -> None:
    # the model is asked for a strategy (shared-memory staging first on a softmax) and writes
    # the same staged kernel whatever it is asked: applied once, flagged when asked for another
    llm = FunctionLLM(lambda messages, tools, schema: f"```python\n{GOOD}```")
    problem = KernelProblem(_task("torch_softmax"), "interpreter")
    ctx = RunContext(llm=llm, seed=0, run_dir=tmp_path / "run", agent="hawkeye")
    proposer = LLMKernelProposer(strategies_per_task=2, tools=ToolsConfig(use=[], pool=False))
    result = run_search(
        problem, proposer, ctx, SearchConfig(max_evaluations=3, proposals_per_round=2, max_rounds=2)
    )
    llm_attempts = [e for e in result.history if e.origin == "llm"]
    asked = [e.payload["strategy"] for e in llm_attempts]
    assert (
        len(set(asked)) == 2 and result.history[0].payload["strategy_applied"] is None
    )  # the seed claims nothing
    for e in llm_attempts:
        assert e.payload["strategy_applied"] == (e.payload["strategy"] in e.payload["applied"])
    checks = strategy_checks(result.history)
    assert checks["claimed"] == len(llm_attempts) and 0 < checks["applied"] < checks["claimed"]
    assert len(checks["flagged"]) == checks["claimed"] - checks["applied"]
    assert any("does not apply it" in lesson for lesson in result.lessons)


def test_the_model_tests_drafts_with_tools_before_it_answers(tmp_path: Path) -> None:
    seen: list[str] = []

    def model(messages: list[dict[str, Any]], tools: Any, schema: Any) -> Any:
        results = [str(m["content"]) for m in messages if m["role"] == "tool"]
        seen[:] = results
        if not results:  # first turn: try the torch draft
            return {
                "content": None,
                "tool_calls": [{"name": "test_kernel", "arguments": {"code": BAD}}],
            }
        if len(results) == 1:
            return {"content": None, "tool_calls": [{"name": "check_strategy",
                                                      "arguments": {"code": GOOD, "strategy": "shared_memory_staging"}}]}  # fmt: skip
        if len(results) == 2:
            return {
                "content": None,
                "tool_calls": [{"name": "test_kernel", "arguments": {"code": GOOD}}],
            }
        return f"```python\n{GOOD}```"

    problem = KernelProblem(_task("torch_softmax"), "interpreter")
    ctx = RunContext(llm=FunctionLLM(model), seed=0, run_dir=tmp_path / "run", agent="hawkeye")
    proposer = LLMKernelProposer(strategies_per_task=1, tools=ToolsConfig(use=["test_kernel", "check_strategy"],
                                                                          pool=False, max_steps=5))  # fmt: skip
    result = run_search(
        problem, proposer, ctx, SearchConfig(max_evaluations=2, proposals_per_round=1, max_rounds=2)
    )
    assert "rejected by the static checks" in seen[0] and "torch.softmax" in seen[0]
    assert seen[1].startswith("applied")
    assert seen[2].startswith("correct on 4/4 dev cases") and "cost model" in seen[2]
    assert (
        result.n_evaluations == 2 and result.history[-1].passed
    )  # tool runs are outside the budget
