"""Unit tests for AdaSRU (optiforge.solvers.structured.adasru): the data model, the
remaining-gradient identity, the curvature estimate, the projection and the metrics."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from optiforge.errors import SolverError
from optiforge.solvers.structured.adasru import (
    _auc,
    _fisher_diag,
    _grad,
    adasru,
    constrained_direction,
    estimate_remaining,
    forget_metrics,
    gradient_ascent,
    make_implicit_data,
    train_mf,
    utility_metrics,
)


@pytest.fixture(scope="module")
def trained():
    data = make_implicit_data(n_users=60, n_items=40, seed=1)
    model, state = train_mf(data.n_users, data.n_items, data.train, epochs=20, seed=1)
    return data, model, state


def test_data_model_shapes_and_forget_set() -> None:
    d = make_implicit_data(n_users=50, n_items=30, density=0.1, seed=0)
    assert d.prob.shape == (50, 30)
    assert abs(d.prob.mean() - 0.1) < 1e-3
    assert len(d.train) + len(d.test) == 50 * 30
    assert (d.train[d.forget, 2] == 1).all()  # forgetting positives only
    assert len(np.intersect1d(d.remaining, d.forget)) == 0
    assert len(d.remaining) + len(d.forget) == len(d.train)


def test_remaining_gradient_identity_is_exact(trained) -> None:
    """grad J_R = (n/n_r) grad J - (n_f/n_r)(grad L_F + lam theta), at any theta."""
    data, model, state = trained
    n, n_f = len(data.train), len(data.forget)
    n_r = n - n_f
    theta = model.flat()
    g_full = _grad(model, data.train) + state.lam * theta
    g_rem = _grad(model, data.train[data.remaining]) + state.lam * theta
    g_f = _grad(model, data.train[data.forget])
    rhs = (n / n_r) * g_full - (n_f / n_r) * (g_f + state.lam * theta)
    assert torch.allclose(g_rem, rhs, atol=1e-6)


def test_source_free_estimate_points_along_true_remaining_gradient(trained) -> None:
    """At the trained point the estimate correlates with the true remaining gradient (which
    it never sees) far better than chance."""
    data, model, state = trained
    est = estimate_remaining(model, state, len(data.train), data.train[data.forget])
    true = _grad(model, data.train[data.remaining]) + state.lam * model.flat()
    cos = float(est.g0 @ true / (est.g0.norm() * true.norm()))
    assert cos > 0.5
    assert (est.h > 0).all()


def test_fisher_diag_matches_autograd() -> None:
    data = make_implicit_data(n_users=8, n_items=6, seed=2)
    model, _ = train_mf(data.n_users, data.n_items, data.train, epochs=2, seed=2)
    e = data.train[:10]
    sq = torch.stack([_grad(model, e[k : k + 1]) ** 2 for k in range(len(e))]).mean(0)
    assert torch.allclose(_fisher_diag(model, e), sq, atol=1e-7)


def test_projection_keeps_linearized_remaining_loss_from_rising(trained) -> None:
    """With the true remaining gradient, the constrained ascent ends with a lower remaining
    loss than the same ascent without the constraint."""
    data, model, state = trained
    rest = data.train[data.remaining]
    rem_losses: dict[str, list[float]] = {"on": [], "off": []}
    for key, constrain in (("on", True), ("off", False)):

        def cb(step: int, m, key=key) -> bool:
            with torch.no_grad():
                u, i, y = (torch.as_tensor(rest[:, j]) for j in range(3))
                rem_losses[key].append(
                    float(torch.nn.functional.binary_cross_entropy_with_logits(m(u, i), y.float()))
                )
            return False

        res = adasru(
            model,
            state,
            data,
            lr=0.01,
            max_steps=40,
            remaining=True,
            constrain=constrain,
            callback=cb,
        )
        assert res.steps == 40
    assert len(rem_losses["on"]) == 40
    # the constrained path stays at or below the unconstrained one on the remaining loss
    assert rem_losses["on"][-1] < rem_losses["off"][-1]


def test_target_forget_loss_stops_and_ascent_raises_forget_loss(trained) -> None:
    data, model, state = trained
    f0 = forget_metrics(model, data)["forget_loss"]
    for res in (
        adasru(model, state, data, target_forget_loss=f0 + 0.5, lr=0.01, max_steps=500),
        gradient_ascent(model, data, target_forget_loss=f0 + 0.5, lr=0.01, max_steps=500),
    ):
        assert res.forget_loss[0] == pytest.approx(f0, rel=1e-5)
        assert res.forget_loss[-1] >= f0 + 0.5
        assert res.steps < 500
    # the input model is untouched
    assert forget_metrics(model, data)["forget_loss"] == pytest.approx(f0, rel=1e-6)


def test_auc_and_metrics() -> None:
    assert _auc(np.array([2.0, 3.0]), np.array([0.0, 1.0])) == 1.0
    assert _auc(np.array([1.0]), np.array([1.0])) == 0.5
    assert np.isnan(_auc(np.array([]), np.array([1.0])))
    data = make_implicit_data(n_users=40, n_items=30, seed=3)
    model, _ = train_mf(data.n_users, data.n_items, data.train, epochs=10, seed=3)
    u = utility_metrics(model, data)
    assert 0.5 < u["auc"] <= 1.0 and 0.0 <= u["recall"] <= 1.0


def test_contract_errors(trained) -> None:
    data, model, state = trained
    with pytest.raises(SolverError):
        train_mf(3, 3, np.zeros((0, 3), dtype=np.int64))
    with pytest.raises(SolverError):
        estimate_remaining(model, state, len(data.train), data.train[:0])


def test_constrained_direction_is_the_metric_projection() -> None:
    """Active: <g_r, delta> = 0 and delta maximizes <g_f, .> over the half-space's boundary
    in the P-norm ball (checked against random feasible directions of equal P-norm);
    inactive: delta = g_f / p."""
    gen = torch.Generator().manual_seed(0)
    p = torch.rand(20, generator=gen, dtype=torch.float64) + 0.1
    g_f = torch.randn(20, generator=gen, dtype=torch.float64)
    g_r = g_f + 0.3 * torch.randn(20, generator=gen, dtype=torch.float64)  # conflicting
    d, active = constrained_direction(g_f, g_r, p)
    assert active
    assert abs(float(g_r @ d)) < 1e-10
    pnorm = lambda x: float((x * p * x).sum().sqrt())  # noqa: E731
    best = float(g_f @ d) / pnorm(d)
    for _ in range(200):
        z = torch.randn(20, generator=gen, dtype=torch.float64)
        z = z - float(g_r @ z) / float(g_r @ (g_r / p)) * (g_r / p)  # onto <g_r, z> = 0
        assert float(g_f @ z) / pnorm(z) <= best + 1e-9
    d2, active2 = constrained_direction(g_f, -g_r, p)
    assert not active2 and torch.allclose(d2, g_f / p)


def test_curvature_correction_tracks_the_remaining_gradient_along_the_path(trained) -> None:
    """After some ascent steps the uncorrected estimate g_R* has lost the true remaining
    gradient's direction; the curvature-corrected one keeps it (cosine, no data of R used)."""
    data, model, state = trained
    est = estimate_remaining(model, state, len(data.train), data.train[data.forget])
    rest = data.train[data.remaining]
    res = adasru(model, state, data, lr=0.01, max_steps=20)
    theta = res.model.flat()
    true = _grad(res.model, rest) + state.lam * theta

    def cos(a: torch.Tensor) -> float:
        return float(a @ true / (a.norm() * true.norm()))

    assert cos(est.at(theta)) > 0.5
    assert cos(est.at(theta)) > cos(est.g0) + 0.5
    scaled = estimate_remaining(
        model, state, len(data.train), data.train[data.forget], curvature_scale=0.5
    )
    assert torch.allclose(scaled.h - state.lam, 0.5 * (est.h - state.lam))
