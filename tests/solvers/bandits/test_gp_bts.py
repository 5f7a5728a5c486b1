"""GP-BTS: the ask/tell contract and the batched-Thompson-sampling claims on Branin.

Claims (issue 24, item 1), measured on standardized Branin (``branin01``, range about 6),
32 evaluations, seeds 0-2, 256 Sobol + 64 local candidates per batch:

- Batch size ``Q`` does not cost a factor ``Q``: mean cumulative regret over the same 32
  evaluations (10.98 for ``Q = 1``), relative to sequential TS, is 1.65x for ``Q = 4`` and
  1.28x for ``Q = 8``; the test asserts a ratio below ``Q / 2``.
- Noiseless converges faster than noisy (noise sd 0.2, ``Q = 4``): mean simple regret
  (best true value among the evaluated points) 4.9e-4 noiseless vs 8.9e-3 noisy.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from optiforge.errors import ConfigError
from optiforge.solvers.asktell import OPTIMIZERS
from optiforge.solvers.bandits.gp_bts import GPBatchedThompson, matern52
from optiforge.solvers.bandits.testfns import BRANIN_MIN, branin01, noisy_run

threadpool_limits(1)

BOX = (np.zeros(2), np.ones(2))
SEEDS = (0, 1, 2)
T = 32


@cache
def regrets(batch: int, noise_sd: float) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative and simple regret (true ``f``) of ``T`` evaluations, one per seed."""
    cum, simple = [], []
    for seed in SEEDS:
        opt = GPBatchedThompson(2, bounds=BOX, seed=seed, batch=batch, n_candidates=256, n_local=64)
        gaps = noisy_run(opt, branin01, T, noise_sd, seed) - BRANIN_MIN
        cum.append(gaps.sum())
        simple.append(gaps.min())
    return np.asarray(cum), np.asarray(simple)


# -- contract ------------------------------------------------------------------------------
def test_registered_under_its_name() -> None:
    assert OPTIMIZERS["gp_bts"] is GPBatchedThompson
    assert GPBatchedThompson.box


def test_ask_shape_bounds_and_tell_checks() -> None:
    lo, hi = np.array([-2.0, 10.0, 0.0]), np.array([1.0, 12.0, 0.5])
    opt = GPBatchedThompson(3, bounds=(lo, hi), seed=3, batch=4, n_candidates=64, n_local=16)
    for _ in range(3):
        X = opt.ask()
        assert X.shape == (4, 3) and X.dtype == np.float64
        assert np.all((lo <= X) & (hi >= X))
        with pytest.raises(RuntimeError):
            opt.ask()
        with pytest.raises(ValueError):
            opt.tell(X + 1e-3, np.zeros(4))
        with pytest.raises(ValueError):
            opt.tell(X, np.zeros(3))
        with pytest.raises(ValueError):
            opt.tell(X, np.array([0.0, np.nan, 0.0, 0.0]))
        opt.tell(X, np.sum((X - lo) ** 2, axis=1))
    assert opt.recommend().shape == (3,)


def test_seeded_runs_repeat() -> None:
    def asks(seed: int) -> list[np.ndarray]:
        opt = GPBatchedThompson(2, bounds=BOX, seed=seed, batch=2, n_candidates=64, n_local=16)
        out = []
        for _ in range(4):
            X = opt.ask()
            out.append(X)
            opt.tell(X, branin01(X))
        return out

    a, b, c = asks(5), asks(5), asks(6)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))
    assert not all(np.array_equal(x, y) for x, y in zip(a, c, strict=True))


def test_bad_options_raise() -> None:
    with pytest.raises(ConfigError):
        GPBatchedThompson(2, bounds=BOX, batch=0)
    with pytest.raises(ConfigError):
        GPBatchedThompson(2, bounds=BOX, noise=-1.0)
    with pytest.raises(ConfigError):
        GPBatchedThompson(2)  # no bounds


# -- the model and the rule ----------------------------------------------------------------
def test_first_batch_samples_the_prior_no_design() -> None:
    """No uncertainty-sampling phase: batch one is Q prior draws' minimizers, all distinct."""
    opt = GPBatchedThompson(2, bounds=BOX, seed=0, batch=8)
    X = opt.ask()
    assert len({tuple(r) for r in X.round(9)}) == 8
    opt.tell(X, branin01(X))
    assert opt.X.shape == (8, 2)  # the very next batch is already model-driven


def test_noiseless_model_interpolates_and_noisy_model_smooths() -> None:
    sds = {}
    for noise in (0.0, 0.5):
        opt = GPBatchedThompson(2, bounds=BOX, seed=0, noise=noise, batch=12, n_candidates=64)
        X = opt.ask()
        y = branin01(X)
        opt.tell(X, y)
        mean, sds[noise] = opt.predict(X)
        if noise == 0.0:
            assert np.max(np.abs(mean - y)) < 1e-2 * np.std(y)
            assert np.all(sds[noise] < 0.05 * np.std(y))
    assert sds[0.5].min() > sds[0.0].max()


def test_matern52_is_a_correlation() -> None:
    A = np.random.default_rng(1).random((5, 3))
    K = matern52(A, A, np.array([0.2, 0.5, 1.0]))
    assert np.allclose(np.diag(K), 1.0) and np.allclose(K, K.T)
    assert np.linalg.eigvalsh(K).min() > 0


# -- the paper's claims --------------------------------------------------------------------
@pytest.mark.parametrize("batch", [4, 8])
def test_batch_regret_does_not_degrade_by_factor_q(batch: int) -> None:
    cum1, simple1 = regrets(1, 0.0)
    cumq, simpleq = regrets(batch, 0.0)
    ratio = cumq.mean() / cum1.mean()
    print(f"Q={batch}: cumulative regret {cumq.mean():.2f} vs Q=1 {cum1.mean():.2f}: {ratio:.2f}x")
    assert ratio < batch / 2
    assert simpleq.mean() < 0.05  # every batch size finds the Branin minimum (range ~6)


def test_noiseless_converges_faster_than_noisy() -> None:
    _, clean = regrets(4, 0.0)
    _, noisy = regrets(4, 0.2)
    print(f"simple regret noiseless {clean.mean():.2e} vs noisy {noisy.mean():.2e}")
    assert clean.mean() < noisy.mean()
    assert np.median(clean) < np.median(noisy)
