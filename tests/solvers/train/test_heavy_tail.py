"""Unit tests of optiforge.solvers.train.heavy_tail: the mirror maps and their inverses, one
step against a hand computation for each map, the schedules, the averaged iterate, clipped
SGD, the noise's moments against closed forms, and the catalogue entry on a tiny problem."""

from __future__ import annotations

import math

import pytest
import torch
from scipy import integrate, stats
from torch import nn

from optiforge.solvers.train import catalogue
from optiforge.solvers.train.api import Batch, ModelProblem
from optiforge.solvers.train.heavy_tail import (
    CLIPPED_SGD,
    ClippedSGD,
    MirrorDescent,
    abs_moment,
    heavy_noise,
    predicted_exponent,
    schedule_exponents,
    step_size,
    to_dual,
    to_primal,
)

DT = torch.float64


@pytest.mark.parametrize("map_q", [("euclidean", 2.0), ("pnorm", 3.0), ("pnorm", 1.5), ("power", 5.0), ("power", 3.0)],
                         ids=lambda m: f"{m[0]}-{m[1]}")  # fmt: skip
def test_dual_and_primal_maps_are_inverse(map_q: tuple[str, float]) -> None:
    m, q = map_q
    x = torch.randn(6, 5, dtype=DT, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(to_primal(to_dual(x, m, q), m, q), x, atol=1e-10)  # type: ignore[arg-type]


def test_entropic_step_is_exponentiated_gradient_and_stays_on_simplex() -> None:
    x0 = torch.tensor([[0.2, 0.3, 0.5], [0.6, 0.3, 0.1]], dtype=DT)
    x = x0.clone()
    opt = MirrorDescent([x], lr=0.7, map="entropic", schedule="constant")
    g = torch.tensor([[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]], dtype=DT)
    x.grad = g
    opt.step()
    want = x0 * torch.exp(-0.7 * g)
    want = want / want.sum(-1, keepdim=True)
    assert torch.allclose(x, want, atol=1e-12)
    for _ in range(50):  # huge heavy-tailed gradients: still on the simplex, no NaN
        x.grad = heavy_noise((2, 3), p=1.2, sigma=100.0, gen=torch.Generator().manual_seed(1))
        opt.step()
    assert torch.isfinite(x).all() and (x >= 0).all()
    assert torch.allclose(x.sum(-1), torch.ones(2, dtype=DT))
    with pytest.raises(ValueError, match="simplex"):
        MirrorDescent([torch.tensor([0.5, 0.6])], lr=0.1, map="entropic", schedule="constant")


def test_euclidean_step_equals_torch_sgd() -> None:
    a = torch.randn(4, 3, dtype=DT, generator=torch.Generator().manual_seed(2))
    b = a.clone()
    opt_a = MirrorDescent([a], lr=0.3, p=1.5, schedule="horizon", horizon=64)
    opt_b = torch.optim.SGD([b], lr=0.3 * 64 ** (-1 / 1.5))
    for k in range(3):
        g = torch.randn(4, 3, dtype=DT, generator=torch.Generator().manual_seed(10 + k))
        a.grad, b.grad = g.clone(), g.clone()
        opt_a.step()
        opt_b.step()
    assert torch.allclose(a, b, atol=1e-12)


def test_pnorm_and_power_steps_by_hand() -> None:
    x0 = torch.tensor([[1.0, -2.0, 0.5]], dtype=DT)
    g = torch.tensor([[0.5, 1.0, -1.0]], dtype=DT)
    # power map, q = 3: theta = sign(x)|x|^2, x = sign(theta)|theta|^(1/2)
    x = x0.clone()
    opt = MirrorDescent([x], lr=0.1, map="power", p=1.5, schedule="constant")  # q = p/(p-1) = 3
    x.grad = g
    opt.step()
    theta = torch.tensor([[1.0, -4.0, 0.25]], dtype=DT) - 0.1 * g
    assert torch.allclose(x, torch.sign(theta) * theta.abs().sqrt(), atol=1e-12)
    # 1/2||x||_q^2 map, q = 3: theta_i = sign(x_i)|x_i|^2 / ||x||_3; inverse with q* = 3/2
    x = x0.clone()
    opt = MirrorDescent([x], lr=0.1, map="pnorm", p=1.5, schedule="constant")
    x.grad = g
    opt.step()
    n3 = (1 + 8 + 0.125) ** (1 / 3)
    theta = torch.tensor([[1.0, -4.0, 0.25]], dtype=DT) / n3 - 0.1 * g
    nq = (theta.abs() ** 1.5).sum() ** (2 / 3)
    want = torch.sign(theta) * theta.abs() ** 0.5 * nq**0.5
    assert torch.allclose(x, want, atol=1e-12)


def test_schedules_and_the_eta_weighted_average() -> None:
    assert step_size(2.0, 1.25, "horizon", 7, 1024) == pytest.approx(2.0 * 1024 ** (-0.8))
    assert step_size(2.0, 1.25, "decreasing", 16, None) == pytest.approx(2.0 * 16 ** (-0.8))
    assert step_size(2.0, 1.25, "constant", 16, 1024) == 2.0
    with pytest.raises(ValueError):
        MirrorDescent([torch.zeros(2)], lr=1.0, schedule="horizon")
    x = torch.zeros(1, 1, dtype=DT)
    opt = MirrorDescent([x], lr=1.0, p=2.0, schedule="decreasing")
    pts, etas = [], []
    for t in range(1, 5):
        pts.append(float(x))
        etas.append(t**-0.5)
        x.grad = torch.full((1, 1), -1.0, dtype=DT)
        opt.step()
    want = sum(e * v for e, v in zip(etas, pts, strict=True)) / sum(etas)
    assert float(opt.averaged(x)) == pytest.approx(want)


def test_clipped_sgd_clips_per_row_and_globally() -> None:
    x = torch.zeros(2, 2, dtype=DT)
    opt = ClippedSGD([x], lr=0.5, clip=1.0, per_row=True)
    x.grad = torch.tensor([[3.0, 4.0], [0.3, 0.4]], dtype=DT)
    opt.step()
    assert torch.allclose(x, torch.tensor([[-0.3, -0.4], [-0.15, -0.2]], dtype=DT))
    a, b = torch.zeros(2, dtype=DT), torch.zeros(1, dtype=DT)
    opt = ClippedSGD([a, b], lr=1.0, clip=1.0)  # global norm over both tensors: ||(0,3,4)|| = 5
    a.grad, b.grad = torch.tensor([0.0, 3.0], dtype=DT), torch.tensor([4.0], dtype=DT)
    opt.step()
    assert torch.allclose(a, torch.tensor([0.0, -0.6], dtype=DT)) and torch.allclose(
        b, torch.tensor([-0.8], dtype=DT)
    )
    # horizon schedule: eta = lr T^-a, tau = clip T^b
    a_exp, b_exp = schedule_exponents(1.5, "nonconvex", clipped=True)
    assert (a_exp, b_exp) == pytest.approx((1.5 / 2.5, 1 / 2.5))
    opt = ClippedSGD([torch.zeros(1)], lr=1.0, clip=1.0, p=1.5, setting="nonconvex", horizon=100)
    assert opt.param_groups[0]["lr"] == pytest.approx(100**-0.6)
    assert opt.param_groups[0]["clip"] == pytest.approx(100**0.4)


def test_predicted_exponents() -> None:
    assert predicted_exponent(2.0, "convex") == -0.5
    assert predicted_exponent(1.5, "convex") == pytest.approx(-1 / 3)
    # nonconvex: plain SGD (p-1)/(2p); clipped (p-1)/(3p-2); equal at p = 2
    assert predicted_exponent(1.5, "nonconvex") == pytest.approx(-1 / 6)
    assert predicted_exponent(1.5, "nonconvex", clipped=True) == pytest.approx(-0.2)
    assert (
        predicted_exponent(2.0, "nonconvex")
        == predicted_exponent(2.0, "nonconvex", clipped=True)
        == -0.25
    )
    ps = [1.25, 1.5, 1.75, 2.0]
    for setting in ("convex", "nonconvex"):
        es = [predicted_exponent(p, setting) for p in ps]  # type: ignore[arg-type]
        assert es == sorted(es, reverse=True)  # smaller p: slower decay
    with pytest.raises(ValueError):
        predicted_exponent(1.0, "convex")


@pytest.mark.parametrize("kind", ["pareto", "student"])
@pytest.mark.parametrize("alpha_r", [(1.35, 1.25), (1.6, 1.5), (2.1, 2.0), (3.0, 0.7)], ids=str)
def test_abs_moment_matches_numerical_integration(kind: str, alpha_r: tuple[float, float]) -> None:
    alpha, r = alpha_r
    if kind == "pareto":  # |xi| ~ Lomax(alpha): density alpha (1+u)^(-alpha-1)
        val, _ = integrate.quad(
            lambda u: u**r * alpha * (1 + u) ** (-alpha - 1), 0, math.inf, limit=500
        )
    else:
        val, _ = integrate.quad(lambda u: 2 * u**r * stats.t.pdf(u, alpha), 0, math.inf, limit=500)
    assert abs_moment(kind, alpha, r) == pytest.approx(val, rel=2e-3)  # type: ignore[arg-type]
    assert abs_moment(kind, alpha, alpha) == math.inf  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["pareto", "student"])
