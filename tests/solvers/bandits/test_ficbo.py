"""FICBO: the feedback prior, the token encoding, the shipped transformer, the ask/tell
contract, and the paper's qualitative claim on problems small enough for CI."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from optiforge.errors import ConfigError
from optiforge.solvers.asktell import OPTIMIZERS, make, minimize, names
from optiforge.solvers.bandits import ficbo as F

torch.set_num_threads(1)  # the shared CI box: threads make small forwards slower

BOX1 = (np.zeros(1), np.ones(1))
BOX2 = (np.zeros(2), np.ones(2))


def _spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


# -- prior ---------------------------------------------------------------------------------
def test_prior_batch_shapes_and_access() -> None:
    gen = torch.Generator().manual_seed(0)
    b = F.sample_prior_batch(64, 5, 7, 2, gen)
    assert b.x.shape == (64, 12, 2) and b.y.shape == (64, 12)
    assert b.fb.shape == (64, 12, F.K_MAX) and b.avail.dtype == torch.bool
    assert torch.isfinite(b.fb).all() and torch.isfinite(b.y).all()
    # access varies: some sources are absent, some partially available, most fully
    frac = b.avail.float().mean(1)  # B x K
    assert (frac == 0).any() and ((frac > 0) & (frac < 1)).any() and (frac == 1).any()


@pytest.mark.parametrize("dim", [1, 2])
def test_prior_task_relevance_sets_the_rank_correlation(dim: int) -> None:
    X = np.random.default_rng(0).random((300, dim))
    for rho, lo, hi in ((0.95, 0.75, 1.0), (-0.95, -1.0, -0.75), (0.0, -0.6, 0.6)):
        t = F.prior_task(3, dim, rho)
        f = np.array([t.f(x) for x in X])
        g = np.array([t.feedback(x)["aux"] for x in X])
        assert lo <= _spearman(f, g) <= hi, (rho, _spearman(f, g))
        assert t.f_min <= f.min() + 1e-9 and t.f_max >= f.max() - 1e-9 - 0.05


def test_forrester_low_fidelity_misplaces_the_minimum() -> None:
    t = F.forrester_task()
    X = np.linspace(0, 1, 1001)
    lo = np.array([t.feedback(np.array([x]))["low_fidelity"] for x in X])
    assert abs(X[np.argmin(lo)] - 0.092) < 0.01  # trusting it costs ~0.25 regret
    assert t.regret(t.f(np.array([X[np.argmin(lo)]]))) == pytest.approx(0.25, abs=0.01)


# -- encoding ------------------------------------------------------------------------------
def test_encoding_rank_feature_is_invariant_to_monotone_warps() -> None:
    gen = torch.Generator().manual_seed(1)
    b = F.sample_prior_batch(4, 6, 5, 1, gen)
    avail = torch.ones_like(b.avail)
    tok, mean, std = F.encode_tokens(b.x, b.y[:, :6], b.fb, avail)
    tok2, _, _ = F.encode_tokens(b.x, b.y[:, :6], 3 * torch.exp(b.fb / 10) - 7, avail)
    base = F.D_MAX + 2
    rank = [base + 3 * k + 1 for k in range(F.K_MAX)]
    assert torch.allclose(tok[..., rank], tok2[..., rank])
    assert tok.shape == (4, 11, F.TOKEN_DIM)
    assert torch.all(tok[:, 6:, F.D_MAX] == 0) and torch.all(tok[:, 6:, F.D_MAX + 1] == 0)
    assert torch.allclose(tok[:, :6, F.D_MAX].mean(1), torch.zeros(4), atol=1e-5)
    # an unavailable value leaves no trace
    avail[:, 2, 0] = False
    tok3, _, _ = F.encode_tokens(b.x, b.y[:, :6], b.fb, avail)
    assert torch.all(tok3[:, 2, base : base + 3] == 0)


# -- model and training --------------------------------------------------------------------
def test_tiny_training_run_saves_and_loads(tmp_path: Path) -> None:
    net, losses = F.train(12, seed=0, batch=8, n_qry=8, max_ctx=8, net=F.FICBONet(16, 2, 1, 32))
    assert len(losses) == 1 and math.isfinite(losses[0])
    path = tmp_path / "w.pt"
    F.save_weights(net, path, steps=12)
    loaded = F.load_weights(path)
    gen = torch.Generator().manual_seed(0)
    b = F.sample_prior_batch(2, 4, 3, 2, gen)
    tok, _, _ = F.encode_tokens(b.x, b.y[:, :4], b.fb, b.avail)
    with torch.no_grad():
        assert torch.allclose(net(tok, 4)[0], loaded(tok, 4)[0])


def test_shipped_weights_are_small_and_documented() -> None:
    assert F.WEIGHTS.exists() and F.WEIGHTS.stat().st_size < 2_000_000
    meta = torch.load(F.WEIGHTS, map_location="cpu", weights_only=True)["meta"]
    assert meta["steps"] >= 1000 and meta["train_seconds"] > 0


def _nll_with_and_without_feedback(
    rho: float, n: int = 256, n_ctx: int = 10
) -> tuple[float, float]:
    """Mean NLL of the shipped model on prior batches whose first source has relevance
    ``rho`` and full access (the second source absent), with the feedback read or masked."""
    gen = torch.Generator().manual_seed(7)
    target = F.RFFunctions.sample(n, 1, gen)
    src = F.FeedbackSources.sample(n, 1, gen)
    src.rho[:, 0] = rho
    src.present[:, 0], src.present[:, 1] = True, False
    src.access[:, 0] = 1.0
    x = torch.rand(n, n_ctx + 32, 1, generator=gen)
    y = target(x)
    fb, avail = src(target, x, gen)
    net = F.load_weights()
    out = []
    for av in (avail, torch.zeros_like(avail)):
        batch = F.PriorBatch(x, y, fb, av, n_ctx)
        with torch.no_grad():
            out.append(float(F.prior_nll(net, batch)))
    return out[0], out[1]


def test_model_exploits_an_informative_source_and_discounts_an_irrelevant_one() -> None:
    # Measured with the shipped weights (n_ctx = 10, 1-D, 256 functions): informative
    # -1.73 vs -1.52 without feedback, sign-flipped -1.68, irrelevant -1.48 (a 0.05 cost).
    with_fb, without = _nll_with_and_without_feedback(0.95)
    assert with_fb < without - 0.15, (with_fb, without)
    with_fb, without = _nll_with_and_without_feedback(-0.95)  # reversed: learnt in context
    assert with_fb < without - 0.1, (with_fb, without)
    with_fb, without = _nll_with_and_without_feedback(0.0)
    assert with_fb < without + 0.1, (with_fb, without)


# -- ask/tell contract ---------------------------------------------------------------------
def test_registered_and_contract() -> None:
    assert OPTIMIZERS["ficbo"] is F.FICBO and "ficbo" in names(box_only=True)
    t = F.prior_task(0, 2, 0.95)
    lo, hi = np.array([-1.0, 2.0]), np.array([1.0, 5.0])

    def fb(x: np.ndarray) -> Mapping[str, Any]:
        return t.feedback((x - lo) / (hi - lo))

    def f(x: np.ndarray) -> float:
        return t.f((x - lo) / (hi - lo))

    runs = []
    for _ in range(2):
        opt = make("ficbo", 2, bounds=(lo, hi), seed=3, feedback_fn=fb, n_candidates=64)
        res = minimize(f, opt, 8)
        assert res.X.shape == (8, 2) and np.all(lo <= res.X) and np.all(hi >= res.X)
        runs.append(res.X)
        assert isinstance(opt, F.FICBO)
        assert opt.last_prediction is not None and opt.last_prediction[0].shape == (64,)
    assert np.array_equal(runs[0], runs[1])  # seeded
    assert isinstance(opt, F.FICBO) and opt.book.names == ["aux"]


def test_feedback_told_per_point_and_partial_access() -> None:
    opt = F.FICBO(1, bounds=BOX1, seed=0, n_candidates=32)
    for i in range(5):
        X = opt.ask()
        fb = [{"a": float(X[0, 0]), "b": None if i % 2 else math.nan}] if i != 3 else [{}]
        opt.tell(X, np.array([float(X[0, 0]) ** 2]), fb)
    assert opt.book.names == ["a", "b"]
    assert opt._fb_avail[:, 0].tolist() == [True, True, True, False, True]
    assert not opt._fb_avail[:, 1].any()  # None and NaN: no access
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        X = opt.ask()
        opt.tell(X, np.array([0.0]), [{"a": 1.0, "c": 2.0, "d": 3.0}])
    assert any("ignoring" in str(x.message) for x in w)
    assert opt.book.names == ["a", "b"]


def test_bad_options() -> None:
    with pytest.raises(ConfigError):
        make("ficbo", 3, bounds=(np.zeros(3), np.ones(3)))
    with pytest.raises(ConfigError):
        make("ficbo", 1, bounds=BOX1, n_init=2)
    with pytest.raises(ConfigError):
        F.FeedbackGreedy(1, bounds=BOX1)


def test_no_feedback_mode_ignores_the_feedback() -> None:
    good = F.prior_task(0, 1, 0.95)
    bad = F.prior_task(0, 1, -0.95)
    X = []
    for t in (good, bad):
        opt = F.FICBO(1, bounds=BOX1, seed=0, feedback_fn=t.feedback, use_feedback=False)
        X.append(minimize(good.f, opt, 8).X)
    assert np.array_equal(X[0], X[1])


@pytest.mark.slow
def test_gate_keeps_relevant_sources_more_often_than_irrelevant_ones() -> None:
    # Measured: kept 21 of 24 runs with rho = +-0.95, 6 of 12 with rho = 0 (1-D and 2-D,
    # 12 evaluations). In 1-D twelve points already pin the target, so a relevant source
    # adds little and is sometimes dropped: the gate is a guard, not a detector.
    kept: dict[float, list[bool]] = {}
    for dim in (1, 2):
        box = (np.zeros(dim), np.ones(dim))
        for rho in (0.95, -0.95, 0.0):
            for i in range(6):
                t = F.prior_task(i, dim, rho)
                opt = F.FICBO(
                    dim, bounds=box, seed=0, feedback_fn=t.feedback, n_candidates=64, gate=True
                )
                minimize(t.f, opt, 12)
                assert opt.last_gate is not None
                kept.setdefault(abs(rho), []).append(bool(opt.last_gate[0]))
    assert np.mean(kept[0.95]) >= np.mean(kept[0.0]) + 0.25, kept


# -- the claim -----------------------------------------------------------------------------
# Held-out prior targets (seeds training never drew) with one source that is informative
# (rho = 0.95), irrelevant (rho = 0) or misleading (rho = -0.95, sign flipped), plus the
# Forrester function with its low-fidelity model and that model negated. The regret is
# normalized, ``(best f - min f) / (max f - min f)`` after the budget.
#
# Measured with the shipped weights (mean regret; no-feedback / FICBO / trusting), before
# issue 40 (the trusting test now reads the regret of each arm's own choices, see below):
#   prior informative   0.051 / 0.011 / 0.020
#   prior irrelevant    0.051 / 0.050 / 0.160
#   prior misleading    0.051 / 0.002 / 0.192   (the reversed source is exploited)
#   Forrester           0.058 / 0.058 / 0.143   (no measurable gain from this source)
#   Forrester flipped   0.058 / 0.058 / 0.143
# Regret of the arms' own choices (after the shared design; FICBO / trusting), issue 40:
#   prior informative 0.011 / 0.022, irrelevant 0.050 / 0.580, misleading 0.002 / 0.953,
#   Forrester 0.059 / 0.252, Forrester flipped 0.058 / 0.985: the flip now shows.
# Asserted: FICBO below half the no-feedback regret with informative prior sources; never
# worse than no feedback by more than MARGIN; the trusting baseline at least twice FICBO's
# regret and 0.05 above it wherever the source is misleading or irrelevant (on its own
# choices), and worse by 0.1 than the same baseline with the honest source. Not asserted,
# because it did not hold: a gain on Forrester (its low-fidelity minimizer sits near f's
# local minimum, and all arms find the basin within the budget), and the 0.2 gap to the
# trusting baseline first planned (measured 0.19 on the prior, 0.09 on Forrester).
CLAIM_FUNCS = {1: 10, 2: 6}
CLAIM_BUDGET = {1: 10, 2: 14}
SCENARIOS = {"informative": 0.95, "irrelevant": 0.0, "misleading": -0.95}
MARGIN = 0.05


@pytest.fixture(scope="module")
def claim_table() -> dict[str, dict[str, float]]:
    """Mean normalized regret per scenario (rows) and arm (columns); ``<arm>_chosen`` is the
    regret over the arm's own choices, after the shared initial design."""
    table: dict[str, dict[str, float]] = {}
    acc: dict[str, dict[str, list[float]]] = {}

    def add(row: dict[str, list[float]], arm: str, both: tuple[float, float]) -> None:
        row.setdefault(arm, []).append(both[0])
        row.setdefault(f"{arm}_chosen", []).append(both[1])

    for dim, n_fun in CLAIM_FUNCS.items():
        budget = CLAIM_BUDGET[dim]
        for i in range(n_fun):
            base = F.prior_task(i, dim, 0.0)
            no_fb = F.regrets_after(base, "ficbo_no_feedback", budget, n_candidates=128)
            for label, rho in SCENARIOS.items():
                t = F.prior_task(i, dim, rho)
                row = acc.setdefault(label, {})
                add(row, "no_feedback", no_fb)
                for arm in ("ficbo", "feedback_greedy"):
                    add(row, arm, F.regrets_after(t, arm, budget, n_candidates=128))
    for label, flipped in (("forrester", False), ("forrester_flipped", True)):
        t = F.forrester_task(flipped=flipped)
        row = acc.setdefault(label, {})
        for seed in range(4):
            for arm, name in (("ficbo", "ficbo"), ("no_feedback", "ficbo_no_feedback"),
                              ("feedback_greedy", "feedback_greedy")):  # fmt: skip
                add(row, arm, F.regrets_after(t, name, 8, seed=seed, n_candidates=128))
    for label, runs in acc.items():
        table[label] = {arm: float(np.mean(v)) for arm, v in runs.items()}
    print("\nFICBO claim (mean normalized regret):")
    for label, means in table.items():
        print(f"  {label:<18}" + "  ".join(f"{a}={v:.3f}" for a, v in means.items()))
    return table


