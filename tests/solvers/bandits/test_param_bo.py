"""Nonlinear parametric BO: the contract, the gradient-kernel bound, and the claims.

Claims (issue 24, item 2), noiseless, 30 evaluations, default settings of both methods,
against GP-BO = GP Thompson sampling (``gp_bts`` with ``Q = 1``: Matern-5/2 ARD GP, MAP
hyperparameters) and uniform random search; coverage of ``mean +- beta sd`` on 500 uniform
held-out points after the run.

Why the claims changed (issue 40): the old ones (3 / 5 seeds, "3x better than random" on
Branin, "within 2x of GP" on Hartmann-6) failed on another machine. The cause is not the
thread count (1, 2 and 4 BLAS threads give bit-identical runs) but the CPU: OpenBLAS is built
with ``DYNAMIC_ARCH`` and picks its kernels per CPU (SkylakeX here; ``OPENBLAS_CORETYPE``
forces another), the last bits of the MLP's products change, and 30 sequential decisions
(an L-BFGS fit that stops at ``maxiter``, then an argmin over candidates) amplify them into a
different run. ``OPENBLAS_CORETYPE=Haswell`` reproduces the other machine's Branin mean
1.18e-2 exactly (SkylakeX: 2.6e-3). A run of ``param_bo`` is therefore a draw, not a
number; GP-BO gave bit-identical runs under every kernel tried. The claims are now paired
by seed on log regret (12 seeds, 95% Student-t interval of the geometric-mean ratio) and
were checked under the SkylakeX, Haswell (= Zen) and Prescott kernels:

    ratio (upper end of the interval)   SkylakeX      Haswell       Prescott
    branin    param_bo / random         0.14 (0.30)   0.21 (0.68)   0.16 (0.58)
              param_bo / gp_bts         43 (lower 8.7) 68 (13.8)    50 (8.6)
    hartmann6 param_bo / random         0.39 (0.58)   0.43 (0.77)   0.43 (0.68)
              param_bo / gp_bts         1.09 (2.29)   1.22 (2.59)   1.21 (2.21)

    mean simple regret (12 seeds): branin param_bo 9.4e-3 / 1.26e-2 / 1.14e-2, gp 1.8e-4,
    random 3.1e-2; hartmann6 param_bo 0.76 / 0.90 / 0.88, gp 0.79, random 1.81.

Asserted: param_bo beats random search (upper end < 0.8) in 2-D and 6-D; in 2-D GP-BO beats
param_bo (lower end > 1, the honest direction); in 6-D param_bo is within 3x of GP-BO (upper
end < 3; the point estimate is 1.1-1.2x, 12 seeds cannot pin it closer). Coverage, lower end
of its interval over seeds at beta = 1 / 2 / 3: Branin 0.39 / 0.73 / 0.86 (SkylakeX) and
0.37 / 0.68 / 0.80 (Haswell, Prescott): it under-covers (nominal 0.68 / 0.95 / 1.00), and the
test asserts only >= 0.6 at beta = 2 and >= 0.75 at beta = 3; Hartmann-6 [0.84, 0.93] at
beta = 1 (not vacuously wide: upper end <= 0.97) and >= 0.96 at beta = 2 (asserted >= 0.85,
and within 0.1 of the GP's mean 0.97).
Random search in place of param_bo fails every claim (``test_claims_reject_random_search``).
On Branin ``param_bo`` runs split between the global basin (regret ~1e-3) and a boundary
basin (~3e-2), which is why its mean is so kernel-dependent.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from optiforge.errors import ConfigError
from optiforge.evals.stats import mean_ci95
from optiforge.solvers.asktell import OPTIMIZERS
from optiforge.solvers.bandits.gp_bts import GPBatchedThompson
from optiforge.solvers.bandits.param_bo import NeuralParametricBO, TanhMLP
from optiforge.solvers.bandits.testfns import BRANIN_MIN, HARTMANN6_MIN, branin01, hartmann6

threadpool_limits(1)

BUDGET = 30
PROBLEMS = {"branin": (branin01, BRANIN_MIN, 2), "hartmann6": (hartmann6, HARTMANN6_MIN, 6)}
SMALL: dict[str, Any] = {"hidden": 8, "n_candidates": 64, "n_local": 16, "maxiter": 50}
SEEDS = tuple(range(12))
"""Per-seed regrets spread over a factor ~100 on Branin (two basins) and ~10 on Hartmann-6."""


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
    """Simple regret per seed (``(n,)``) and coverage per seed (``n x 3``; zeros for random)."""
    f, fmin, d = PROBLEMS[problem]
    box = (np.zeros(d), np.ones(d))
    regrets, covers = [], []
    for s in SEEDS:
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
    return np.asarray(regrets), np.asarray(covers) if covers else np.zeros((len(SEEDS), 3))


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
def ratio_interval(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """Geometric-mean ratio ``a / b`` paired by seed and its 95% t-interval (lower, upper)."""
    m, half = mean_ci95(list(np.log(a) - np.log(b)))
    h = half if half is not None else np.inf
    return float(np.exp(m)), float(np.exp(m - h)), float(np.exp(m + h))


def coverage_interval(covers: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean coverage at beta = 1, 2, 3 and the ends of its 95% t-interval over seeds."""
    mean = covers.mean(axis=0)
    half = np.array([mean_ci95(list(c))[1] or 0.0 for c in covers.T])
    return mean, mean - half, mean + half


