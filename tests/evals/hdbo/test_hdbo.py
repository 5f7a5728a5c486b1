"""hdbo suite: known optima in the embedding, rover and Lasso definitions, task scoring."""

from __future__ import annotations

import cvxpy as cp
import numpy as np
import pytest
import torch
from scipy.optimize import minimize_scalar

from optiforge.errors import ConfigError, InvalidTask
from optiforge.evals.protocol import Benchmark, Task
from optiforge.evals.suites.hdbo import (
    FAILED_VALUE,
    HDBOBenchmark,
    HDBOTask,
    SyntheticLasso,
    embedded,
    rover,
)
from optiforge.evals.suites.hdbo.rover import GOAL, START, map_cost, rover_cost
from optiforge.solvers.bo import Trace
from optiforge.solvers.bo.loop import AcqConfig
from optiforge.solvers.gp import KernelSpec, rbf

DT = torch.float64

KNOWN = [
    ("levy", 4, 25, 0.0),
    ("hartmann", 6, 25, -3.32237),
    ("branin", 2, 100, 0.397887),
    ("ackley", 20, 20, 0.0),
    ("rosenbrock", 20, 20, 0.0),
    # per-dimension minimum of 0.5 (x^4 - 16 x^2 + 5 x), found independently by scipy
    (
        "styblinski_tang",
        20,
        20,
        20
        * float(
            minimize_scalar(
                lambda x: 0.5 * (x**4 - 16 * x**2 + 5 * x),
                bounds=(-5, 0),
                method="bounded",
                options={"xatol": 1e-10},
            ).fun
        ),
    ),
]


@pytest.mark.parametrize("emb_seed", [None, 7])
@pytest.mark.parametrize(("fn", "k", "D", "opt"), KNOWN)
def test_known_optima_at_argmin_in_embedding(
    fn: str, k: int, D: int, opt: float, emb_seed: int | None
) -> None:
    p = embedded(fn, k, D, embedding_seed=emb_seed)
    assert p.optimizer is not None and p.optimum == pytest.approx(opt, abs=1e-3)
    x = p.optimizer.clone()
    assert float(p.evaluate_true(x[None])) == pytest.approx(opt, abs=1e-4)
    # inert coordinates do not matter; active ones do
    inert = [i for i in range(D) if i not in p.active_dims]
    if inert:
        x2 = x.clone()
        x2[inert] = torch.rand(len(inert), dtype=DT)
        assert float(p.evaluate_true(x2[None])) == pytest.approx(opt, abs=1e-4)
    x3 = x.clone()
    x3[p.active_dims[0]] = (x3[p.active_dims[0]] + 0.3) % 1.0
    assert float(p.evaluate_true(x3[None])) > opt + 1e-3
    if emb_seed is None:
        assert p.active_dims == tuple(range(k))


def test_noise_std_and_bad_inputs() -> None:
    p = embedded("branin", 2, 10, seed=3)
    X = torch.full((400, 10), 0.5, dtype=DT)
    resid = p(X) - p.evaluate_true(X)
    assert float(resid.std()) == pytest.approx(0.01, rel=0.15)
    with pytest.raises(InvalidTask, match="inputs must"):
        p(torch.full((1, 10), 1.5, dtype=DT))
    with pytest.raises(InvalidTask, match="fixed dimension"):
        embedded("branin", 3, 10)


def test_rover_cost_matches_direct_line_integral() -> None:
    # Collinear control points make the cubic spline the straight segment start->goal.
    pts = START + (GOAL - START) * np.linspace(0, 1, 30)[:, None]
    x = ((pts + 0.1) / 1.2).reshape(-1)
    # Independent: fine midpoint rule of the map cost along the segment.
    t = (np.arange(200_000) + 0.5) / 200_000
    seg = START + (GOAL - START) * t[:, None]
    length = float(np.linalg.norm(GOAL - START))
    direct = float(map_cost(seg).mean()) * length - 5.0
    assert rover_cost(x) == pytest.approx(direct, rel=2e-2)
    # A path along the bottom then right edge avoids more obstacles? At least: it is finite
    # and a path that leaves the map is penalised heavily.
    far = ((np.tile([1.08, 1.08], 30) + 0.1) / 1.2).clip(0, 1)
    assert rover_cost(far) > rover_cost(x)
    assert rover(seed=0).evaluate_true(torch.tensor(x)[None]).item() == pytest.approx(rover_cost(x))


