"""AutoRO-Bench generator: deterministic, feasible, bounded, reference-verified, OOD heldout."""

from __future__ import annotations

import json

import numpy as np
import pytest

from optiforge.errors import ConfigError, InvalidTask
from optiforge.evals.protocol import Benchmark, Task
from optiforge.evals.suites.autoro import (
    AutoROBenchmark,
    generate,
    make_instance,
)
from optiforge.solvers.robust import (
    nominal_counterpart,
    reference_counterpart,
    verify,
)
from optiforge.solvers.robust.instance import parse_instance

N = 30


@pytest.fixture(scope="module")
def splits() -> dict:
    return {s: generate(s, N, seed=s_i) for s_i, s in enumerate(("dev", "test", "heldout"))}


@pytest.mark.slow
@pytest.mark.parametrize("split", ["dev", "test", "heldout"])
def test_reference_passes_every_generated_instance(splits: dict, split: str) -> None:
    for inst in splits[split]:
        p = inst.problem
        lo, hi = p.bounds()
        assert np.isfinite(lo).all() and np.isfinite(hi).all()  # bounded by construction
        sol = reference_counterpart(p).solve()  # feasible: raises SolverError otherwise
        assert sol.status == "optimal"
        assert sol.objective == pytest.approx(inst.reference_objective, rel=1e-7, abs=1e-7)
        # closed forms for some rows; the explicit inner problems for all rows
        for method in ("closed", "primal"):
            v = verify(
                p, sol.x, sol.objective, reference_objective=inst.reference_objective, method=method
            )
            assert v.correct, f"{inst.id}: {v.report()}"
        nom = nominal_counterpart(p).solve()
        v = verify(p, nom.x, nom.objective, reference_objective=inst.reference_objective)
        assert not v.correct, inst.id  # every instance separates robust from nominal


def test_generation_is_deterministic_and_json_round_trips(splits: dict) -> None:
    again = generate("dev", 8, seed=0)
    assert [i.to_json() for i in again] == [i.to_json() for i in splits["dev"][:8]]
    for inst in splits["dev"][:5] + splits["heldout"][:5]:
        text = inst.to_json()
        back = parse_instance(text)
        assert back == inst and back.to_json() == text
    assert generate("dev", 3, seed=5)[0].to_json() != again[0].to_json()
    # instance i does not depend on how many were requested
    assert (
        make_instance("test", 7, seed=1, difficulty=3).to_json()
        == generate("test", 8, seed=1)[7].to_json()
    )


def test_difficulty_and_split_structure(splits: dict) -> None:
    for split in ("dev", "test"):
        for inst in splits[split]:
            assert set(inst.set_types) <= {"box", "ellipsoidal", "budget"}
            assert inst.problem.soc_constraints == [] and inst.problem.objective.uncertainty is None
            n_unc = sum(c.uncertainty is not None for c in inst.problem.constraints)
            assert n_unc == {1: 1, 2: 2, 3: 3, 4: 4, 5: 6}[inst.difficulty]
    held = splits["heldout"]
    row_sets = {c.uncertainty.type for i in held for c in i.problem.constraints if c.uncertainty}
    assert row_sets == {"polyhedral", "intersection"}  # absent from dev/test
    assert sum("soc" in i.features for i in held) >= N // 2
    assert sum("uncertain_objective" in i.features for i in held) >= N // 3
    assert {i.difficulty for i in splits["dev"]} == {1, 2, 3, 4, 5}
    assert "polyhedral" in held[1].description or "intersection" in held[1].description


def test_bad_generator_input_and_bad_instance_json() -> None:
    with pytest.raises(InvalidTask, match="unknown AutoRO split 'train'"):
        generate("train", 2)
    with pytest.raises(InvalidTask, match="difficulty must be 1..5"):
        generate("dev", 1, difficulty=9)
    with pytest.raises(InvalidTask, match="malformed JSON"):
        parse_instance("{not json")
    raw = json.loads(make_instance("dev", 0).to_json())
    raw["problem"]["constraints"][0]["uncertainty"]["type"] = "foo"
    with pytest.raises(InvalidTask, match="unknown uncertainty set type 'foo' in constraint 0"):
        parse_instance(raw)
    with pytest.raises(ConfigError, match="unknown AutoRO split"):
        AutoROBenchmark(n_per_split=1).tasks("train")


def test_benchmark_tasks_score_candidates(splits: dict) -> None:
    bench = AutoROBenchmark(n_per_split=3)
    assert isinstance(bench, Benchmark) and bench.splits == (
        "dev",
        "test",
        "heldout",
        "app",
        "app-train",
        "app-val",
        "app-id",
        "app-ood",
    )
    tasks = bench.tasks("heldout")
    assert len(tasks) == 3 and all(isinstance(t, Task) for t in tasks)
    t = tasks[2]
    assert "instance.json" in t.description and t.instance.problem.to_json() in t.description
    good = t.evaluate({"x": t.instance.reference_x, "objective": t.instance.reference_objective})
    assert good.passed and good.value == 1.0
    assert good.metrics["rel_tol"] == 1e-6 and good.details["tolerance"].startswith("rel_tol=1e-06")
    nom = nominal_counterpart(t.instance.problem).solve()
    bad = t.evaluate({"x": nom.x.tolist(), "objective": nom.objective})
    assert not bad.passed and bad.value == 0.0 and bad.details["reasons"]
    junk = t.evaluate(42)
    assert not junk.passed and "candidate must be" in junk.details["reasons"][0]
    assert not t.evaluate({"x": [0.0], "objective": "a"}).passed
    # dev and test never share instances
    assert bench.instances("dev")[0].to_json() != bench.instances("test")[0].to_json()
