"""Tools agents use: evolve's check_program, AutoREM's run_python, memory's tool pool;
every call runs in the run's sandbox and is a ``tool_call`` event; a model that cannot
call tools is asked without them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from optiforge.config import RunSettings
from optiforge.errors import ConfigError
from optiforge.evals.registry import resolve_task
from optiforge.harness.runner import run_task
from optiforge.runs import iter_events
from optiforge.testing import FunctionLLM

GOOD = "def f(x):\n    return 0.5 * x + np.sin(2 * x)\n"
BUGGY = "def f(x):\n    return 0.5 * x + sin(2 * x)\n"  # NameError at run time


def _tool_results(messages: list[dict[str, Any]]) -> list[str]:
    return [str(m["content"]) for m in messages if m.get("role") == "tool"]


def test_evolve_checks_a_draft_with_its_tool_and_answers_the_fixed_program(tmp_path: Path) -> None:
    seen: list[str] = []

    def model(messages: list[dict[str, Any]], tools: Any, schema: Any) -> Any:
        assert tools and {t["function"]["name"] for t in tools} == {"check_program"}
        results = _tool_results(messages)
        if not results:  # first turn: check the draft
            return {
                "content": None,
                "tool_calls": [{"name": "check_program", "arguments": {"code": BUGGY}}],
            }
        seen.extend(results)
        return f"```python\n{GOOD if 'error' in results[-1] else BUGGY}```"

    settings = RunSettings(budget=3, memory="none", agent={"search": {"proposals_per_round": 2}})
    out = tmp_path / "r"
    summary = run_task("evolve", resolve_task("funcfit/sine@dev"), settings, out,
                       with_baseline=False, llm=FunctionLLM(model))  # fmt: skip
    assert seen and all(r.startswith("error: NameError: name 'sin' is not defined") for r in seen)
    calls = [e for e in iter_events(out) if e["kind"] == "tool_call"]
    assert calls and all(c["name"] == "check_program" and c["ok"] for c in calls)
    rows = [json.loads(x) for x in (out / "evaluations.jsonl").read_text().splitlines()]
    llm_rows = [r for r in rows if r["origin"] == "llm"]
    assert llm_rows and all(r["passed"] for r in llm_rows)  # the answers were the fixed program
    assert summary.llm_calls == 2 * len(calls)  # a checking turn and an answer each


def test_the_check_tool_never_returns_the_score(tmp_path: Path) -> None:
    from optiforge.agents.evolve.problem import CodeProblem
    from optiforge.agents.kit import RunContext
    from optiforge.agents.kit.tools import check_tool
    from optiforge.sandboxes import LocalSandbox

    task = resolve_task("funcfit/sine@dev")
    ctx = RunContext(sandbox=LocalSandbox())
    tool = check_tool(CodeProblem(task, "def f(x):\n    return x\n"), ctx)
    ok = tool.invoke(tool.validate({"code": GOOD}))
    assert ok.startswith("ok: f(-3)=") and "mse" not in ok.lower()
    assert tool.invoke(tool.validate({"code": "x = 1"})).startswith(
        "rejected: code does not define f()"
    )


def test_a_model_without_tool_calls_is_asked_without_tools(tmp_path: Path) -> None:
    def model(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        assert tools is None
        return f"```python\n{GOOD}```"

    llm = FunctionLLM(model)
    llm.supports_tools = False  # type: ignore[attr-defined]
    settings = RunSettings(budget=2, memory="none")
    summary = run_task("evolve", resolve_task("funcfit/sine@dev"), settings, tmp_path / "r",
                       with_baseline=False, llm=llm)  # fmt: skip
    assert summary.status == "finished"


def test_an_unknown_tool_name_is_a_config_error(tmp_path: Path) -> None:
    def model(messages: Any, tools: Any, schema: Any) -> str:
        return f"```python\n{GOOD}```"

    settings = RunSettings(budget=2, memory="none", agent={"tools": {"use": ["telnet"]}})
    with pytest.raises(ConfigError, match="no tool 'telnet' here"):
        run_task("evolve", resolve_task("funcfit/sine@dev"), settings, tmp_path / "r",
                 with_baseline=False, llm=FunctionLLM(model))  # fmt: skip


def test_a_tool_stored_in_memory_is_offered_used_in_the_sandbox_and_counted(tmp_path: Path) -> None:
    from optiforge.memory import Store
    from optiforge.memory import Tool as ToolRecord

    db = f"sqlite:///{tmp_path / 'mem.db'}"
    with Store(db, embedder=None) as store:
        store.add_tool(ToolRecord(
            name="curve_hint", description="A hint about the target curve's shape.",
            json_schema={"type": "object", "properties": {"x": {"type": "number"}}},
            code="import os\n\ndef curve_hint(x):\n    return {'x': x, 'pid1': os.getpid() == 1}\n",
            author_agent="smith"))  # fmt: skip
    used: list[str] = []

    def model(messages: list[dict[str, Any]], tools: Any, schema: Any) -> Any:
        names = {t["function"]["name"] for t in tools}
        assert names == {"check_program", "curve_hint"}
        results = _tool_results(messages)
        if not results:
            return {
                "content": None,
                "tool_calls": [{"name": "curve_hint", "arguments": {"x": 1.5}}],
            }
        used.extend(results)
        return f"```python\n{GOOD}```"

    settings = RunSettings(budget=2, memory=db, agent={"search": {"proposals_per_round": 1}})
    out = tmp_path / "r"
    run_task("evolve", resolve_task("funcfit/sine@dev"), settings, out, with_baseline=False,
             llm=FunctionLLM(model))  # fmt: skip
    assert used and json.loads(used[0]) == {"x": 1.5, "pid1": False}  # ran in the sandbox
    assert [e["name"] for e in iter_events(out) if e["kind"] == "tool_call"] == ["curve_hint"]
    with Store(db, embedder=None) as store:
        rec = store.get_tool("curve_hint")
    assert (rec.usage_count, rec.success_count) == (1, 1)


def test_autorem_runs_its_draft_with_run_python_before_answering(tmp_path: Path) -> None:
    from optiforge.agents.autorem.proposers import counterpart_program

    task = resolve_task("autoro/autoro-dev-d1-0000-s0@dev")
    good = counterpart_program(task.instance.problem)
    ran: list[str] = []

    def model(messages: list[dict[str, Any]], tools: Any, schema: Any) -> Any:
        results = _tool_results(messages)
        if not results:
            return {"content": None, "tool_calls": [
                {"name": "run_python", "arguments": {"code": "print(6 * 7)"}}]}  # fmt: skip
        ran.extend(results)
        return f"```python\n{good}\n```"

    settings = RunSettings(memory="none", agent={"max_attempts": 1})
    out = tmp_path / "r"
    summary = run_task("autorem", task, settings, out, with_baseline=False, llm=FunctionLLM(model))
    assert ran and json.loads(ran[0])["stdout"].strip() == "42"
    assert [e["name"] for e in iter_events(out) if e["kind"] == "tool_call"] == ["run_python"]
    assert summary.llm_calls == 2
