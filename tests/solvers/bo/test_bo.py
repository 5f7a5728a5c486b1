"""BO loop: BoTorch model wrapper, budget accounting, kernel refresh, baselines."""

from __future__ import annotations

import pytest
import torch
from botorch.test_functions import Branin

from optiforge.errors import BudgetExceeded, ConfigError, SolverError
from optiforge.solvers.bo import (
    BASELINES,
    BOLoop,
    CountedObjective,
    ExactGPModel,
    TurboState,
    run_baseline,
)
from optiforge.solvers.bo.loop import AcqConfig
from optiforge.solvers.gp import ExactGP, matern52, rbf

DT = torch.float64
CHEAP = AcqConfig(num_restarts=2, raw_samples=64, maxiter=30)


class Branin2In10:
    """Branin on the first 2 of 10 unit-cube dims (test-local; the suite has its own)."""

    def __init__(self) -> None:
        self.f = Branin()
        self.bounds = torch.stack([torch.zeros(10, dtype=DT), torch.ones(10, dtype=DT)])
        self.calls = 0

    def __call__(self, X: torch.Tensor) -> torch.Tensor:
        self.calls += X.shape[0]
        lb, ub = self.f.bounds[0].to(DT), self.f.bounds[1].to(DT)
        return self.f.evaluate_true(lb + (ub - lb) * X[:, :2])


def test_exact_gp_model_posterior_matches_predict_and_joint_cov() -> None:
    g = torch.Generator().manual_seed(0)
    X = torch.rand(15, 3, generator=g, dtype=DT)
    y = torch.sin(4 * X.sum(1))
    gp = ExactGP(matern52(ard=True), n_restarts=0).fit(X, y)
    model = ExactGPModel(gp, chunk=3)
    Xt = torch.rand(7, 2, 3, generator=g, dtype=DT)  # batch 7, q 2
    post = model.posterior(Xt)
    assert post.mean.shape == (7, 2, 1)
    m, v = gp.predict(Xt.reshape(-1, 3))
    torch.testing.assert_close(post.mean.reshape(-1), m, rtol=1e-8, atol=1e-8)
    torch.testing.assert_close(post.variance.reshape(-1), v, rtol=1e-6, atol=1e-8)
    # Joint covariance of one q-batch by the textbook formula, computed independently.
    p = gp.params
    assert p is not None
    xb = Xt[4]
    fn = matern52(True).fn

    def K(a: torch.Tensor, b: torch.Tensor, kp: dict) -> torch.Tensor:
        return p.outputscale * fn(a, b, kp)

    Kxx = K(X, X, p.kernel) + p.noise * torch.eye(15, dtype=DT)
    Ksx = K(xb, X, p.kernel)
    cov = K(xb, xb, p.kernel) - Ksx @ torch.linalg.solve(Kxx, Ksx.T)
    torch.testing.assert_close(post.distribution.covariance_matrix[4], cov, rtol=1e-6, atol=1e-7)


def test_posterior_is_differentiable_in_x() -> None:
    X = torch.rand(10, 2, dtype=DT)
    gp = ExactGP(rbf(), n_restarts=0).fit(X, X[:, 0] ** 2)
    Xt = torch.rand(4, 1, 2, dtype=DT, requires_grad=True)
    ExactGPModel(gp).posterior(Xt).mean.sum().backward()
    assert Xt.grad is not None and bool(torch.isfinite(Xt.grad).all())


def test_budget_is_enforced() -> None:
    obj = CountedObjective(Branin2In10(), budget=3)
    obj(torch.rand(2, 10, dtype=DT))
    with pytest.raises(BudgetExceeded):
        obj(torch.rand(2, 10, dtype=DT))
    with pytest.raises(SolverError):
        BOLoop(Branin2In10(), budget=5, n_init=10, kernel_provider=lambda X, y, r: rbf())


def test_kernel_refresh_schedule_and_exact_budget() -> None:
    calls: list[int] = []

    def provider(X: torch.Tensor, y: torch.Tensor, rnd: int):  # noqa: ANN202
        calls.append(rnd)
        assert X.shape[0] == y.shape[0] == 6 + rnd * 2
        return rbf(ard=True)

    prob = Branin2In10()
    tr = BOLoop(
        prob,
        budget=14,
        n_init=6,
        batch_size=2,
        kernel_provider=provider,
        refresh_every=2,
        seed=1,
        acq_config=CHEAP,
    ).run()
    assert prob.calls == 14 and tr.y.numel() == 14 and tr.n_fallbacks == 0
    assert calls == [0, 2]
    assert tr.kernels == ["RBF_ARD"] * 4
    assert bool((tr.best_trace[1:] <= tr.best_trace[:-1]).all())


