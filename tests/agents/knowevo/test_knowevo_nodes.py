"""KnowEvo's graph node (``nodes.step``) called directly, step by step, offline."""

from __future__ import annotations

from langgraph.graph import END
from langgraph.runtime import Runtime

from optiforge.agents.kit.context import AgentContext
from optiforge.agents.knowevo import nodes
from optiforge.agents.knowevo.config import KnowEvoConfig
from optiforge.evals.registry import resolve_task


def test_step_called_directly_seeds_rolls_out_and_expands() -> None:
    task = resolve_task("protein/thermostability-a@dev")
    config = KnowEvoConfig(picks_per_rollout=4, expand_every=1, min_measured=8,
                           tests_per_expansion=2, recall_blocks=0)  # fmt: skip
    ctx: nodes.Ctx = AgentContext(task=task, config=config, eval_budget=16, seed=0)
    runtime = Runtime(context=ctx)

    first = nodes.step({}, runtime)
    # the first step seeds the tree with its root (one candidate test) and measures the
    # root's four top-ranked held-in variants
    (root,) = first["nodes"]
    assert root["by"] == "root" and root["pulls"] == 1 and first["tests"] == 1
    top = sorted(range(len(root["scores"])), key=lambda i: (-root["scores"][i], i))[:4]
    assert list(first["measured"]) == [str(i) for i in top]
    assert list(first["measured"].values()) == task.measure(top)
    assert first["rollouts"] == 1 and first["expansions"] == 0 and nodes.after(first) == "step"  # type: ignore[arg-type]

    second = nodes.step(first, runtime)  # type: ignore[arg-type]
    # 8 measured = min_measured: an expansion of guided edits spends its two tests
    assert len(second["measured"]) == 8 and second["expansions"] == 1
    assert second["tests"] == 1 + 2
    assert all(n["by"] == "guided" for n in second["nodes"][1:])

    state = second
    while not state.get("done"):
        state = nodes.step(state, runtime)  # type: ignore[arg-type]
    assert len(state["measured"]) == 16 and state["rollouts"] == 4 and nodes.after(state) == END  # type: ignore[arg-type]
    assert state["best_found"] == sorted(state["best_found"])  # best so far, per measurement
