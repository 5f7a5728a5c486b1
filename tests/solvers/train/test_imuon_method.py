"""The ``imuon`` / ``muon-factors`` catalogue adapters on a tiny ``LowRankProblem`` defined
here (stochastic matrix sensing, factors of the model split with a chosen conditioning)."""

from __future__ import annotations

import math

import torch
from torch import nn

from optiforge.solvers.train import catalogue
from optiforge.solvers.train.api import Batch, LowRankProblem


class _Factors(nn.Module):
    def __init__(self, left: torch.Tensor, right: torch.Tensor) -> None:
        super().__init__()
        self.L = nn.Parameter(left)
        self.R = nn.Parameter(right)


class TinySensing:
    """20 x 15, rank 2, 400 measurements, batches of 32; ``kappa``: the conditioning of
    the mixing ``B`` in the model's start ``L = L0 B``, ``R = R0 B^-T``; ``lora``: ``R = 0``."""

    name = "tiny-sensing"
    kind = "lowrank"
    description = "rank-2 matrix sensing (test)"
    shape = (20, 15)
    rank = 2

    def __init__(self, kappa: float = 1.0, lora: bool = False) -> None:
        g = torch.Generator().manual_seed(0)
        u = torch.linalg.qr(torch.randn(20, 2, generator=g))[0]
        v = torch.linalg.qr(torch.randn(15, 2, generator=g))[0]
        self.w_star = (u * torch.tensor([1.0, 0.3])) @ v.T
        self.a = torch.randn(400, 20, 15, generator=g) / math.sqrt(300)
        self.y = torch.einsum("kij,ij->k", self.a, self.w_star)
        self.kappa, self.lora = kappa, lora

    def make_model(self, seed: int) -> nn.Module:
        g = torch.Generator().manual_seed(100 + seed)
        left, right = 0.3 * torch.randn(20, 2, generator=g), 0.3 * torch.randn(15, 2, generator=g)
        b = torch.diag(torch.tensor([math.sqrt(self.kappa), 1 / math.sqrt(self.kappa)]))
        return _Factors(left @ b, torch.zeros(15, 2) if self.lora else right @ torch.linalg.inv(b).T)  # fmt: skip

    def batch(self, step: int, gen: torch.Generator) -> Batch:
        idx = torch.randint(0, 400, (32,), generator=gen)
        return self.a[idx], self.y[idx]

    def matrix_losses(self, w: torch.Tensor, batch: Batch) -> torch.Tensor:
        a, y = batch
        return 0.5 * 400 * (torch.einsum("kij,ij->k", a, w) - y) ** 2

    def losses(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        return self.matrix_losses(model.L @ model.R.T, batch)  # type: ignore[operator]

    def evaluate_matrix(self, w: torch.Tensor) -> float:
        return float((w - self.w_star).norm() / self.w_star.norm())

    def evaluate(self, model: nn.Module) -> float:
        return self.evaluate_matrix((model.L @ model.R.T).detach())  # type: ignore[operator]


def test_adapters_train_a_low_rank_problem_and_imuon_ignores_the_split() -> None:
    imuon, naive = catalogue.get("imuon"), catalogue.get("muon-factors")
    good, bad = TinySensing(1.0), TinySensing(300.0)
    assert isinstance(good, LowRankProblem) and imuon.applies(good) and naive.applies(good)
    start = good.evaluate(good.make_model(0))
    res = imuon.run(good, imuon.defaults(), 300, 0)
    assert good.evaluate(res.model) < 0.1 * start, (start, good.evaluate(res.model))
    assert len(res.curve) == 300 and res.extra["orthonormality_error"] < 1e-10
    left, right = res.model.L.detach(), res.model.R.detach()  # type: ignore[union-attr]
    assert torch.allclose(
        left.T @ left, right.T @ right, atol=1e-5
    )  # balanced factors written back
    assert int(torch.linalg.matrix_rank(left @ right.T)) == 2
    # the same W0 split 300-conditioned: imuon's result is the same, naive Muon's is worse
    same = imuon.run(bad, imuon.defaults(), 300, 0)
    assert abs(bad.evaluate(same.model) - good.evaluate(res.model)) < 1e-5
    naive_good = good.evaluate(naive.run(good, naive.defaults(), 300, 0).model)
    naive_bad = bad.evaluate(naive.run(bad, naive.defaults(), 300, 0).model)
    assert naive_bad > 2 * naive_good and naive_bad > 2 * bad.evaluate(same.model), (naive_good, naive_bad)  # fmt: skip


def test_imuon_starts_from_a_rank_deficient_lora_init() -> None:
    prob = TinySensing(lora=True)
    model0 = prob.make_model(0)
    assert float(model0.R.detach().abs().max()) == 0.0  # type: ignore[union-attr, operator]
    method = catalogue.get("imuon")
    res = method.run(prob, method.defaults({"lr": 0.05}), 300, 0)
    assert prob.evaluate(res.model) < 0.3 and len(res.extra["singular_values"]) == 2
