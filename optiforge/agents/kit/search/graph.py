"""The search graph: its nodes wired with the routing between them."""

from __future__ import annotations

import functools
from typing import Any

from optiforge.agents.kit.context import RunContext
from optiforge.agents.kit.search.loop import SearchLoop
from optiforge.agents.kit.search.nodes import (
    evaluate_node,
    materialize_node,
    propose_ahead_node,
    propose_node,
    reflect_node,
    select_node,
)
from optiforge.agents.kit.search.protocols import AnyProposer, SearchProblem
from optiforge.agents.kit.search.records import SearchConfig, SearchState


def _after_propose(state: SearchState) -> str:
    return "select" if state.get("done") else "materialize"


def _after_materialize(loop: SearchLoop, state: SearchState) -> str:
    """``overlap`` from round 1 on: the next round is proposed before this one evaluates
    (round 0's seeds are evaluated first: round 1 is proposed from their results)."""
    if loop.overlapping(state) and state.get("round", 0) >= 1:
        return "propose_ahead"
    return "evaluate"


def _after_select(state: SearchState) -> str:
    from langgraph.graph import END

    return END if state.get("done") else "propose"


def _after_select_overlap(state: SearchState) -> str:
    from langgraph.graph import END

    if state.get("done"):
        return END
    if state.get("batch_ready"):
        return "evaluate" if state.get("draining") else "propose_ahead"
    return "propose"


def search_graph(
    problem: SearchProblem, proposer: AnyProposer, config: SearchConfig, *, id_prefix: str = ""
) -> Any:
    """The propose -> materialize -> evaluate -> reflect -> select graph, uncompiled.

    id_prefix: prepended to candidate ids, so several searches sharing one run directory
    (e.g. one per BO round) never share ids or cached evaluations.
    """
    return loop_graph(SearchLoop(problem, proposer, config, id_prefix, problem.evaluator()))


def loop_graph(loop: SearchLoop) -> Any:
    from langgraph.graph import END, START, StateGraph

    graph = StateGraph(SearchState, context_schema=RunContext)
    nodes = {
        "propose": propose_node,
        "materialize": materialize_node,
        "evaluate": evaluate_node,
        "reflect": reflect_node,
        "select": select_node,
    }
    if loop.config.overlap is not False:  # on, or decided at round 0 (None)
        nodes["propose_ahead"] = propose_ahead_node
    for name, fn in nodes.items():
        graph.add_node(name, functools.partial(fn, loop))
    graph.add_edge(START, "propose")
    graph.add_conditional_edges("propose", _after_propose, ["materialize", "select"])
    graph.add_edge("evaluate", "reflect")
    graph.add_edge("reflect", "select")
    if loop.config.overlap is not False:
        graph.add_conditional_edges(
            "materialize",
            functools.partial(_after_materialize, loop),
            ["propose_ahead", "evaluate"],
        )
        graph.add_edge("propose_ahead", "evaluate")
        graph.add_conditional_edges(
            "select", _after_select_overlap, ["propose_ahead", "evaluate", "propose", END]
        )
    else:
        graph.add_edge("materialize", "evaluate")
        graph.add_conditional_edges("select", _after_select, ["propose", END])
    return graph


def build_search_graph(
    problem: SearchProblem,
    proposer: AnyProposer,
    config: SearchConfig,
    *,
    checkpointer: Any | None = None,
    id_prefix: str = "",
) -> Any:
    """``search_graph`` compiled with ``checkpointer``."""
    graph = search_graph(problem, proposer, config, id_prefix=id_prefix)
    return graph.compile(checkpointer=checkpointer)