@pytest.mark.slow
@pytest.mark.parametrize(("arm", "holds"), [("ficbo", True), ("no_feedback", False)])
def test_claim_exploits_informative_feedback(
    claim_table: dict[str, dict[str, float]], arm: str, holds: bool
) -> None:
    """FICBO halves the no-feedback regret; the stand-in (the model without feedback) fails."""
    row = claim_table["informative"]
    assert (row[arm] < 0.5 * row["no_feedback"]) is holds, row


@pytest.mark.slow
@pytest.mark.parametrize(("arm", "holds"), [("ficbo", True), ("feedback_greedy", False)])
def test_claim_robust_to_misleading_feedback(
    claim_table: dict[str, dict[str, float]], arm: str, holds: bool
) -> None:
    """Never worse than no feedback by MARGIN; the trusting stand-in fails it somewhere."""
    ok = all(
        claim_table[label][arm] <= claim_table[label]["no_feedback"] + MARGIN
        for label in ("irrelevant", "misleading", "forrester", "forrester_flipped")
    )
    assert ok is holds, claim_table


def misled(row: dict[str, float]) -> bool:
    """The trusting baseline's own choices are at least twice as bad as FICBO's, and 0.05
    worse in normalized regret (the design's points left out: they are shared)."""
    greedy, ficbo = row["feedback_greedy_chosen"], row["ficbo_chosen"]
    return greedy > 2 * ficbo and greedy - ficbo > 0.05


@pytest.mark.slow
@pytest.mark.parametrize(
    ("label", "reference", "holds"),
    [
        ("misleading", "informative", True),
        ("forrester_flipped", "forrester", True),
        ("irrelevant", "informative", True),
        ("informative", "informative", False),  # stand-in: an honest source misleads no one
    ],
)
def test_claim_trusting_baseline_is_misled(
    claim_table: dict[str, dict[str, float]], label: str, reference: str, holds: bool
) -> None:
    """Misled where the source is flipped or irrelevant, and *because* of it: the same
    baseline's choices are worse by 0.1 than with the unflipped / informative source
    (before, a shared random design set the regret: 0.143 with and without the flip)."""
    row, ref = claim_table[label], claim_table[reference]
    assert misled(row) is holds, (label, row)
    if holds:
        assert row["feedback_greedy_chosen"] > ref["feedback_greedy_chosen"] + 0.1, (row, ref)
