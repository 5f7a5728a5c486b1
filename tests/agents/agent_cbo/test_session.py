"""``CBOSession`` (the step-wise back end the agent drives) against ``run_cbo``."""

from __future__ import annotations

import networkx as nx
import pytest

from optiforge.evals.suites.cbo.scms import build
from optiforge.solvers.cbo import CBOConfig, run_cbo
from optiforge.solvers.cbo.session import CBOSession, graph_sets


def test_session_on_the_true_graph_reproduces_run_cbo() -> None:
    scm = build("toy_graph").scm
    cfg = CBOConfig(n_trials=6, grid_1d=41)
    ref = run_cbo(scm, config=cfg, seed=3)
    sess = CBOSession(scm, scm.graph, cfg, seed=3)
    while sess.step() is not None:
        pass
    assert sess.done
    assert [t.model_dump() for t in sess.trace.trials] == [t.model_dump() for t in ref.trials]


def test_graph_swap_keeps_interventional_data() -> None:
    scm = build("toy_graph").scm
    cfg = CBOConfig(n_trials=5, grid_1d=41)
    wrong = nx.DiGraph([("X", "Y")])  # Z cut off: only {X} is a MIS here
    wrong.add_node("Z")
    sess = CBOSession(scm, wrong, cfg, seed=0)
    assert sess.sets == [("X",)]
    for _ in range(2):
        sess.step()
    assert [t.exploration_set for t in sess.trace.trials] == [["X"], ["X"]]
    sess.set_graph(scm.graph)
    assert sess.sets == [("X",), ("Z",)]
    rec = sess.step()  # {Z} has no data yet: its initial design comes first
    assert rec is not None and rec.kind == "init" and rec.exploration_set == ["Z"]
    x, y = sess.observed_outcomes(("X",))
    assert x.shape == (2, 1) and y.shape == (2,)
    assert len(sess.interventions) == 3
    assert set(sess.interventions[0].units) == {"X", "Z", "Y"}


def test_fallback_sets_when_graph_cuts_every_path() -> None:
    scm = build("toy_graph").scm
    empty = nx.DiGraph()
    empty.add_nodes_from(["X", "Z", "Y"])
    assert graph_sets(empty, scm, 2) == [("X",), ("Z",)]
    with pytest.raises(Exception, match="DAG"):
        CBOSession(scm, nx.DiGraph([("X", "Z"), ("Z", "X")]), CBOConfig(n_trials=2), seed=0)


def test_suite_notes_give_y_star_for_regret() -> None:
    from optiforge.evals.suites.cbo import CBOBenchmark

    bench = CBOBenchmark()
    notes = bench.notes("dev")
    assert len(notes) == 1 + len(bench.tasks("dev"))
    toy = next(t for t in bench.tasks("dev") if t.name == "toy_graph")
    assert f"toy_graph: y* = {toy.true_optimum.value:.4g}" in notes[1]


def test_session_cache_serves_only_the_session_the_state_describes() -> None:
    from optiforge.agents.agent_cbo.config import AgentCBOConfig
    from optiforge.agents.agent_cbo.problem import SessionCache, session_graph
    from optiforge.agents.kit import RunContext
    from optiforge.evals.suites.cbo import CBOBenchmark
    from optiforge.runs import ListTracer

    task = next(t for t in CBOBenchmark().tasks("dev") if t.name == "toy_graph")
    cache = SessionCache(task, AgentCBOConfig(grid_1d=41, n_obs=100), 4)
    tracer = ListTracer()
    ctx = RunContext(tracer=tracer, seed=0)
    sess = cache.new(0)
    sess.set_graph(task.scm.graph)
    state: dict = {"session_graph": session_graph(sess), "trials": [], "trial_logs": []}
    assert cache.get(state, ctx) is sess and not tracer.of("cbo_resume")
    rec = sess.step()
    assert rec is not None
    # The session moved on but the state did not (a node failed before returning it):
    # the cache rebuilds the session the state describes instead of acting on this one.
    stale = cache.get(state, ctx)
    assert stale is not sess and not stale.trace.trials and len(tracer.of("cbo_resume")) == 1
    state = {**state, "trials": [rec.model_dump()], "trial_logs": [sess.trial_log()]}
    again = cache.get(state, ctx)  # rebuilt from the state: the same trial, the same RNG
    assert [t.model_dump() for t in again.trace.trials] == state["trials"]
    assert again.trial_log() == state["trial_logs"][-1]
    assert cache.get(state, ctx) is again and len(tracer.of("cbo_resume")) == 2
    assert cache.get(state, RunContext(tracer=tracer, seed=1)) is not again  # another seed
    scorer = cache.scorer(again)
    assert cache.scorer(again) is scorer
    again.step()
    assert cache.scorer(again) is not scorer  # new units: a new interventional BIC
