"""Unit tests of BROS / MA-SOBA (optiforge/solvers/train/bilevel.py): the sketches, the
low-rank forward, an MA-SOBA step against a hand computation on a tiny quadratic bilevel
problem, BROS = MA-SOBA when nothing is sketched, the memory measurement's determinism, and
the catalogue adapters on a problem defined here."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from torch import nn

from optiforge.solvers.train import catalogue
from optiforge.solvers.train.api import Batch, BilevelProblem, TrainResult
from optiforge.solvers.train.bilevel import (
    bros_step,
    draw_sketch,
    fresh_state,
    hessian_action,
    hvp_exact,
    ma_soba_step,
    step_peak_bytes,
    subspace_forward,
)


@dataclass
class TinyRegression:
    """Inner: weighted least squares ``mean_i sigmoid(lam_i) (x_i.y - t_i)^2 / 2`` over the
    batch's examples; outer: plain least squares on a validation set."""

    name: str = "tiny-regression"
    kind: str = "bilevel"
    description: str = "weighted least squares with one weight per example"
    n: int = 12
    dim: int = 3

    def __post_init__(self) -> None:
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(self.n, self.dim, generator=g)
        self.t = torch.randn(self.n, generator=g)
        self.xv = torch.randn(8, self.dim, generator=g)
        self.tv = torch.randn(8, generator=g)

    def make(self, seed: int) -> tuple[nn.Module, torch.Tensor]:
        torch.manual_seed(seed)
        return nn.Linear(self.dim, 1, bias=False), torch.zeros(self.n)

    def inner_batch(self, step: int, gen: torch.Generator) -> Batch:
        idx = torch.randint(self.n, (4,), generator=gen)
        return self.x[idx], self.t[idx], idx

    def outer_batch(self, step: int, gen: torch.Generator) -> Batch:
        return self.xv, self.tv

    def inner_loss(self, model: nn.Module, lam: torch.Tensor, batch: Batch) -> torch.Tensor:
        x, t, idx = batch
        return (torch.sigmoid(lam[idx]) * (model(x).squeeze(-1) - t) ** 2).mean() / 2

    def outer_loss(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        x, t = batch
        return ((model(x).squeeze(-1) - t) ** 2).mean() / 2

    def evaluate(self, model: nn.Module, lam: torch.Tensor) -> float:
        with torch.no_grad():
            return float(self.outer_loss(model, (self.xv, self.tv)))


HP = {"lr_inner": 0.1, "lr_aux": 0.2, "lr_outer": 3.0, "avg": 0.5, "rank": 2}


def test_tiny_problem_is_a_bilevel_problem() -> None:
    assert isinstance(TinyRegression(), BilevelProblem)


@pytest.mark.parametrize(
    "shape", [(6, 10), (10, 6), (5, 2, 3), (7,)], ids=["rows", "cols", "3d", "vec"]
)
def test_sketch_lift_project_and_isotropy(shape: tuple[int, ...]) -> None:
    gen = torch.Generator().manual_seed(0)
    p = torch.zeros(shape)
    sk = draw_sketch(p, 2, gen)
    u = torch.randn(shape)
    b = torch.randn(sk.coords)
    # lift(project(u)) = P P^T u on the sketched side; add_lift_ = in-place lift
    if sk.mat is None:
        assert sk.side == "full" and torch.equal(sk.lift(sk.project(u)), u)
    else:
        m = u.reshape(shape[0], -1)
        ppt = sk.mat @ sk.mat.T
        want = ppt @ m if sk.side == "rows" else m @ ppt
        assert torch.allclose(sk.lift(sk.project(u)).reshape(shape[0], -1), want, atol=1e-6)
        assert sk.mat.abs().unique().numel() == 1  # Rademacher: +-1/sqrt(r)
        # E[P P^T] = I: the mean over many draws
        acc = torch.zeros_like(ppt)
        for _ in range(4000):
            mat = draw_sketch(p, 2, gen).mat
            assert mat is not None
            acc += mat @ mat.T
        mean = acc / 4000
        assert torch.allclose(mean, torch.eye(mean.shape[0]), atol=0.06)
    t = torch.randn(shape)
    t2 = t.clone()
    sk.add_lift_(t2, b, -0.5)
    assert torch.allclose(t2, t - 0.5 * sk.lift(b), atol=1e-6)


def test_subspace_forward_matches_perturbed_weights() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 9), nn.ReLU(), nn.Linear(9, 4))
    gen = torch.Generator().manual_seed(1)
    ps = list(model.parameters())
    p_sk = [draw_sketch(p, 3, gen) for p in ps]
    q_sk = [draw_sketch(p, 3, gen) for p in ps]
    bp = [torch.randn(s.coords) for s in p_sk]
    bq = [torch.randn(s.coords) for s in q_sk]
    assert {s.side for s in p_sk} == {"rows", "cols", "full"}
    x = torch.randn(5, 6)
    with subspace_forward(model, [[(a, b), (c, d)] for a, b, c, d in zip(p_sk, bp, q_sk, bq, strict=True)]) as call:  # fmt: skip
        got = call(x)
    assert "forward" not in vars(model[0])  # the patch is undone
    with torch.no_grad():
        for p, a, b, c, d in zip(ps, p_sk, bp, q_sk, bq, strict=True):
            p.add_(a.lift(b) + c.lift(d))
        want = model(x)
    assert torch.allclose(got, want, atol=1e-5)


