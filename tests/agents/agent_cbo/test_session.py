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