def test_weighted_lasso_equals_cvxpy_solution() -> None:
    prob = SyntheticLasso(12, seed=4, n_train=40, n_val=20)
    x = np.random.default_rng(0).uniform(size=12)
    b_ours = prob.fit_coef(x)
    lam = prob.penalties(x)
    b = cp.Variable(12)
    n = prob.Xtr.shape[0]
    cp.Problem(
        cp.Minimize(cp.sum_squares(prob.ytr - prob.Xtr @ b) / (2 * n) + lam @ cp.abs(b))
    ).solve()
    np.testing.assert_allclose(b_ours, b.value, atol=2e-3 * max(1.0, float(np.abs(b.value).max())))
    r = prob.yva - prob.Xva @ b.value
    assert prob.loss(x) == pytest.approx(float(np.mean(r**2) / np.var(prob.yva)), rel=1e-2)


def test_benchmark_splits_and_protocol() -> None:
    b = HDBOBenchmark()
    assert isinstance(b, Benchmark)
    dev, held = b.tasks("dev"), b.tasks("heldout")
    assert all(isinstance(t, Task) for t in dev)
    assert {t.name for t in dev}.isdisjoint({t.name for t in held} - {"rover60"})
    assert {"levy4_in_25", "hartmann6_in_25", "branin2_in_100", "rover60", "lasso60_s0"} <= {
        t.name for t in dev
    }
    assert dev[0].budget == 30 and HDBOBenchmark("literature").tasks("dev")[0].budget == 270
    with pytest.raises(ConfigError):
        b.tasks("train")
    with pytest.raises(ConfigError):
        HDBOBenchmark("fast")


def _small_task() -> HDBOTask:
    return HDBOTask(
        name="branin2_in_5",
        split="dev",
        make_problem=lambda s: embedded("branin", 2, 5, seed=s),
        n_init=5,
        budget=8,
        n_kernel_data=20,
    )


@pytest.mark.slow
def test_task_scores_kernel_candidates() -> None:
    task = _small_task()
    good = task.evaluate(rbf(ard=True))
    assert good.passed and 0 < good.value < 1.0 and "bic" in good.metrics
    neg = rbf()
    bad = task.evaluate(
        KernelSpec("neg", lambda a, b, p: -neg.fn(a, b, p), dict(neg.hyperparameters))
    )
    assert (
        not bad.passed and bad.value == FAILED_VALUE and bad.details["reason"].startswith("not PSD")
    )
    src = (
        "HYPERPARAMETERS = {'lengthscale': {'shape': 'scalar', 'init': 1.0, 'bounds': [0.01, 100.0]}}\n"
        "def kernel(x1, x2, params):\n"
        "    return torch.exp(-0.5 * torch.cdist(x1, x2).pow(2) / params['lengthscale'] ** 2)\n"
    )
    s = task.evaluate({"source": src})
    assert s.passed and s.details["isolated"] == "sandbox"
    assert s.value == pytest.approx(task.evaluate(rbf()).value, rel=1e-4)


def test_score_trace_reevaluates_and_enforces_budget() -> None:
    task = _small_task()
    tr = task.run_bo(
        lambda X, y, r: rbf(ard=True),
        seed=0,
        acq_config=AcqConfig(num_restarts=2, raw_samples=32, maxiter=20),
    )
    assert tr.y.numel() == task.budget
    sc = task.score_trace(tr)
    true = task.problem(0).evaluate_true(tr.X)
    assert sc.passed and sc.value == pytest.approx(float(true.min()))
    assert sc.metrics["regret"] == pytest.approx(sc.value - 0.397887, abs=1e-5)
    forged = Trace(name="liar", seed=0, X=tr.X, y=torch.full_like(tr.y, -100.0))
    assert task.score_trace(forged).value == pytest.approx(sc.value)
    over = Trace(
        name="over",
        seed=0,
        X=torch.rand(task.budget + 1, 5, dtype=DT),
        y=torch.zeros(task.budget + 1, dtype=DT),
    )
    assert not task.score_trace(over).passed
    res = task.run_baselines(["random", "sobol"], seeds=(0,))
    assert set(res) == {"random", "sobol"} and all(r[0].passed for r in res.values())
