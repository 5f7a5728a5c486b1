"""AutoREM's nodes called directly, with a hand-built ``AgentContext``: offline, the
nodes write the reference program, the verifier accepts it, and the routes end the run."""

from __future__ import annotations

from typing import Any

from autorem_helpers import task
from langgraph.runtime import Runtime

from optiforge.agents.autorem import AutoREMConfig
from optiforge.agents.autorem.nodes import after_model, after_run, model, retrieve, run, write
from optiforge.agents.autorem.problem import with_timeout
from optiforge.agents.kit import RunContext
from optiforge.agents.kit.context import AgentContext
from optiforge.evals.suites.autoro.protocol import ROTask
from optiforge.runs import ListTracer


def test_offline_nodes_write_run_and_accept_the_reference_program() -> None:
    t = task("dev", 0, 1)
    assert isinstance(t, ROTask) and not t.text_only
    tracer = ListTracer()
    ctx = AgentContext.of(RunContext(tracer=tracer, seed=0), t, AutoREMConfig())
    rt: Runtime[Any] = Runtime(context=ctx)
    state: dict[str, Any] = dict(model({}, rt))
    assert state == {"attempts": [], "llm_calls": 0, "tokens": 0, "model": None}
    assert after_model(state, rt) == "retrieve"  # type: ignore[arg-type]
    state.update(retrieve(state, rt))  # type: ignore[arg-type]
    assert state["retrieved"] == [] and state["messages"][1]["content"] == t.description
    state.update(write(state, rt))  # type: ignore[arg-type]
    assert state["attempts"][0]["origin"] == "reference"
    state.update(run(state, rt))  # type: ignore[arg-type]
    att = state["attempts"][0]
    assert att["passed"] and state["done"] and state["stop_reason"] == "correct"
    assert att["tolerance"] == t.tolerance_line()
    assert after_run(state, rt) == "finish"  # type: ignore[arg-type]
    assert [e["passed"] for e in tracer.of("autorem_attempt")] == [True]


def test_the_agents_own_timeout_leaves_the_task_as_it_is() -> None:
    t = task("dev", 0, 1)
    short = with_timeout(t, 5.0)
    assert short is not t and short.timeout_s == 5.0 and t.timeout_s == 60.0
    assert (short.name, short.description, short.text_only) == (t.name, t.description, t.text_only)
    assert with_timeout(t, t.timeout_s) is t