def test_heavy_noise_scale_tail_and_symmetry(kind: str) -> None:
    p, sigma = 1.5, 2.0
    xi = heavy_noise((400_000,), p=p, sigma=sigma, kind=kind, gen=torch.Generator().manual_seed(3))  # type: ignore[arg-type]
    alpha = p + 0.1
    scale = sigma / abs_moment(kind, alpha, p) ** (1 / p)  # type: ignore[arg-type]
    # a low moment (finite variance of the estimate) matches the closed form at this scale
    r = 0.5
    est = float(xi.abs().pow(r).mean())
    assert est == pytest.approx(scale**r * abs_moment(kind, alpha, r), rel=0.01)  # type: ignore[arg-type]
    assert abs(float(torch.sign(xi).mean())) < 0.01
    if kind == "pareto":  # exact tail P(|xi| > u) = (1 + u/scale)^-alpha
        for u in (1.0, 10.0):
            assert float((xi.abs() > u).double().mean()) == pytest.approx(
                (1 + u / scale) ** -alpha, rel=0.05
            )
    with pytest.raises(ValueError):
        heavy_noise((3,), p=1.5, alpha=1.5)


class _TinyClassify:
    """A ModelProblem of kind classify: two Gaussian blobs, a linear model."""

    name = "tiny"
    kind = "classify"
    description = "two blobs"

    def make_model(self, seed: int) -> nn.Module:
        torch.manual_seed(seed)
        return nn.Linear(2, 2)

    def batch(self, step: int, gen: torch.Generator) -> Batch:
        y = torch.randint(0, 2, (32,), generator=gen)
        x = torch.randn(32, 2, generator=gen) + 2.0 * (y[:, None] * 2 - 1).float()
        return (x, y)

    def losses(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        x, y = batch
        out: torch.Tensor = nn.functional.cross_entropy(model(x), y, reduction="none")
        return out

    def evaluate(self, model: nn.Module) -> float:
        x, y = self.batch(0, torch.Generator().manual_seed(99))
        with torch.no_grad():
            return float(self.losses(model, (x, y)).mean())


def test_clipped_sgd_catalogue_entry_trains_a_tiny_problem() -> None:
    prob = _TinyClassify()
    assert isinstance(prob, ModelProblem)
    method = catalogue.get("clipped-sgd")
    assert method is CLIPPED_SGD and method.applies(prob)
    before = prob.evaluate(prob.make_model(0))
    res = method.run(prob, method.defaults({"lr": 0.2, "clip": 0.5}), 60, 0)
    assert len(res.curve) == 60 and 0.0 <= res.extra["clipped_fraction"] <= 1.0
    assert prob.evaluate(res.model) < 0.5 * before
