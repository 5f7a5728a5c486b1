"""SMITH's graph nodes and routes (``nodes.py``) called directly, offline."""

from __future__ import annotations

from langgraph.graph import END
from langgraph.runtime import Runtime

from optiforge.agents.kit.context import AgentContext
from optiforge.agents.smith import nodes
from optiforge.agents.smith.config import SmithConfig
from optiforge.evals.registry import resolve_task


def test_build_and_use_steps_called_directly_within_the_validation_budget() -> None:
    task = resolve_task("procedural/train-families@dev")
    ctx: nodes.Ctx = AgentContext(task=task, config=SmithConfig(), eval_budget=2, seed=0)
    runtime = Runtime(context=ctx)

    state = nodes.start({}, runtime)
    assert state["pool"] == [] and state["spent"] == 0  # no memory: an empty pool
    assert nodes.after_start(state, runtime) == "build"  # type: ignore[arg-type]
    for _ in range(3):  # the template library passes validation; the third finds the budget spent
        state |= nodes.build_step(state, runtime)  # type: ignore[arg-type]
    assert [t["build"] for t in state["pool"]] == ["b0", "b1"] and state["spent"] == 2
    assert all(r["passed"] for r in state["log"]) and len(state["log"]) == 2
    assert state["errors"] == ["b2: the budget of 2 validations is spent"]
    assert state["builds"] == 3 and nodes.after_build(state, runtime) == "build"  # type: ignore[arg-type]

    state |= nodes.use_step(state, runtime)  # type: ignore[arg-type]
    asked = task.use_questions[: nodes.USE_CHUNK]
    assert state["asked"] == nodes.USE_CHUNK and list(state["calls"]) == [q["id"] for q in asked]
    assert not state["done"] and nodes.after_use(state, runtime) == "use"  # type: ignore[arg-type]
    names = {t["name"] for t in state["pool"]}
    assert all(c["name"] in names for made in state["calls"].values() for c in made)


def test_the_routes_read_the_run_s_config_and_task() -> None:
    task = resolve_task("procedural/train-families@dev")
    ctx: nodes.Ctx = AgentContext(task=task, config=SmithConfig(build=False), seed=0)
    runtime = Runtime(context=ctx)
    assert nodes.after_start({}, runtime) == "use"  # a student only uses the pool
    done = {"builds": len(task.build_tasks), "done": True}
    assert nodes.after_build(done, runtime) == "use" and nodes.after_use(done, runtime) == END  # type: ignore[arg-type]
    assert nodes.validation_budget(task, None) == task.budget == 3 * len(task.build_tasks)
