"""agent-cbo's nodes called directly, with a hand-built ``AgentContext``: the state each
returns is what the next one reads, and the run's session cache lives in ``ctx.memo``."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END
from langgraph.runtime import Runtime

from optiforge.agents.agent_cbo import AgentCBOConfig
from optiforge.agents.agent_cbo.nodes import (
    after_step,
    calibration,
    cbo_step,
    discovery,
    language_prior,
    sessions,
)
from optiforge.agents.kit import RunContext
from optiforge.agents.kit.context import AgentContext
from optiforge.evals.suites.cbo import CBOBenchmark
from optiforge.evals.suites.cbo.protocol import CausalBOTask
from optiforge.runs import ListTracer


def test_the_first_nodes_hand_their_state_on_and_share_one_session() -> None:
    task = next(t for t in CBOBenchmark().tasks("dev") if t.name == "toy_graph")
    assert isinstance(task, CausalBOTask)
    tracer = ListTracer()
    ctx = AgentContext.of(RunContext(tracer=tracer, seed=0), task,
                          AgentCBOConfig(grid_1d=41, n_obs=100), 2)  # fmt: skip
    rt: Runtime[Any] = Runtime(context=ctx)
    state: dict[str, Any] = dict(language_prior({}, rt))
    assert state == {"beliefs": []} and tracer.of("cbo_language_prior")[0]["offline"]
    state.update(discovery(state, rt))  # type: ignore[arg-type]
    assert state["round"] == 0 and state["trials"] == [] and state["committed"]
    scored = calibration(state, rt)  # type: ignore[arg-type]
    assert set(scored["deltas"]) == set(scored["data_deltas"])
    step = cbo_step(state, rt)  # type: ignore[arg-type]
    assert len(step["trials"]) == 1 and step["round"] == 1 and not step.get("done")
    state.update(step, trial_logs=step["trial_logs"])
    # the session discovery made and the step moved on is the one the state describes
    assert sessions(ctx) is sessions(ctx) and not tracer.of("cbo_resume")
    assert after_step(state) == "calibration"  # type: ignore[arg-type]
    last = cbo_step(state, rt)  # type: ignore[arg-type]
    assert last["done"] and last["stop_reason"] == "intervention budget spent"
    assert after_step({**state, **last}) == END  # type: ignore[typeddict-item]
