"""The ask/tell contract (``solvers.asktell``), checked for every registered optimizer,
and its integration with the black-box portfolio."""

from __future__ import annotations

import numpy as np
import pytest

from optiforge.errors import ConfigError
from optiforge.solvers import asktell
from optiforge.solvers.blackbox import portfolio


class _Pattern(asktell.AskTellOptimizer):
    """A toy coordinate pattern search: asks 2 points around the incumbent per call."""

    name = "_pattern_test"
    summary = "test double"

    def __init__(self, dim: int, **kw: object) -> None:
        super().__init__(dim, **kw)  # type: ignore[arg-type]
        self.step = 0.25
        self.k = 0

    def _ask(self) -> np.ndarray:
        x = self.recommend() if self.y.size else self._uniform(1)[0]
        e = np.zeros(self.dim)
        e[self.k % self.dim] = self.step
        return np.stack([x + e, x - e])

    def _tell(self, X: np.ndarray, y: np.ndarray, feedback: object) -> None:
        self.k += 1
        if self.k % self.dim == 0:
            self.step *= 0.7


def _sphere(x: np.ndarray) -> float:
    return float(np.sum((x - 0.3) ** 2))


def test_interface_checks_shapes_and_order() -> None:
    opt = _Pattern(2, bounds=(np.zeros(2), np.ones(2)), seed=0)
    with pytest.raises(RuntimeError, match="without a matching ask"):
        opt.tell(np.zeros((1, 2)), np.zeros(1))
    X = opt.ask()
    assert X.shape == (2, 2) and np.all((X >= 0) & (X <= 1))
    with pytest.raises(RuntimeError, match="twice"):
        opt.ask()
    with pytest.raises(ValueError, match="not the asked"):
        opt.tell(X + 0.01, np.zeros(2))
    with pytest.raises(ValueError, match="shape"):
        opt.tell(X, np.zeros(3))
    with pytest.raises(ValueError, match="non-finite"):
        opt.tell(X, np.array([0.0, np.nan]))
    opt.tell(X, np.array([1.0, 0.5]))
    assert np.array_equal(opt.recommend(), X[1])


def test_bounds_and_dim_errors_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="needs bounds"):
        _Pattern(2)
    with pytest.raises(ConfigError, match="shape"):
        _Pattern(2, bounds=(np.zeros(3), np.ones(3)))
    with pytest.raises(ConfigError, match="lower < upper"):
        _Pattern(1, bounds=(np.ones(1), np.zeros(1)))
    with pytest.raises(ConfigError, match="unknown optimizer"):
        asktell.make("no_such_optimizer", 2)


def test_minimize_cuts_the_last_batch_and_records_everything() -> None:
    opt = _Pattern(2, bounds=(np.zeros(2), np.ones(2)), seed=1)
    res = asktell.minimize(_sphere, opt, budget=7)
    assert res.y.shape == (7,) and res.X.shape == (7, 2)
    assert res.batches == [2, 2, 2, 1]
    assert opt.y.shape == (6,)  # the cut batch is recorded, not told
    assert np.all(np.diff(res.best_trace) <= 0)
    assert res.best_trace[-1] < _sphere(res.X[0])


def test_minimize_names_a_non_finite_objective() -> None:
    opt = _Pattern(1, bounds=(np.zeros(1), np.ones(1)), seed=0)
    with pytest.raises(ValueError, match="objective returned nan"):
        asktell.minimize(lambda x: float("nan"), opt, budget=2)


@pytest.mark.parametrize("name", asktell.names())
def test_every_registered_optimizer_meets_the_contract(name: str) -> None:
    cls = asktell.OPTIMIZERS[name]
    assert cls.summary, f"{name} has no summary line"
    runs = []
    for _ in range(2):
        opt = cls.example(seed=3)
        asked = []
        for _ in range(3):
            X = opt.ask()
            assert X.dtype == np.float64 and X.ndim == 2 and X.shape[1] == opt.dim
            assert X.shape[0] >= 1
            if opt.lower is not None and opt.upper is not None:
                assert np.all((opt.lower <= X) & (opt.upper >= X))
            asked.append(X)
            opt.tell(X, np.array([_sphere(x) for x in X]))
        assert opt.recommend().shape == (opt.dim,)
        runs.append(asked)
    for a, b in zip(*runs, strict=True):
        assert np.array_equal(a, b), f"{name} is not deterministic for a seed"


def test_portfolio_names_every_bounded_optimizer() -> None:
    """Every bounded optimizer that takes any dimension (not the 1-D bandit) is in it."""
    unrestricted = {
        n for n in asktell.names(box_only=True) if asktell.OPTIMIZERS[n].max_dim is None
    }
    assert set(portfolio.ASKTELL) == unrestricted
    assert not set(portfolio.ASKTELL) & set(portfolio.CORE)


def test_history_grows_in_place_or_keeps_the_last_batch() -> None:
    full = _Pattern(3, bounds=(np.zeros(3), np.ones(3)), seed=2)
    last = _Pattern(3, bounds=(np.zeros(3), np.ones(3)), seed=2, keep_history=False)
    told: dict[int, list[np.ndarray]] = {id(full): [], id(last): []}
    for _ in range(40):
        for opt in (full, last):
            X = opt.ask()
            opt.tell(X, np.array([_sphere(x) for x in X]))
            told[id(opt)].append(X)
    assert full.X.shape == (80, 3) and np.array_equal(full.X, np.vstack(told[id(full)]))
    assert last.X.shape == (2, 3) and np.array_equal(last.X, told[id(last)][-1])
    assert full.n_told == last.n_told == 80
    with pytest.raises(ValueError, match="read-only"):
        full.X[0, 0] = 1.0


def test_portfolio_runs_an_asktell_optimizer_on_a_mixed_space() -> None:
    from optiforge.solvers.blackbox import SearchSpace, optimize

    space = SearchSpace.model_validate(
        {
            "variables": [
                {"name": "a", "kind": "float", "low": -2, "high": 2},
                {"name": "b", "kind": "int", "low": 0, "high": 10},
                {"name": "c", "kind": "categorical", "choices": ["x", "y"]},
            ]
        }
    )

    def f(c: dict[str, object]) -> float:
        a, b = float(c["a"]), int(c["b"])  # type: ignore[arg-type]
        return (a - 0.5) ** 2 + 0.1 * (b - 3) ** 2 + (0.0 if c["c"] == "y" else 1.0)

    res = optimize(f, space, 10, method="gp_bts", seed=0)
    assert len(res.values) == 10 and res.method == "gp_bts"
    assert all(isinstance(c["b"], int) and c["c"] in ("x", "y") for c in res.configs)
    assert res.best_value < max(res.values)
    with pytest.raises(ConfigError, match="at most 1"):
        asktell.make("convex1d", 2, bounds=(np.zeros(2), np.ones(2)))
