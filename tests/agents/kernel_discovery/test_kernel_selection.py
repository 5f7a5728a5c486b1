"""Kernel Discovery's selection (issue 23): held-out scoring, the paired incumbent rule, config errors."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from optiforge.agents.kernel_discovery.config import KernelDiscoveryConfig
from optiforge.agents.kernel_discovery.problem import KernelEvaluator, selection_splits
from optiforge.agents.kernel_discovery.selection import select_kernel
from optiforge.agents.kit import Evaluated
from optiforge.config import build_config
from optiforge.errors import ConfigError
from optiforge.evals.suites.hdbo import HDBOBenchmark
from optiforge.solvers.gp import grammar
from optiforge.solvers.gp.folds import kfold_splits

RBF_SOURCE = """
NAME = "rbf-ard-source"
HYPERPARAMETERS = {"lengthscale": {"shape": "ard", "init": 1.0, "bounds": [0.01, 100.0]}}
def kernel(x1, x2, params):
    a = x1 / params["lengthscale"]
    b = x2 / params["lengthscale"]
    return torch.exp(-0.5 * ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))
"""


@pytest.fixture(autouse=True)
def _one_thread() -> Any:
    from threadpoolctl import threadpool_limits

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    with threadpool_limits(1):
        yield
    torch.set_num_threads(n)


def _data(n: int = 12) -> tuple[Any, torch.Tensor, torch.Tensor]:
    task = next(t for t in HDBOBenchmark().tasks("dev") if t.name == "hartmann6_in_25")
    X, y = task.kernel_data(0)
    return task, X[:n, :8].contiguous(), y[:n].clone()


def test_kfold_splits_cover_every_point_once_and_are_seeded() -> None:
    sets = kfold_splits(13, 4, 3)
    assert sorted(i for s in sets for i in s) == list(range(13)) and len(sets) == 4
    assert sets == kfold_splits(13, 4, 3) and sets != kfold_splits(13, 4, 4)
    assert len(kfold_splits(5, 10, 0)) == 5  # more folds than points: leave-one-out


def _moved(y: torch.Tensor, idx: list[int]) -> torch.Tensor:
    y2 = y.clone()
    y2[idx] += 3.0  # far off: any fit that saw these points would move
    return y2


@pytest.mark.parametrize(
    "kind", ["library", pytest.param("source", marks=pytest.mark.slow)]
)  # source: a fit over many sandbox rounds
def test_heldout_scores_never_fit_on_the_scored_fold(kind: str) -> None:
    """Moving the values of fold 0's points leaves fold 0's predictive unchanged (its
    hyperparameters, signal variance, noise and mean were fitted without them) while the
    other folds' predictives, fitted on them, change."""
    task, X, y = _data()
    sets = kfold_splits(X.shape[0], 4, 0)
    cand: Any = grammar.build_kernel("RBF_ARD") if kind == "library" else RBF_SOURCE
    # source: the suite's own (warm) sandbox, a Gram oracle that never sees y
    a = task.score_kernel(cand, X, y, None, seed=0, n_restarts=0, heldout=sets)
    b = task.score_kernel(cand, X, _moved(y, sets[0]), None, seed=0, n_restarts=0, heldout=sets)
    assert a.passed and b.passed, (a.details.get("reason"), b.details.get("reason"))
    k = len(sets[0])
    for key in ("heldout_mean", "heldout_sd"):
        assert a.details[key][:k] == pytest.approx(b.details[key][:k], abs=1e-9, rel=1e-9)
        assert a.details[key][k:] != pytest.approx(b.details[key][k:], abs=1e-6)
    # the LOO-CRPS (full-data fit) is kept beside the held-out value, and they differ
    assert a.metrics["loo_crps"] != pytest.approx(a.value)


def test_loo_scoring_is_the_old_rule_and_penalty_counts_groups() -> None:
    task, X, y = _data()
    cfg = KernelDiscoveryConfig(selection_score="loo", complexity_penalty=0.1)
    assert selection_splits(X.shape[0], cfg, 0) is None
    ev = KernelEvaluator(task, X, y, seed=0, restarts=0, complexity_penalty=0.1)
    one = ev({"expression": "RBF_ARD"})
    assert one.value == one.metrics["unpenalized"] and "heldout_crps" not in one.details
    two = ev({"expression": "RQ_ARD"})  # lengthscale and alpha: two groups
    assert two.value == pytest.approx(1.1 * two.metrics["unpenalized"])


def _ev(expr: str, value: float, per_point: list[float] | None = None) -> Evaluated:
    details = {"heldout_crps": per_point} if per_point is not None else {}
    return Evaluated(id=expr, key=expr, payload={"expression": expr}, passed=True, value=value,
                     details=details)  # fmt: skip


def test_incumbent_is_kept_when_the_challenger_is_within_the_margin() -> None:
    inc = _ev("RBF_ARD", 0.50)
    close = _ev("Matern52_ARD", 0.495)  # 1% better
    assert select_kernel(close, inc, 0.02) is inc
    assert select_kernel(close, inc, 0.0) is close
    far = _ev("Matern52_ARD", 0.45)  # 10% better
    assert select_kernel(far, inc, 0.02) is far


def test_paired_rule_keeps_the_incumbent_when_the_gain_is_noise() -> None:
    base = [0.5] * 10
    inc = _ev("RBF_ARD", 0.5, base)
    # 10% better on average, but from one point: the paired standard error is large
    lucky = _ev("Periodic", 0.45, [0.5] * 9 + [0.0])
    assert select_kernel(lucky, inc, 0.02, n_se=1.0) is inc
    assert select_kernel(lucky, inc, 0.02, n_se=0.0) is lucky
    # the same gain on every point: replaced
    steady = _ev("Matern52_ARD", 0.45, [0.45] * 10)
    assert select_kernel(steady, inc, 0.02, n_se=1.0) is steady


@pytest.mark.parametrize(
    "bad",
    [
        {"selection_folds": 1},
        {"selection_score": "bic"},
        {"complexity_penalty": -0.1},
        {"selection_margin": -0.5},
        {"selection_se": -1},
    ],
)
def test_selection_config_errors_are_one_line(bad: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as err:
        build_config(KernelDiscoveryConfig, base=bad, where="kernel-discovery config")
    msg = str(err.value)
    assert "\n" not in msg and next(iter(bad)) in msg
