"""Nonlinear parametric BO: the contract, the gradient-kernel bound, and the claims.

Claims (issue 24, item 2), noiseless, 30 evaluations, default settings of both methods,
against GP-BO = GP Thompson sampling (``gp_bts`` with ``Q = 1``: Matern-5/2 ARD GP, MAP
hyperparameters) and uniform random search; coverage of ``mean +- beta sd`` on 500 uniform
held-out points after the run. Measured (Branin seeds 0-2, Hartmann-6 seeds 0-4):

    problem       method    mean simple regret   coverage beta = 1 / 2 / 3
    branin 2-D    param_bo  2.6e-3               0.48 / 0.81 / 0.94
                  gp_bts    1.8e-4               0.65 / 0.88 / 0.96
                  random    2.0e-2               -
    hartmann6 6-D param_bo  0.645                0.88 / 0.99 / 1.00
                  gp_bts    0.431                0.87 / 0.98 / 0.99
                  random    1.434                -
    (nominal Gaussian coverage 0.68 / 0.95 / 1.00)

What holds: on Hartmann-6 the parametric model is competitive (1.5x GP-BO's regret, both
far better than random) and its bands cover like the GP's (both conservative at beta = 1).
On Branin it is 7.7x better than random search and within 0.05% of the function's range of
the minimum, but GP-BO's regret is 14x lower: in 2-D "competitive with GP-BO" holds only
in that absolute sense, and the bands under-cover (0.81 at beta = 2 for a nominal 0.95).
The tests assert what holds.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from optiforge.errors import ConfigError
from optiforge.solvers.asktell import OPTIMIZERS
from optiforge.solvers.bandits.gp_bts import GPBatchedThompson
from optiforge.solvers.bandits.param_bo import NeuralParametricBO, TanhMLP
from optiforge.solvers.bandits.testfns import BRANIN_MIN, HARTMANN6_MIN, branin01, hartmann6

threadpool_limits(1)

BUDGET = 30
PROBLEMS = {"branin": (branin01, BRANIN_MIN, 2), "hartmann6": (hartmann6, HARTMANN6_MIN, 6)}
SMALL: dict[str, Any] = {"hidden": 8, "n_candidates": 64, "n_local": 16, "maxiter": 50}
SEEDS_BY_PROBLEM = {"branin": (0, 1, 2), "hartmann6": (0, 1, 2, 3, 4)}
"""Hartmann-6 runs vary more from seed to seed (0.39 to 1.01 for param_bo), so 5 seeds."""


def drive(opt: NeuralParametricBO | GPBatchedThompson, f, budget: int) -> float:  # noqa: ANN001
    while opt.y.size < budget:
        X = opt.ask()
        opt.tell(X, f(X))
    return float(opt.y.min())


def coverage(opt: NeuralParametricBO | GPBatchedThompson, f, dim: int) -> np.ndarray:  # noqa: ANN001
    """Fraction of 500 uniform held-out points inside ``mean +- beta sd``, beta = 1, 2, 3."""
    U = np.random.default_rng(7).random((500, dim))
    mean, sd = opt.predict(U)
    err = np.abs(f(U) - mean)
    return np.array([np.mean(err <= b * sd) for b in (1.0, 2.0, 3.0)])


@cache
def measured(problem: str, method: str) -> tuple[np.ndarray, np.ndarray]:
    """Simple regret per seed and mean coverage (zeros for random search)."""
    f, fmin, d = PROBLEMS[problem]
    box = (np.zeros(d), np.ones(d))
    regrets, covers = [], []
    for s in SEEDS_BY_PROBLEM[problem]:
        if method == "random":
            regrets.append(float(f(np.random.default_rng(s).random((BUDGET, d))).min() - fmin))
            continue
        opt: NeuralParametricBO | GPBatchedThompson
        if method == "param_bo":
            opt = NeuralParametricBO(d, bounds=box, seed=s)
        else:
            opt = GPBatchedThompson(d, bounds=box, seed=s)
        regrets.append(drive(opt, f, BUDGET) - fmin)
        covers.append(coverage(opt, f, d))
    return np.asarray(regrets), np.mean(covers, axis=0) if covers else np.zeros(3)


# -- contract ------------------------------------------------------------------------------
def test_registered_under_its_name() -> None:
    assert OPTIMIZERS["param_bo"] is NeuralParametricBO


@pytest.mark.parametrize("policy", ["randomized", "lcb"])
def test_ask_shape_bounds_and_tell_checks(policy: str) -> None:
    lo, hi = np.array([-1.0, 2.0, 0.0]), np.array([1.0, 4.0, 0.1])
    opt = NeuralParametricBO(3, bounds=(lo, hi), seed=1, batch=2, policy=policy, **SMALL)
    for _ in range(4):  # two Sobol batches, then two model batches
        X = opt.ask()
        assert X.shape == (2, 3) and X.dtype == np.float64
        assert np.all((lo <= X) & (hi >= X))
        with pytest.raises(RuntimeError):
            opt.ask()
        with pytest.raises(ValueError):
            opt.tell(X[:1], np.zeros(1))
        with pytest.raises(ValueError):
            opt.tell(X, np.array([1.0, np.nan]))
        opt.tell(X, np.sum(X**2, axis=1))
    mean, sd = opt.predict(np.vstack([lo, hi]))
    assert mean.shape == sd.shape == (2,) and np.all(sd > 0)
    assert opt.recommend().shape == (3,)


def test_seeded_runs_repeat_and_batch_members_differ() -> None:
    def asks(seed: int) -> list[np.ndarray]:
        opt = NeuralParametricBO(2, bounds=(np.zeros(2), np.ones(2)), seed=seed, batch=2, **SMALL)
        out = []
        for _ in range(3):
            X = opt.ask()
            out.append(X)
            opt.tell(X, branin01(X))
        return out

    a, b, c = asks(4), asks(4), asks(5)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not np.array_equal(a[-1], c[-1])
    assert not np.array_equal(a[-1][0], a[-1][1])  # two random models, two points


def test_bad_options_raise() -> None:
    box = (np.zeros(2), np.ones(2))
    with pytest.raises(ConfigError):
        NeuralParametricBO(2, bounds=box, policy="ucb")
    with pytest.raises(ConfigError):
        NeuralParametricBO(2, bounds=box, reg=0.0)
    with pytest.raises(ConfigError):
        NeuralParametricBO(2, bounds=box, n_init=0)


# -- the bound -----------------------------------------------------------------------------
def test_kernel_width_equals_the_parameter_space_formula() -> None:
    """``k(x,x) - k_x^T (K + lam I)^-1 k_x == lam g^T (G^T G + lam I)^-1 g`` (Woodbury)."""
    opt = NeuralParametricBO(2, bounds=(np.zeros(2), np.ones(2)), seed=0, hidden=4, n_init=6)
    while opt.y.size < 6:
        X = opt.ask()
        opt.tell(X, branin01(X))
    theta, _ = opt.nominal()
    Z, _ = opt._data()
    Zq = np.random.default_rng(0).uniform(-1, 1, (5, 2))
    G, Gq = opt.net.jacobian(theta, Z), opt.net.jacobian(theta, Zq)
    A = G.T @ G + opt.reg * np.eye(opt.net.n_params)
    primal = opt.reg * np.einsum("ij,ij->i", Gq, np.linalg.solve(A, Gq.T).T)
    assert np.allclose(opt._sigma(theta, Zq) ** 2, primal, rtol=1e-6, atol=1e-10)
    # the width is smallest at the data
    at_data = opt._sigma(theta, Z)
    assert at_data.max() < opt._sigma(theta, Zq).min()


def test_jacobian_matches_finite_differences() -> None:
    net = TanhMLP(3, 4, input_scale=3.0)
    rng = np.random.default_rng(0)
    theta = net.init(rng, 3.0)
    Z = rng.uniform(-1, 1, (3, 3))
    h = 1e-6
    fd = np.stack(
        [(net(theta + h * e, Z) - net(theta - h * e, Z)) / (2 * h) for e in np.eye(net.n_params)],
        axis=1,
    )
    assert np.allclose(net.jacobian(theta, Z), fd, atol=1e-7)


def test_input_scale_by_evidence_picks_a_listed_scale_and_refits() -> None:
    opt = NeuralParametricBO(
        2, bounds=(np.zeros(2), np.ones(2)), seed=0, input_scale=None, n_init=8, **SMALL
    )
    while opt.y.size < 8:
        X = opt.ask()
        opt.tell(X, branin01(X))
    evidence = {s: opt.log_evidence(s) for s in opt.input_scales}
    assert opt.net.input_scale == max(evidence, key=evidence.__getitem__)
    assert np.allclose(opt.theta0[:16] / opt.net.input_scale, opt._theta0_unit[:16])


# -- the claims ----------------------------------------------------------------------------
@pytest.mark.slow
def test_low_dimension_beats_random_search_but_not_gp_bo() -> None:
    param, cover = measured("branin", "param_bo")
    gp, _ = measured("branin", "gp")
    rnd, _ = measured("branin", "random")
    print(
        f"branin regret param {param.mean():.2e} gp {gp.mean():.2e} random {rnd.mean():.2e}; "
        f"param coverage {np.round(cover, 2)}"
    )
    assert param.mean() < rnd.mean() / 3
    assert param.mean() < 0.01  # within 0.2% of the function's range (~6) of the minimum
    assert gp.mean() < param.mean()  # the honest direction: GP-BO wins in 2-D
    assert cover[1] >= 0.75 and cover[2] >= 0.9


@pytest.mark.slow
def test_mid_dimension_is_competitive_with_gp_bo_and_covers_like_it() -> None:
    param, cover = measured("hartmann6", "param_bo")
    gp, gp_cover = measured("hartmann6", "gp")
    rnd, _ = measured("hartmann6", "random")
    print(
        f"hartmann6 regret param {param.mean():.3f} gp {gp.mean():.3f} random {rnd.mean():.3f}; "
        f"coverage param {np.round(cover, 2)} gp {np.round(gp_cover, 2)}"
    )
    assert param.mean() < 2.0 * gp.mean()
    assert param.mean() < rnd.mean()
    assert cover[1] >= 0.9  # nominal 0.95 at beta = 2
    assert cover[0] <= 0.95  # and not vacuously wide (nominal 0.68 at beta = 1)
    assert abs(cover[1] - gp_cover[1]) <= 0.1