@pytest.mark.slow
def test_bo_with_rbf_beats_random_search_on_branin2_in_10d() -> None:
    """40 evaluations (8 initial): measured on seeds 0-5, BO ends within 0.02 of Branin's
    minimum 0.397887 on every seed, random search at 0.56-4.7. (With 20 evaluations and 6
    initial points BO was no better than random on 4 of 6 seeds: too few to claim it.)"""
    bo, rs = [], []
    for seed in (0, 1):
        bo.append(
            BOLoop(
                Branin2In10(),
                budget=40,
                n_init=8,
                kernel_provider=lambda X, y, r: rbf(ard=True),
                gp_restarts=0,
                seed=seed,
                acq_config=CHEAP,
            )
            .run()
            .best_value
        )
        rs.append(run_baseline("random", Branin2In10(), 40, seed).best_value)
    assert all(b < r for b, r in zip(bo, rs, strict=True)), (bo, rs)
    assert max(bo) < 0.6


def test_turbo_state_shrinks_and_grows() -> None:
    s = TurboState(dim=5)
    s.best_value = 1.0
    assert s.failure_tolerance == 5
    for _ in range(5):
        s.update(torch.tensor([0.0]))
    assert s.length == pytest.approx(0.4)
    for i in range(10):
        s.update(torch.tensor([2.0 + i]))
    assert s.length == pytest.approx(0.8)


@pytest.mark.parametrize("name", ["sobol", "gp_rq", "vanilla_bo", "turbo"])
def test_baselines_run_within_budget(name: str) -> None:
    prob = Branin2In10()
    tr = run_baseline(name, prob, 12, 0, n_init=6, acq_config=CHEAP)
    assert prob.calls == 12 and tr.y.numel() == 12
    assert tr.X.shape == (12, 10) and bool(((tr.X >= 0) & (tr.X <= 1)).all())
    # the trace's values are the objective's own values at its points
    torch.testing.assert_close(Branin2In10()(tr.X), tr.y)


def test_unknown_baseline() -> None:
    assert {
        "random",
        "sobol",
        "gp_rbf_ard",
        "gp_matern52_ard",
        "gp_rq",
        "vanilla_bo",
        "turbo",
    } <= set(BASELINES)
    with pytest.raises(ConfigError, match="unknown baseline"):
        run_baseline("nope", Branin2In10(), 5, 0)


def test_methods_with_the_same_seed_are_paired_round_by_round(tmp_path) -> None:  # noqa: ANN001
    # a resumable loop (what the Kernel Discovery agent runs) and a plain one (its GP-BO
    # baselines) with the same kernel and seed propose the same points in every round
    def run(**kw: object) -> torch.Tensor:
        loop = BOLoop(Branin2In10(), budget=10, n_init=6, kernel_provider=lambda X, y, r: rbf(ard=True),
                      seed=3, acq_config=CHEAP, **kw)  # type: ignore[arg-type]  # fmt: skip
        return loop.run().X

    plain, logged = run(), run(resume_path=tmp_path / "bo.jsonl")
    assert torch.equal(plain, logged)
    assert not torch.equal(plain, BOLoop(Branin2In10(), budget=10, n_init=6, seed=4, acq_config=CHEAP,
                                         kernel_provider=lambda X, y, r: rbf(ard=True)).run().X)  # fmt: skip


def test_qlognei_runs_and_differs_from_qlogei() -> None:
    def run(acq: str) -> torch.Tensor:
        return BOLoop(Branin2In10(), budget=9, n_init=6, kernel_provider=lambda X, y, r: rbf(ard=True),
                      seed=2, acq=acq, acq_config=None).run().X  # fmt: skip

    ei, nei = run("qLogEI"), run("qLogNEI")
    assert (
        nei.shape == ei.shape == (9, 10)
        and torch.equal(ei[:6], nei[:6])
        and not torch.equal(ei, nei)
    )
    with pytest.raises(SolverError, match="choose from qLogEI, qLogNEI"):
        AcqConfig(acquisition="UCB")