def test_hessian_action_is_exact_when_nothing_is_sketched() -> None:
    prob = TinyRegression()
    model, lam = prob.make(0)
    ib = prob.inner_batch(0, torch.Generator().manual_seed(0))
    v = [torch.randn_like(p) for p in model.parameters()]
    sks = [draw_sketch(p, 8, torch.Generator()) for p in model.parameters()]  # rank >= every side
    assert all(s.side == "full" for s in sks)
    hq, gp, _ = hessian_action(lambda m: prob.inner_loss(m, lam, ib), model, v, sks, list(sks))
    hv = hvp_exact(lambda m: prob.inner_loss(m, lam, ib), model, v)
    assert torch.allclose(hq[0], hv[0], atol=1e-6)
    # by hand: H = mean_i s_i x_i x_i^T
    x, _, idx = ib
    h = (torch.sigmoid(lam[idx])[:, None, None] * x[:, :, None] * x[:, None, :]).mean(0)
    assert torch.allclose(hv[0].reshape(-1), h @ v[0].reshape(-1), atol=1e-6)


def test_ma_soba_step_against_hand_computation() -> None:
    prob = TinyRegression()
    model, lam = prob.make(0)
    lam.normal_(generator=torch.Generator().manual_seed(3))
    state = fresh_state(model, lam)
    state.v[0].normal_(generator=torch.Generator().manual_seed(4))
    state.h.normal_(generator=torch.Generator().manual_seed(5))
    gen = torch.Generator().manual_seed(0)
    ib, ob = prob.inner_batch(0, gen), prob.outer_batch(0, gen)
    y, v, h, lam0 = model.weight.detach().reshape(-1).clone(), state.v[0].reshape(-1).clone(), state.h.clone(), lam.clone()  # fmt: skip
    x, t, idx = ib
    s = torch.sigmoid(lam0[idx])
    r = x @ y - t
    gy = (s * r) @ x / len(idx)
    hmat = (s[:, None, None] * x[:, :, None] * x[:, None, :]).mean(0)
    fy = (ob[0] @ y - ob[1]) @ ob[0] / len(ob[1])
    cross = torch.zeros_like(lam0)  # d/dlam_j <grad_y g, v> = s_j (1 - s_j) r_j (x_j . v) / B
    cross.index_add_(0, idx, s * (1 - s) * r * (x @ v) / len(idx))
    ma_soba_step(prob, model, lam, state, ib, ob, HP)
    assert torch.allclose(model.weight.detach().reshape(-1), y - HP["lr_inner"] * gy, atol=1e-6)
    assert torch.allclose(state.v[0].reshape(-1), v - HP["lr_aux"] * (hmat @ v - fy), atol=1e-6)
    h_new = (1 - HP["avg"]) * h - HP["avg"] * cross
    assert torch.allclose(state.h, h_new, atol=1e-6)
    assert torch.allclose(lam, lam0 - HP["lr_outer"] * h_new, atol=1e-5)


