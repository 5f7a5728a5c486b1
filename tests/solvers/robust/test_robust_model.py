"""RO problem model: JSON round trip and clear one-line errors for bad input."""

from __future__ import annotations

import json

import pytest

from optiforge.errors import InvalidTask
from optiforge.solvers.robust import (
    BoxSet,
    BudgetSet,
    EllipsoidalSet,
    IntersectionSet,
    LinearConstraint,
    NormBallPart,
    Objective,
    PolyhedralSet,
    PolyhedronPart,
    ROProblem,
    SOCConstraint,
    parse_problem,
)


def _problem() -> ROProblem:
    return ROProblem(
        name="all_sets",
        n=2,
        lower=[0.0, None],
        upper=[3.0, 4.0],
        objective=Objective(
            c=[1.0, 2.0], sense="max", uncertainty=BoxSet(P=[[0.1], [0.2]], rho=1.0)
        ),
        constraints=[
            LinearConstraint(
                a=[1, 1], b=4, uncertainty=EllipsoidalSet(P=[[0.1, 0], [0, 0.1]], rho=1)
            ),
            LinearConstraint(
                a=[1, 2],
                b=5,
                sense=">=",
                uncertainty=PolyhedralSet(P=[[1.0], [0.0]], D=[[1.0], [-1.0]], d=[1.0, 1.0]),
            ),
            LinearConstraint(a=[2, 1], b=6, uncertainty=BudgetSet(delta=[0.2, 0.3], gamma=1.5)),
            LinearConstraint(
                a=[1, 0],
                b=2,
                uncertainty=IntersectionSet(
                    P=[[0.1, 0.0], [0.0, 0.1]],
                    parts=[
                        NormBallPart(norm="inf", rho=1.0),
                        NormBallPart(norm=2, rho=1.2),
                        PolyhedronPart(D=[[1.0, 1.0]], d=[1.0]),
                    ],
                ),
            ),
            LinearConstraint(a=[1, -1], b=0.5, sense="=="),
        ],
        soc_constraints=[SOCConstraint(A=[[1.0, 0.0]], b=[0.0], c=[0.0, 0.0], d=3.0)],
    )


def test_json_round_trip_preserves_every_field() -> None:
    p = _problem()
    text = p.to_json()
    back = parse_problem(text)
    assert back == p
    assert back.to_json() == text
    assert parse_problem(json.loads(text)) == p
    assert back.set_types() == ["box", "ellipsoidal", "polyhedral", "budget", "intersection"]


def _raw() -> dict:
    return json.loads(_problem().to_json())


def test_unknown_set_type_names_the_constraint() -> None:
    raw = _raw()
    raw["constraints"][3]["uncertainty"]["type"] = "foo"
    with pytest.raises(InvalidTask) as err:
        parse_problem(raw)
    assert str(err.value) == (
        "unknown uncertainty set type 'foo' in constraint 3 "
        "(expected box|ellipsoidal|polyhedral|budget|intersection)"
    )
    raw = _raw()
    raw["objective"]["uncertainty"]["type"] = "cone"
    with pytest.raises(InvalidTask, match="'cone' in the objective"):
        parse_problem(raw)
    raw = _raw()
    raw["constraints"][3]["uncertainty"]["parts"][0]["type"] = "ball"
    with pytest.raises(InvalidTask, match="unknown intersection part type 'ball'"):
        parse_problem(raw)


def test_malformed_json_is_one_line() -> None:
    with pytest.raises(InvalidTask, match="malformed JSON") as err:
        parse_problem('{"n": 2, "objective": ')
    assert "\n" not in str(err.value)
    with pytest.raises(InvalidTask, match="must be a JSON object"):
        parse_problem("[1, 2]")


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda r: r["constraints"][0].update(a=[1.0]),
            "constraint 0: a has length 1, expected n=2",
        ),
        (lambda r: r["objective"].update(c=[1.0, 2.0, 3.0]), "objective c has length 3"),
        (
            lambda r: r["constraints"][0]["uncertainty"].update(P=[[0.1, 0.0]]),
            "P has 1 rows, expected n=2",
        ),
        (
            lambda r: r["constraints"][1]["uncertainty"].update(d=[1.0]),
            "d has length 1, D has 2 rows",
        ),
        (
            lambda r: r["constraints"][2]["uncertainty"].update(delta=[-0.2, 0.3]),
            "delta must be non-negative",
        ),
        (lambda r: r["constraints"][0]["uncertainty"].update(P=[[0.1], [0.1, 0.2]]), "rectangular"),
        (lambda r: r.update(upper=[3.0]), "upper has length 1"),
        (lambda r: r.update(lower=[5.0, None]), "lower bound 5.0 exceeds upper bound 3.0"),
        (lambda r: r.update(integer=[True, False]), "integer variables are not supported"),
        (
            lambda r: r["constraints"][4].update(uncertainty=r["constraints"][0]["uncertainty"]),
            "uncertain equality",
        ),
        (
            lambda r: r["constraints"][0].update(sense="<"),
            "invalid RO problem: constraints.0.sense",
        ),
        (lambda r: r.update(extra_field=1), "invalid RO problem: extra_field"),
        (lambda r: r["constraints"][0]["uncertainty"].update(rho=-1.0), "rho"),
    ],
)
def test_bad_shapes_and_values_raise_invalid_task(mutate, message: str) -> None:
    raw = _raw()
    mutate(raw)
    with pytest.raises(InvalidTask, match=message.replace("(", r"\(").replace(")", r"\)")) as err:
        parse_problem(raw)
    assert "\n" not in str(err.value)


def test_non_convex_nominal_models_are_rejected() -> None:
    raw = _raw()
    raw["soc_constraints"][0]["sense"] = ">="
    with pytest.raises(
        InvalidTask, match="non-convex nominal model: SOC constraint 0 has sense '>='"
    ):
        parse_problem(raw)
    raw = _raw()
    raw["objective"]["Q"] = [[1.0, 0.0], [0.0, 1.0]]  # objective sense is max
    with pytest.raises(
        InvalidTask, match="non-convex nominal model: maximising the convex quadratic"
    ):
        parse_problem(raw)
    raw = _raw()
    raw["objective"].update(sense="min", Q=[[1.0, 0.0], [0.0, -1.0]])
    with pytest.raises(InvalidTask, match="not positive semidefinite"):
        parse_problem(raw)


def test_nan_is_rejected() -> None:
    raw = _raw()
    raw["constraints"][0]["b"] = float("nan")
    with pytest.raises(InvalidTask, match="constraints.0.b"):
        parse_problem(raw)


def test_empty_polyhedral_sets_are_rejected() -> None:
    raw = _raw()
    raw["constraints"][1]["uncertainty"].update(D=[[1.0], [-1.0]], d=[-1.0, -1.0])  # z<=-1, z>=1
    with pytest.raises(InvalidTask, match="uncertainty set of constraint 1 is empty"):
        parse_problem(raw)
    raw = _raw()
    # z1 + z2 <= 1 intersected with the box ||z||_inf <= 1 stays non-empty; z1 + z2 <= -3 does not
    raw["constraints"][3]["uncertainty"]["parts"][2]["d"] = [-3.0]
    with pytest.raises(InvalidTask, match="uncertainty set of constraint 3 is empty"):
        parse_problem(raw)
    raw = _raw()
    raw["constraints"][3]["uncertainty"]["parts"][2]["d"] = [-1.5]  # z = (-0.75, -0.75) is inside
    parse_problem(raw)
