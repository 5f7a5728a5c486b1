"""Formulated search spaces and the optimizer portfolio behind one interface."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic import ValidationError

from optiforge.errors import ConfigError
from optiforge.solvers.blackbox import PORTFOLIO, SearchSpace, optimize

SPACE = {
    "variables": [
        {"kind": "float", "name": "x", "low": -1.0, "high": 1.0},
        {"kind": "float", "name": "lr", "low": 1e-5, "high": 1e-1, "log": True},
        {"kind": "int", "name": "layers", "low": 1, "high": 6},
        {"kind": "categorical", "name": "kernel", "choices": ["rbf", "linear", "poly"]},
        {"kind": "float", "name": "gamma", "low": 0.01, "high": 10.0, "log": True,
         "active_if": {"kernel": ["rbf"]}},
    ]
}  # fmt: skip


def objective(c: dict[str, Any]) -> float:
    """Minimum 0 at x=0.3, lr=1e-2, layers=3, kernel=rbf, gamma=1."""
    v = (c["x"] - 0.3) ** 2 + (math.log10(c["lr"]) + 2) ** 2 + 0.1 * (c["layers"] - 3) ** 2
    if c["kernel"] == "rbf":
        return v + math.log10(c["gamma"]) ** 2
    return v + 1.0


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"variables": [{"kind": "float", "name": "a", "low": 1, "high": 1}]}, "low < high"),
        ({"variables": [{"kind": "float", "name": "a", "low": 0, "high": 1, "log": True}]}, "low > 0"),
        ({"variables": [{"kind": "int", "name": "a", "low": 0, "high": 3},
                        {"kind": "int", "name": "a", "low": 0, "high": 3}]}, "declared twice"),
        ({"variables": [{"kind": "float", "name": "g", "low": 0, "high": 1,
                         "active_if": {"k": ["rbf"]}}]}, "must be declared before"),
        ({"variables": [{"kind": "categorical", "name": "k", "choices": ["a"]},
                        {"kind": "float", "name": "g", "low": 0, "high": 1,
                         "active_if": {"k": ["b"]}}]}, "not choices"),
        ({"variables": [{"kind": "float", "name": "a", "low": 0, "high": 1, "step": 2}]}, "Extra"),
    ],
)  # fmt: skip
def test_invalid_spaces_say_what_is_wrong(bad: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        SearchSpace.model_validate(bad)


def test_decode_encode_and_conditionals() -> None:
    space = SearchSpace.model_validate(SPACE)
    c = space.decode([0.65, 0.75, 0.5, 0.1, 2 / 3])
    assert c["x"] == pytest.approx(0.3) and c["lr"] == pytest.approx(1e-2)
    assert c["layers"] in (3, 4) and c["kernel"] == "rbf" and c["gamma"] == pytest.approx(1.0)
    assert "gamma" not in space.decode([0.5, 0.5, 0.5, 0.5, 0.5])  # kernel linear: inactive
    back = space.decode(space.encode(c))
    assert back["kernel"] == "rbf" and back["layers"] == c["layers"]
    assert [back[k] for k in ("x", "lr", "gamma")] == pytest.approx(
        [c[k] for k in ("x", "lr", "gamma")]
    )
    space.check(c)
    with pytest.raises(ValueError, match="outside"):
        space.check({**c, "x": 3.0})
    with pytest.raises(ValueError, match="inactive"):
        space.check({**c, "kernel": "linear"})


@pytest.mark.slow
@pytest.mark.parametrize("method", PORTFOLIO)
def test_every_optimizer_honours_the_space(method: str) -> None:
    space = SearchSpace.model_validate(SPACE)
    res = optimize(objective, space, 14, method=method, seed=0, n_init=6)
    assert len(res.values) == len(res.configs) == 14
    for c in res.configs:
        space.check(c)  # valid values of exactly the active variables
        assert ("gamma" in c) == (c["kernel"] == "rbf")
    assert math.isfinite(res.best_value) and res.best_trace[-1] == res.best_value
    again = optimize(objective, space, 14, method=method, seed=0, n_init=6)
    assert again.configs == res.configs  # a seed fixes the run


def test_a_failing_configuration_is_kept_and_steers_the_search_away() -> None:
    space = SearchSpace.model_validate({"variables": [
        {"kind": "float", "name": "x", "low": 0.0, "high": 1.0},
        {"kind": "float", "name": "y", "low": 0.0, "high": 1.0}]})  # fmt: skip

    def f(c: dict[str, Any]) -> float:
        return math.nan if c["x"] > 0.8 else (c["x"] - 0.5) ** 2 + c["y"]

    res = optimize(f, space, 12, method="gp", seed=1, n_init=5)
    assert any(math.isnan(v) for v in res.values) or all(c["x"] <= 0.8 for c in res.configs)
    assert math.isfinite(res.best_value) and res.best_config["x"] <= 0.8


def test_unknown_optimizer_and_budget() -> None:
    space = SearchSpace.model_validate(SPACE)
    with pytest.raises(ConfigError, match="unknown optimizer 'annealing'"):
        optimize(objective, space, 5, method="annealing")
    with pytest.raises(ConfigError, match="budget"):
        optimize(objective, space, 0)


@pytest.mark.slow
def test_kernel_search_picks_the_kernel_the_data_supports() -> None:
    import torch

    from optiforge.solvers.bo.baselines import CompositionalKernelSearch

    g = torch.Generator().manual_seed(0)
    X = torch.rand(40, 2, generator=g, dtype=torch.float64)
    noise = 0.1 * torch.randn(40, generator=g, dtype=torch.float64)
    y = torch.sin(12.0 * X[:, 0]) + 2.0 * X[:, 1] + noise  # periodic in x0, linear in x1
    y = (y - y.mean()) / y.std()
    search = CompositionalKernelSearch(0, n_children=6)
    for rnd in range(4):
        search(X, y, rnd)
    from optiforge.solvers.gp import ExactGP, grammar

    def loo_crps(expr: str) -> float:
        return ExactGP(grammar.build_kernel(expr), n_restarts=1, seed=0).fit(X, y).loo_crps()

    assert len(search.history) == 4 and "Periodic" in search.incumbent
    assert loo_crps(search.incumbent) < 0.9 * loo_crps("RBF_ARD")


@pytest.mark.slow
def test_a_fixed_kernel_expression_and_a_search_from_it() -> None:
    space = SearchSpace.model_validate(SPACE)
    res = optimize(
        objective, space, 12, method="gp", seed=0, n_init=6, kernel="Matern52_ARD + Linear"
    )
    assert len(res.values) == 12 and math.isfinite(res.best_value)
    ks = optimize(
        objective, space, 12, method="kernel_search", seed=0, n_init=6, kernel="Matern52_ARD"
    )
    assert len(ks.values) == 12
    with pytest.raises(ConfigError, match="needs method gp or kernel_search"):
        optimize(objective, space, 5, method="tpe", kernel="RBF")