def test_bros_is_ma_soba_when_rank_covers_every_side() -> None:
    """With ``r >= min(m, n)`` for every parameter nothing is sketched (``P = Q = I``):
    the BROS step must be the MA-SOBA step exactly."""
    prob = TinyRegression()
    runs = []
    for method in ("ma-soba", "bros"):
        model, lam = prob.make(0)
        state = fresh_state(model, lam)
        gen, sk_gen = torch.Generator().manual_seed(0), torch.Generator().manual_seed(1)
        for step in range(5):
            ib, ob = prob.inner_batch(step, gen), prob.outer_batch(step, gen)
            if method == "bros":
                bros_step(prob, model, lam, state, ib, ob, {**HP, "rank": 8}, sk_gen)
            else:
                ma_soba_step(prob, model, lam, state, ib, ob, HP)
        runs.append((model.weight.detach().clone(), state.v[0].clone(), lam.clone()))
    for a, b in zip(*runs, strict=True):
        assert torch.allclose(a, b, atol=1e-6)


def test_step_peak_bytes_is_deterministic_and_sees_allocations() -> None:
    def work() -> torch.Tensor:
        a = torch.ones(1000)
        b = torch.ones(3000)
        del a
        return b.sum()

    peaks = [step_peak_bytes(work) for _ in range(3)]
    assert peaks[0] == peaks[1] == peaks[2] >= 4 * 3000


@pytest.mark.parametrize("name", ["bros", "ma-soba"])
def test_catalogue_adapters_train_a_problem(name: str) -> None:
    method = catalogue.get(name)
    prob = TinyRegression()
    assert method.applies(prob) and method.kinds == frozenset({"bilevel"})
    hp = method.defaults({"lr_outer": 3.0})
    res = method.run(prob, hp, 60, 0)
    assert isinstance(res, TrainResult) and res.lam is not None and res.lam.shape == (prob.n,)
    assert len(res.curve) == 60 and res.extra["state_bytes"] > 0
    assert sum(res.curve[-10:]) < sum(res.curve[:10])  # the inner problem is trained
    assert float(res.lam.abs().max()) > 0  # and the outer weights moved
    assert prob.evaluate(res.model, res.lam) == prob.evaluate(res.model, res.lam)  # finite


class FrozenFirstLayer(TinyRegression):
    """The same problem with a frozen random feature layer in front (not part of ``y``)."""

    def make(self, seed: int) -> tuple[nn.Module, torch.Tensor]:
        torch.manual_seed(seed)
        model = nn.Sequential(nn.Linear(self.dim, 6), nn.Tanh(), nn.Linear(6, 1))
        model[0].requires_grad_(False)
        return model, torch.zeros(self.n)


@pytest.mark.parametrize("name", ["bros", "ma-soba"])
def test_frozen_parameters_are_left_alone(name: str) -> None:
    prob = FrozenFirstLayer()
    res = catalogue.get(name).run(prob, catalogue.get(name).defaults({"rank": 2} if name == "bros" else {}), 20, 0)  # fmt: skip
    frozen, _ = prob.make(0)
    assert torch.equal(res.model[0].weight, frozen[0].weight)
    assert not torch.equal(res.model[2].weight, frozen[2].weight)
    assert res.extra["state_bytes"] == 4 * (6 + 1 + prob.n)  # v over the trainable layer, h