def low_dimension_claim(method: str) -> tuple[bool, str]:
    """Branin: ``method`` beats random search, and GP-BO beats it (the honest direction)."""
    regret, covers = measured("branin", method)
    cover, cover_lo, _ = coverage_interval(covers)
    gp, _ = measured("branin", "gp")
    rnd, _ = measured("branin", "random")
    vs_rnd, vs_gp = ratio_interval(regret, rnd), ratio_interval(regret, gp)
    ok = vs_rnd[2] < 0.8 and vs_gp[1] > 1.0
    if method != "random":
        ok = ok and cover_lo[1] >= 0.6 and cover_lo[2] >= 0.75  # under-covers, not useless
    return bool(ok), (
        f"branin {method} regret {regret.mean():.2e} gp {gp.mean():.2e} random {rnd.mean():.2e}; "
        f"/random {vs_rnd[0]:.2f} [{vs_rnd[1]:.2f}, {vs_rnd[2]:.2f}], /gp {vs_gp[0]:.1f} "
        f"[{vs_gp[1]:.1f}, {vs_gp[2]:.1f}]; coverage {np.round(cover, 2)} lower {np.round(cover_lo, 2)}"
    )


def mid_dimension_claim(method: str) -> tuple[bool, str]:
    """Hartmann-6: within 3x of GP-BO, better than random, covers like the GP."""
    regret, covers = measured("hartmann6", method)
    cover, cover_lo, cover_hi = coverage_interval(covers)
    gp, gp_covers = measured("hartmann6", "gp")
    gp_cover = gp_covers.mean(axis=0)
    rnd, _ = measured("hartmann6", "random")
    vs_rnd, vs_gp = ratio_interval(regret, rnd), ratio_interval(regret, gp)
    ok = vs_rnd[2] < 0.8 and vs_gp[2] < 3.0
    if method != "random":
        ok = ok and cover_lo[1] >= 0.85 and cover_hi[0] <= 0.97
        ok = ok and abs(cover[1] - gp_cover[1]) <= 0.1
    return bool(ok), (
        f"hartmann6 {method} regret {regret.mean():.3f} gp {gp.mean():.3f} random "
        f"{rnd.mean():.3f}; /random {vs_rnd[0]:.2f} [{vs_rnd[1]:.2f}, {vs_rnd[2]:.2f}], /gp "
        f"{vs_gp[0]:.2f} [{vs_gp[1]:.2f}, {vs_gp[2]:.2f}]; coverage {np.round(cover, 2)} "
        f"[{np.round(cover_lo, 2)}, {np.round(cover_hi, 2)}] "
        f"gp {np.round(gp_cover, 2)}"
    )


@pytest.mark.slow
def test_low_dimension_beats_random_search_but_not_gp_bo() -> None:
    ok, msg = low_dimension_claim("param_bo")
    print(msg)
    assert ok, msg


@pytest.mark.slow
def test_mid_dimension_is_competitive_with_gp_bo_and_covers_like_it() -> None:
    """Coverage: nominal 0.95 at beta = 2, not vacuously wide at beta = 1 (nominal 0.68)."""
    ok, msg = mid_dimension_claim("param_bo")
    print(msg)
    assert ok, msg


@pytest.mark.slow
def test_claims_reject_random_search() -> None:
    """The stand-in: uniform random search in place of param_bo fails both claims."""
    for claim in (low_dimension_claim, mid_dimension_claim):
        ok, msg = claim("random")
        print(msg)
        assert not ok, msg
