"""LQZO: the ask/tell contract, its three ingredients, and the claim against quantized ZO.

The claim (issue 24 item 6): at equal forward passes LQZO fine-tunes an INT4 and an INT2
model better than the quantized-MeZO baseline. Measured here on the group scales of a
digits MLP under a one-pixel input shift (``digits_finetune_task``), 2000 forward
passes, seeds 0-4, ``lr=0.01`` for both: INT4 0.782 vs 0.770 accuracy (train loss 0.750
vs 0.921), INT2 0.781 vs 0.768 (0.712 vs 0.822). At ``lr=0.02`` INT4 still holds
(0.823 vs 0.798) but INT2 accuracy is a tie (0.809 vs 0.814, loss 0.601 vs 0.620); the
gain comes from the scale-isotropic perturbation, the low rank is neutral (see
benchmarks/zo_claims_lqzo_farsign.py). Issue 40: the claim is now paired by seed over 8
seeds with 95% t-intervals (the test's docstring has the numbers), and LQZO without its
per-group scaling is kept as a stand-in that fails it. The paper's "reshaping groups into
more isotropic structures" is available as ``reshape=True`` (our reading: groups ordered
by step into a near-square layout before the low-rank draw, see the module docstring).
Measured, it does not beat the rescale-only default (a null result, 8 seeds, paired
intervals straddle 0), so no test claims it does; it is tested for its structure and
for still beating quantized MeZO.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest
import torch

from optiforge.errors import ConfigError
from optiforge.evals.stats import mean_ci95
from optiforge.solvers.asktell import OPTIMIZERS, make
from optiforge.solvers.zo.lqzo import (
    LQZO,
    QZO_BASELINE,
    binary_gaussian,
    digits_finetune_task,
    finetune,
    group_scales,
    qmax_for_bits,
    square_group_layout,
)

torch.set_num_threads(1)


def _run(opt: LQZO, f, steps: int) -> None:  # type: ignore[no-untyped-def]
    for _ in range(steps):
        X = opt.ask()
        opt.tell(X, np.array([f(x) for x in X]))


# -- contract -----------------------------------------------------------------------------


def test_registered_unbounded_and_asks_a_probe_pair() -> None:
    opt = make("lqzo", 12, seed=0, shapes=[(3, 4)])
    assert OPTIMIZERS["lqzo"] is LQZO and not LQZO.box
    X = opt.ask()
    assert X.shape == (2, 12) and X.dtype == np.float64
    np.testing.assert_allclose((X[0] + X[1]) / 2, opt.recommend())


def test_optional_bounds_keep_the_iterate_inside() -> None:
    opt = LQZO(4, seed=0, bounds=(np.zeros(4), np.ones(4)), x0=np.full(4, 0.5), mu=0.1, lr=5.0)
    _run(opt, lambda x: float(-np.sum(x)), 20)  # pushes every coordinate up
    assert np.all(opt.recommend() <= 1.0) and np.all(opt.recommend() >= 0.0)


def test_tell_checks_its_arguments() -> None:
    opt = LQZO(6, seed=0)
    X = opt.ask()
    with pytest.raises(ValueError, match="not the asked"):
        opt.tell(X + 1.0, np.zeros(2))
    with pytest.raises(ValueError, match="shape"):
        opt.tell(X, np.zeros(3))
    with pytest.raises(ValueError, match="non-finite"):
        opt.tell(X, np.array([0.0, np.nan]))
    opt.tell(X, np.array([1.0, 0.0]))
    with pytest.raises(RuntimeError):
        opt.tell(X, np.zeros(2))


def test_bad_options_raise_config_errors() -> None:
    with pytest.raises(ConfigError, match="tile"):
        LQZO(10, shapes=[(3, 3)])
    with pytest.raises(ConfigError, match="rank"):
        LQZO(4, rank=0)
    with pytest.raises(ConfigError, match="scales"):
        LQZO(4, scales=-np.ones(4))


def test_same_seed_same_asks() -> None:
    def quad(x: np.ndarray) -> float:
        return float(np.sum((x - 1.0) ** 2))

    runs = []
    for _ in range(2):
        opt = LQZO(20, seed=3, shapes=[(4, 5)], scales=np.full(20, 0.1), qmax=7)
        _run(opt, quad, 5)
        runs.append((opt.ask(), opt.recommend()))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])


def test_descends_a_quadratic_without_quantization() -> None:
    opt = LQZO(30, seed=0, shapes=[(5, 6)], mu=1e-3, lr=0.01)
    f0 = float(np.sum((opt.recommend() - 1.0) ** 2))
    _run(opt, lambda x: float(np.sum((x - 1.0) ** 2)), 400)
    assert float(np.sum((opt.recommend() - 1.0) ** 2)) < 0.2 * f0


# -- the three ingredients ----------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 4, 16])
def test_binary_aggregated_entries_have_gaussian_low_moments(k: int) -> None:
    z = binary_gaussian(np.random.default_rng(0), (200_000,), k)
    assert abs(z.mean()) < 0.01 and abs(z.var() - 1.0) < 0.02
    assert abs(np.mean(z**3)) < 0.03  # symmetric
    assert abs(np.mean(z**4) - (3.0 - 2.0 / k)) < 0.1  # kurtosis 3 - 2/k -> Gaussian's 3
    assert np.allclose(z * np.sqrt(k) % 1.0, 0.0)  # a sum of k signs


def test_perturbation_is_low_rank_per_matrix_and_scaled_per_group() -> None:
    shapes = [(6, 8), (4, 6)]
    scales = np.concatenate([np.repeat([0.1, 2.0], 24), np.full(24, 0.5)])
    opt = LQZO(72, seed=1, shapes=shapes, scales=scales, rank=2)
    X = opt.ask()
    D = (X[0] - X[1]) / (2 * opt.mu)
    Z = D / scales  # isotropic: in scale units every group sees the same perturbation
    assert np.linalg.matrix_rank(Z[:48].reshape(6, 8)) == 2
    assert np.linalg.matrix_rank(Z[48:].reshape(4, 6)) == 2
    # without isotropy, the perturbation ignores the groups: mean scale times Z
    base = LQZO(72, seed=1, shapes=shapes, scales=scales, rank=2, isotropic=False)
    Xb = base.ask()
    np.testing.assert_allclose((Xb[0] - Xb[1]) / (2 * base.mu), Z * scales.mean())


def test_full_rank_baseline_and_lazy_v() -> None:
    opt = LQZO(48, seed=0, shapes=[(6, 8)], **QZO_BASELINE)
    D = opt.ask()[0] - opt.recommend()
    assert np.linalg.matrix_rank(D.reshape(6, 8)) == 6
    lazy = LQZO(48, seed=0, shapes=[(6, 8)], rank=1, resample_every=3)
    rows = []
    for _ in range(4):
        X = lazy.ask()
        rows.append((X[0] - X[1]).reshape(6, 8))
        lazy.tell(X, np.zeros(2))  # zero difference: x stays put
    # V is kept for 3 steps: the first three perturbations share their row space
    v = rows[0][np.argmax(np.abs(rows[0]).sum(1))]
    for R in rows[1:3]:
        r = R[np.argmax(np.abs(R).sum(1))]
        assert abs(abs(r @ v) / (np.linalg.norm(r) * np.linalg.norm(v)) - 1) < 1e-9
    r = rows[3][np.argmax(np.abs(rows[3]).sum(1))]
    assert abs(abs(r @ v) / (np.linalg.norm(r) * np.linalg.norm(v)) - 1) > 1e-3


def test_on_grid_mode_keeps_the_model_quantized_and_rounds_unbiased() -> None:
    s = np.repeat([0.05, 0.2], 8)
    opt = LQZO(16, seed=0, scales=s, qmax=1, x0=np.linspace(-0.3, 0.3, 16), mu=0.5, lr=0.3)
    _run(opt, lambda x: float(np.sum(np.sin(3 * x))), 30)
    codes = opt.recommend() / s
    np.testing.assert_allclose(codes, np.rint(codes), atol=1e-12)
    assert np.all(np.abs(codes) <= 1)
    # stochastic rounding is unbiased: the average re-quantized point is the point
    grid = LQZO(16, seed=0, scales=np.full(16, 0.1), qmax=7)
    x = np.linspace(-0.33, 0.33, 16)
    mean = np.mean([grid._on_grid(x, stochastic=True) for _ in range(4000)], axis=0)
    np.testing.assert_allclose(mean, x, atol=0.005)


def test_group_scales_clip_search_beats_max_scaling_at_int2() -> None:
    W = np.random.default_rng(0).standard_normal((8, 16))
    s = group_scales(W, 2, 4)
    assert s.shape == W.shape and qmax_for_bits(2) == 1 and qmax_for_bits(4) == 7
    naive = np.repeat(np.abs(W).reshape(8, 4, 4).max(2), 4, axis=1)
    err = np.sum((np.clip(np.rint(W / s), -1, 1) * s - W) ** 2)
    err_naive = np.sum((np.clip(np.rint(W / naive), -1, 1) * naive - W) ** 2)
    assert err < err_naive


# -- the claim ----------------------------------------------------------------------------


CLAIM_SEEDS = tuple(range(8))


@cache
def claim_runs(bits: int, variant: str) -> tuple[np.ndarray, np.ndarray]:
    """Test accuracy and train loss per seed after 2000 forward passes at ``lr = 0.01``."""
    task = digits_finetune_task(bits, seed=0)
    cfg: dict[str, Any] = {
        "qzo": dict(QZO_BASELINE),
        "lqzo": {},
        "lqzo_no_group_scaling": {"isotropic": False},  # the stand-in: key part removed
        "lqzo_reshaped": {"reshape": True},
    }[variant]
    opts = [finetune(task, 2000, seed=s, lr=0.01, **cfg) for s in CLAIM_SEEDS]
    return (
        np.array([task.accuracy(o.x) for o in opts]),
        np.array([task.loss(o.x) for o in opts]),
    )


def beats_qzo(bits: int, variant: str) -> tuple[bool, str]:
    """Paired by seed against quantized MeZO: train loss lower (interval below 0) and test
    accuracy not lower (interval's lower end above -0.01)."""
    acc, loss = claim_runs(bits, variant)
    acc0, loss0 = claim_runs(bits, "qzo")
    start = digits_finetune_task(bits, seed=0)
    start_acc = start.accuracy(start.x0)
    da, ha = mean_ci95(list(acc - acc0))
    dl, hl = mean_ci95(list(loss - loss0))
    ha, hl = ha or 0.0, hl or 0.0
    ok = acc0.mean() > start_acc + 0.2  # the baseline is a real one: it fine-tunes too
    ok = ok and dl + hl < 0.0 and da - ha > -0.01
    return bool(ok), (
        f"INT{bits} {variant}: acc {acc.mean():.3f} vs qzo {acc0.mean():.3f} (start "
        f"{start_acc:.3f}), difference {da:+.4f} [{da - ha:+.4f}, {da + ha:+.4f}]; loss "
        f"{loss.mean():.3f} vs {loss0.mean():.3f}, difference {dl:+.3f} [{dl - hl:+.3f}, "
        f"{dl + hl:+.3f}]"
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("bits", "variant", "holds"),
    [(4, "lqzo", True), (2, "lqzo", True), (4, "lqzo_no_group_scaling", False),
     (2, "lqzo_no_group_scaling", False), (4, "lqzo_reshaped", True)],
)  # fmt: skip
def test_lqzo_beats_quantized_zo_at_equal_forward_passes(
    bits: int, variant: str, holds: bool
) -> None:
    """Measured (8 seeds, 95% t-intervals of the paired difference): LQZO minus quantized
    MeZO, accuracy INT4 +0.014 [0.008, 0.020], INT2 +0.016 [0.001, 0.030]; train loss INT4
    -0.195 [-0.250, -0.139], INT2 -0.135 [-0.173, -0.096]. Without the per-group scaling
    (the stand-in) accuracy -0.007 [-0.018, 0.003] / 0.000 [-0.019, 0.019] and loss -0.046
    [-0.120, 0.028] / -0.042 [-0.104, 0.019]: no gain shown, the test fails it. With the
    groups reshaped (``reshape=True``): accuracy +0.020 [0.001, 0.038] / +0.007 [-0.006,
    0.021], loss -0.178 [-0.262, -0.093] / -0.108 [-0.189, -0.028]: it holds at INT4 (the
    gain is the per-group step; reshaped minus rescale-only straddles 0, see the module).
    INT2 reshaped is not asserted: its accuracy interval's lower end (-0.006) sits too close
    to the -0.01 limit to hold on every BLAS kernel (see test_param_bo for that effect)."""
    ok, msg = beats_qzo(bits, variant)
    print(msg)
    assert ok is holds, msg


# -- the reshaping (issue 40): groups rearranged by step into a near-square layout --------


def test_square_group_layout_is_near_square_sorted_and_keeps_groups_whole() -> None:
    steps = np.repeat(np.random.default_rng(0).uniform(0.1, 1.0, 32), 4)  # 32 groups of 4
    a, b, order = square_group_layout(steps, 4)
    assert (a, b) == (16, 8) and b % 4 == 0  # 128 entries; 8 x 16 would split no group either
    assert sorted(order.tolist()) == list(range(128))  # a permutation of the block
    laid = steps[order].reshape(a, b)
    assert np.all(np.diff(laid.reshape(-1)) >= 0)  # groups ordered by step
    groups = order.reshape(-1, 4)  # each run of 4 in the layout is one whole group
    assert np.all(groups // 4 == groups[:, :1] // 4) and np.all(np.diff(groups, axis=1) == 1)
    # an elongated 20 x 1 block of scales (one per group) becomes 5 x 4 (a >= b on a tie)
    assert square_group_layout(np.arange(1.0, 21.0), 1)[:2] == (5, 4)
    assert square_group_layout(np.ones(7), 1)[:2] == (7, 1)  # a prime size stays a column
    with pytest.raises(ConfigError, match="group_size"):
        square_group_layout(np.ones(10), 4)


def test_reshaped_perturbation_is_low_rank_in_the_group_layout() -> None:
    rng = np.random.default_rng(2)
    scales = np.concatenate([rng.uniform(0.05, 2.0, 40), rng.uniform(0.05, 2.0, 12)])
    shapes = [(40, 1), (3, 4)]  # an elongated column of group scales, and a small matrix
    opt = LQZO(52, seed=0, shapes=shapes, scales=scales, rank=1, reshape=True)
    Z = (opt.ask()[0] - opt.recommend()) / (opt.mu * scales)  # per-group step still applied
    a, b, order = square_group_layout(scales[:40], 1)
    assert (a, b) == (8, 5)
    # rank 1 in the sorted 8 x 5 layout, not merely a scalar times a Gaussian column
    assert np.linalg.matrix_rank(Z[:40][order].reshape(a, b)) == 1
    assert np.linalg.matrix_rank(Z[:40].reshape(8, 5)) > 1  # the natural order is not it
    a2, b2, order2 = square_group_layout(scales[40:], 1)
    assert np.linalg.matrix_rank(Z[40:][order2].reshape(a2, b2)) == 1
    # the stand-in draws in the natural layout: the 40 x 1 column is any Gaussian column
    flat = LQZO(52, seed=0, shapes=shapes, scales=scales, rank=1)
    Zf = (flat.ask()[0] - flat.recommend()) / (flat.mu * scales)
    assert np.linalg.matrix_rank(Zf[40:].reshape(3, 4)) == 1


def test_reshape_is_a_pure_rearrangement_when_the_layout_is_already_square_and_sorted() -> None:
    # equal steps keep the natural order (stable sort) and 8 x 6 is its own layout: the
    # reshaped optimizer must draw exactly the rescale-only perturbations
    kw: dict[str, Any] = {"shapes": [(8, 6)], "scales": np.full(48, 0.3), "rank": 2}
    a, b = LQZO(48, seed=5, reshape=True, **kw), LQZO(48, seed=5, **kw)
    for _ in range(3):
        Xa, Xb = a.ask(), b.ask()
        np.testing.assert_array_equal(Xa, Xb)
        a.tell(Xa, np.array([1.0, 0.0]))
        b.tell(Xb, np.array([1.0, 0.0]))
