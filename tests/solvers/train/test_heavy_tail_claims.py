"""The heavy-tail claims at CI size: the mean error of SMD / SGD over many independent runs
(vectorised, one ``(R, d)`` parameter) decays in T with the exponent our derivation
predicts (``heavy_tail.predicted_exponent``), for several tail exponents p, without a
bounded domain where the problem has none. A method passes the claim only if every fitted
slope is within ``TOL`` of the prediction AND the slopes are ordered in p (smaller p,
slower decay); the broken variant (a constant step not scaled with T) must fail it.
Full size: ``benchmarks/heavy_tail_claims.py``."""

from __future__ import annotations

import pytest
import torch

from optiforge.solvers.train.heavy_tail import predicted_exponent
from optiforge.solvers.train.heavy_tail_problems import (
    BatchProblem,
    L1Unbounded,
    RippleRegression,
    SimplexL1,
    slope_with_interval,
)
from optiforge.solvers.train.heavy_tail_problems import run as run_batch

PS = [1.25, 1.5, 2.0]
TOL = 0.1

pytestmark = pytest.mark.slow


def _slopes(
    problem: BatchProblem, horizons: list[int], runs: int, ps: list[float] = PS, **cfg: object
) -> tuple[list[tuple[float, float, float]], list[torch.Tensor]]:
    out, last = [], []
    for p in ps:
        errs = [run_batch(problem, p=p, horizon=t, runs=runs, seed=100 * i + 1, **cfg)  # type: ignore[arg-type]
                for i, t in enumerate(horizons)]  # fmt: skip
        out.append(
            slope_with_interval(horizons, errs, sqrt=problem.setting == "nonconvex", boot=200)
        )
        last.append(errs[-1])
    return out, last


def _claim_holds(slopes: list[float], preds: list[float], tol: float) -> bool:
    close = all(abs(s - e) <= tol for s, e in zip(slopes, preds, strict=True))
    ordered = all(a > b for a, b in zip(slopes, slopes[1:], strict=False))
    return close and ordered


def test_entropic_smd_on_the_simplex_decays_at_t_to_minus_p_minus_1_over_p() -> None:
    prob = SimplexL1()
    preds = [predicted_exponent(p, "convex") for p in PS]
    good, _ = _slopes(prob, [128, 512, 2048], 2000, map="entropic", lr=0.5)
    const, _ = _slopes(prob, [128, 512, 2048], 1000, map="entropic", lr=0.5, schedule="constant")
    s_good, s_const = [s[0] for s in good], [s[0] for s in const]
    assert _claim_holds(s_good, preds, TOL), (s_good, preds)
    assert not _claim_holds(s_const, preds, TOL), (s_const, preds)
    # the unscaled constant step is clearly slower at p = 2 (intervals)
    assert const[-1][1] > good[-1][2], (const[-1], good[-1])


def test_power_map_smd_converges_in_expectation_on_an_unbounded_domain() -> None:
    # p = 2 is left out here: the power map is then the Euclidean one, and with tail index
    # 2.1 the mean over 1000 runs is still erratic (the benchmark reports it with 4000)
    ps = [1.25, 1.5, 1.75]
    prob = L1Unbounded()
    preds = [predicted_exponent(p, "convex") for p in ps]
    power, power_last = _slopes(prob, [256, 1024, 4096], 1000, ps, map="power", lr=4.0)
    const, _ = _slopes(
        prob,
        [256, 1024, 4096],
        1000,
        ps,
        map="power",
        lr=4.0 * 256 ** (-1 / 1.5),
        schedule="constant",
    )
    assert _claim_holds([s[0] for s in power], preds, TOL), (power, preds)
    assert not _claim_holds([s[0] for s in const], preds, TOL), (const, preds)
    # Euclidean SGD with the same schedule: typical runs converge, the mean is carried by
    # rare runs thrown far away (no bounded domain caps a jump): a far heavier upper tail
    torch.manual_seed(0)
    eucl = run_batch(prob, p=1.25, horizon=4096, runs=1000, seed=101, map="euclidean", lr=4.0)
    tail = [float(e.quantile(0.999) / e.median()) for e in (eucl, power_last[0])]
    assert tail[0] > 3 * tail[1], tail


def test_nonconvex_sgd_gradient_norm_rate_and_clipped_sgd() -> None:
    prob = RippleRegression(n=4)
    hs = [256, 1024, 4096]
    preds = [predicted_exponent(p, "nonconvex") for p in PS]
    sgd, _ = _slopes(prob, hs, 500, lr=0.15, ref_horizon=256)
    clip, _ = _slopes(prob, hs, 500, method="clipped", lr=0.15, clip=2.0, ref_horizon=256)
    const, _ = _slopes(prob, hs, 500, lr=0.15, schedule="constant")
    s_sgd = [s[0] for s in sgd]
    assert _claim_holds(s_sgd, preds, 0.06), (s_sgd, preds)
    assert not _claim_holds([s[0] for s in const], preds, 0.06), const
    # plain SGD's exponent is (p-1)/(2p), not the clipped/minimax (p-1)/(3p-2): at p = 1.25
    # the fitted slope is nearer the former, and clipped SGD decays faster (intervals apart)
    s125 = s_sgd[0]
    assert abs(s125 - preds[0]) < abs(s125 - predicted_exponent(1.25, "nonconvex", clipped=True))
    for i in (0, 1):
        assert clip[i][2] < sgd[i][1], (clip[i], sgd[i])
