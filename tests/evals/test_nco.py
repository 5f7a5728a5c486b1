"""The nco suite: reference search, the shipped teacher, portfolios built in the sandbox."""

from __future__ import annotations

import numpy as np
import pytest

from optiforge.evals.registry import get_benchmark, resolve_task
from optiforge.solvers.nco.programs import FEATURES, SEED_BANK
from optiforge.solvers.nco.tsp import local_search, tour_length, uniform_instances


def _portfolio(names: list[str]) -> dict:
    return {"programs": {k: SEED_BANK[k] for k in names},
            "router": np.zeros((len(names), len(FEATURES))).tolist()}  # fmt: skip


def test_local_search_finds_the_optimum_of_a_square_and_improves_nearest_neighbour() -> None:
    square = np.array([[0, 0], [1, 1], [1, 0], [0, 1]], dtype=float)
    tour, length = local_search(square, 2)
    assert length == pytest.approx(4.0) and sorted(tour) == [0, 1, 2, 3]
    x = uniform_instances(20, 1, 7)[0]
    _, best = local_search(x, 4)
    nn = _portfolio(["nearest"])
    from optiforge.solvers.nco.programs import construct

    assert best <= tour_length(x, construct(nn, x)["tour"]) + 1e-9


def test_the_shipped_teacher_is_a_real_policy() -> None:
    task = resolve_task("nco/tsp20@dev")
    ref = np.mean(task.reference)
    teacher = np.mean(
        [tour_length(x, t) for x, t in zip(task.instances, task.teacher_tours, strict=True)]
    )
    assert all(sorted(t) == list(range(20)) for t in task.teacher_tours)
    assert teacher < 1.15 * ref  # single start, greedy: within 15% of the best known
    traj = task.teacher_trajectories(2, 0)
    assert traj[0]["probs"].shape == (19, 20)
    np.testing.assert_allclose(traj[0]["probs"].sum(-1), 1.0, atol=1e-5)
    for t, step in enumerate(traj[0]["probs"]):  # visited cities get no mass
        assert step[traj[0]["tour"][: t + 1]].sum() < 1e-6


def test_a_portfolio_is_built_and_scored_in_the_sandbox() -> None:
    task = resolve_task("nco/tsp20@dev")
    nn = task.evaluate(_portfolio(["nearest"]))
    assert nn.passed and 0 < nn.value < 30
    assert set(nn.metrics) >= {"gap_pct", "gap_to_teacher_pct", "agreement", "router_accuracy",
                               "portfolio_size", "program_lines"}  # fmt: skip
    assert nn.details["stages"]["late"] == {"nearest": 1.0}
    far = task.evaluate(_portfolio(["farthest"]))
    assert far.value > nn.value and far.metrics["agreement"] < nn.metrics["agreement"]


def test_bad_portfolios_fail_with_a_reason() -> None:
    task = resolve_task("nco/tsp20@dev")
    crash = {
        "programs": {"x": "def scores(state):\n    return 1 / 0\n"},
        "router": [[0.0] * len(FEATURES)],
    }
    bad = task.evaluate(crash)
    assert not bad.passed and "ZeroDivisionError" in bad.details["reason"]
    shape = task.evaluate({"programs": {"nearest": SEED_BANK["nearest"]}, "router": [[0.0]]})
    assert not shape.passed and "router" in shape.details["reason"]


def test_splits_hold_the_shifts() -> None:
    bench = get_benchmark("nco")
    held = bench.tasks("heldout")
    assert {(t.n, t.distribution) for t in held} >= {(50, "uniform"), (100, "uniform"),
                                                     (20, "clustered"), (50, "clustered")}  # fmt: skip
    task = held[0]
    practice = task.practice_instances(4, seed=0)
    taught = np.stack([t["coords"] for t in task.teacher_trajectories(4, seed=0)])
    assert practice.shape == (4, 20, 2) and not np.allclose(practice, taught)
    assert not any(np.allclose(p, x) for p in practice for t in held for x in t.instances[:4]
                   if t.n == 20)  # fmt: skip
    tours = task.construct(_portfolio(["nearest"]), list(practice))
    assert all(sorted(t) == list(range(20)) for t in tours if t is not None) and None not in tours


def test_stage_analysis_in_reports(tmp_path) -> None:  # type: ignore[no-untyped-def]
    bench = get_benchmark("nco")
    rows = [{"method": "epb", "seed": s, "verification": {
        "metrics": {"gap_pct": 10.0 + s, "agreement": 0.7},
        "details": {"stages": {"early": {"0.75nearest-0.25insertion": 0.8, "homeward": 0.2},
                               "middle": {"0.75nearest-0.25insertion": 1.0, "homeward": 0.0},
                               "late": {"0.75nearest-0.25insertion": 0.3, "homeward": 0.7}}}}}
            for s in (0, 1)]  # fmt: skip
    sm = bench.suite_metrics(rows)
    assert sm["epb"]["gap_pct"]["mean"] == pytest.approx(10.5)
    assert sm["epb"]["stages"]["late"] == {
        "nearest": pytest.approx(0.3),
        "homeward": pytest.approx(0.7),
    }
    text = "\n".join(bench.report_sections({"suite_metrics": sm}))
    assert "| epb | late | homeward 0.70, nearest 0.30 |" in text
    assert bench.report_plots({"suite_metrics": sm}, rows, tmp_path)[0].is_file()


def test_classic_constructions_are_tours_and_farthest_insertion_beats_nearest_neighbour() -> None:
    """The benchmark's classic baselines: both return permutations from the start city; on
    uniform TSP-20 farthest insertion is shorter on average (the textbook ordering)."""
    import numpy as np

    from optiforge.solvers.nco.tsp import (
        farthest_insertion,
        nearest_neighbour,
        tour_length,
        uniform_instances,
    )

    xs = uniform_instances(20, 16, 7)
    fi = [farthest_insertion(x, start=3) for x in xs]
    nn = [nearest_neighbour(x, start=3) for x in xs]
    assert all(sorted(t) == list(range(20)) and t[0] == 3 for t in fi + nn)
    ratio = np.mean(
        [tour_length(x, a) / tour_length(x, b) for x, a, b in zip(xs, fi, nn, strict=True)]
    )
    assert ratio < 0.97
