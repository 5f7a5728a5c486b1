"""CV-ZOD: the ask/tell contract, the estimator, and the paper's qualitative claim.

The claim (issue 24, item 4): with hints that contain the gradient, CV-ZOD converges at
the first-order rate; with random hints, at the zeroth-order rate; in between, monotone
in hint quality; and where hints go bad, a guided (hint-subspace-only) method stalls
while CV-ZOD keeps decreasing. Problem: ``f(x) = 0.5 sum_i lam_i x_i^2``, ``d = 30``,
``lam`` log-spaced in ``[1, 10]`` (condition number 10), ``x0 = 1``, ``lr = 1 / L``.
Hint of quality ``q``: ``q g/|g| + sqrt(1 - q^2) z`` with ``z`` a fresh random unit vector
orthogonal to ``g`` (so ``cos(hint, g) = q``; ``q = 0`` is a random direction that misses
the gradient entirely). Biased hint: the gradient of a surrogate whose minimizer is
shifted (right far from the optimum, wrong near it).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from optiforge.errors import ConfigError
from optiforge.solvers.asktell import OPTIMIZERS, make, minimize
from optiforge.solvers.zo.cvzod import CVZOD, orthonormal_hints

D = 30
LAM = np.logspace(0, 1, D)
X0 = np.ones(D)


def f(x: np.ndarray) -> float:
    return 0.5 * float(np.sum(LAM * x * x))


F0 = f(X0)
TARGET = 1e-4 * F0


def grad(x: np.ndarray) -> np.ndarray:
    return LAM * x


def quality_hint(q: float, seed: int) -> Callable[[np.ndarray], np.ndarray]:
    rng = np.random.default_rng(1000 + seed)

    def hint(x: np.ndarray) -> np.ndarray:
        g = grad(x)
        g = g / np.linalg.norm(g)
        z = rng.standard_normal(D)
        z -= (z @ g) * g
        return q * g + np.sqrt(1 - q * q) * z / np.linalg.norm(z)

    return hint


_shift = np.random.default_rng(7).standard_normal(D)
SHIFT = 0.3 * np.sqrt(D) * _shift / np.linalg.norm(_shift)


def biased_hint(x: np.ndarray) -> np.ndarray:
    """Gradient of the surrogate ``f(x - SHIFT)``: a wrong subspace near the optimum."""
    return LAM * (x - SHIFT)


def run(opt: CVZOD, budget: int) -> tuple[np.ndarray, np.ndarray]:
    """Evaluations used and ``f(x_t)`` after each step (``f(x_t)`` read off the budget)."""
    evals, vals, n = [], [], 0
    while True:
        X = opt.ask()
        opt.tell(X, np.array([f(x) for x in X]))
        n += len(X)
        if n > budget:
            break
        if opt._f0 is None:  # a step finished (not the base-point half of a two-ask step)
            evals.append(n)
            vals.append(f(opt.recommend()))
    return np.array(evals), np.array(vals)


def evals_to_target(evals: np.ndarray, vals: np.ndarray) -> float:
    hit = np.flatnonzero(vals <= TARGET)
    return float(evals[hit[0]]) if hit.size else np.inf


def cvzod(seed: int = 0, **kw: object) -> CVZOD:
    opt = make("cvzod", D, seed=seed, x0=X0, lr=1 / LAM.max(), **kw)  # type: ignore[arg-type]
    assert isinstance(opt, CVZOD)
    return opt


# -- contract ------------------------------------------------------------------------------


def test_registered_unbounded() -> None:
    assert OPTIMIZERS["cvzod"] is CVZOD and CVZOD.box is False and CVZOD.summary


def test_ask_shapes_per_mode() -> None:
    hint = quality_hint(0.5, 0)
    assert cvzod(hint_fn=hint).ask().shape == (1 + 1 + 8, D)  # base, 1 hint, n_random
    assert cvzod(hint_fn=hint, mode="guided").ask().shape == (2, D)
    assert cvzod(mode="zo", n_random=5).ask().shape == (6, D)
    two = np.stack([grad(X0), np.arange(D, dtype=float)], axis=1)
    assert cvzod(hint_fn=lambda x: two).ask().shape == (1 + 2 + 8, D)


def test_tell_checks() -> None:
    opt = cvzod(hint_fn=quality_hint(0.5, 0))
    X = opt.ask()
    with pytest.raises(ValueError, match="not the asked"):
        opt.tell(X + 1.0, np.zeros(len(X)))
    with pytest.raises(ValueError, match="shape"):
        opt.tell(X, np.zeros(len(X) + 1))
    with pytest.raises(ValueError, match="non-finite"):
        opt.tell(X, np.full(len(X), np.nan))
    opt.tell(X, np.array([f(x) for x in X]))
    with pytest.raises(RuntimeError):
        opt.tell(X, np.zeros(len(X)))


def test_bad_options() -> None:
    with pytest.raises(ConfigError):
        cvzod(mode="newton")
    with pytest.raises(ConfigError):
        cvzod(m_min=9, n_random=8)
    with pytest.raises(ConfigError):
        make("cvzod", D, x0=np.ones(3))


def test_seeded_determinism() -> None:
    def trace(seed: int) -> np.ndarray:
        opt = cvzod(seed=seed, hint_fn=quality_hint(0.5, 0))
        minimize(f, opt, 300)
        return opt.X

    assert np.array_equal(trace(3), trace(3))
    assert not np.array_equal(trace(3), trace(4))


def test_hint_through_feedback_matches_hint_fn() -> None:
    """Without ``hint_fn`` a step is two asks (``[x]``, then the probes): same iterates."""
    hint = biased_hint
    a = cvzod(seed=1, hint_fn=hint)
    b = cvzod(seed=1)
    for _ in range(60):
        X = a.ask()
        a.tell(X, np.array([f(x) for x in X]))
        X = b.ask()
        assert X.shape == (1, D)
        b.tell(X, np.array([f(X[0])]), [{"hint": hint(X[0])}])
        X = b.ask()
        b.tell(X, np.array([f(x) for x in X]))
    assert a.steps == b.steps == 60
    np.testing.assert_allclose(a.recommend(), b.recommend(), rtol=1e-9, atol=1e-12)


def test_base_point_hint_feedback_checked_and_optional() -> None:
    opt = cvzod()
    X = opt.ask()
    with pytest.raises(ValueError, match="shape"):
        opt.tell(X, np.array([f(X[0])]), [{"hint": np.ones(D + 1)}])
    opt.tell(X, np.array([f(X[0])]), [{"hint": grad(X[0])}])  # a corrected retry works
    assert opt.ask().shape[0] == 1 + 8
    plain = cvzod()  # no hint at all (a generic loop): plain ZO steps, one warning
    with pytest.warns(RuntimeWarning, match="without hints"):
        res = minimize(f, plain, 400)
    assert f(res.recommended) < F0 and plain.steps > 10


def test_guided_with_an_empty_hint_makes_a_null_step() -> None:
    opt = cvzod(hint_fn=lambda x: np.zeros(D), mode="guided")
    X = opt.ask()
    assert X.shape == (1, D)
    opt.tell(X, np.array([f(X[0])]))
    np.testing.assert_array_equal(opt.recommend(), X0)


def test_orthonormal_hints_drops_dependent_columns() -> None:
    H = np.stack([np.ones(D), 2 * np.ones(D), np.arange(D, dtype=float)], axis=1)
    Q = orthonormal_hints(H, D)
    assert Q.shape == (D, 2)
    np.testing.assert_allclose(Q.T @ Q, np.eye(2), atol=1e-12)
    assert orthonormal_hints(np.zeros(D), D).shape == (D, 0)


# -- the estimator -------------------------------------------------------------------------


@pytest.mark.parametrize("c", [1.0, 0.3])
def test_estimate_is_unbiased_for_any_coefficient(c: float) -> None:
    """``E g_hat = g`` whatever the hint and the coefficient (the control-variate property)."""
    x = np.linspace(-1, 1, D)
    g = grad(x)
    hint = np.stack([g + 3 * np.random.default_rng(0).standard_normal(D), np.ones(D)], 1)
    ests = []
    for seed in range(400):
        opt = make("cvzod", D, seed=seed, x0=x, hint_fn=lambda _x: hint)
        assert isinstance(opt, CVZOD)
        opt.c = c
        X = opt.ask()
        opt.tell(X, np.array([f(r) for r in X]))
        assert opt.last_grad is not None
        ests.append(opt.last_grad)
    err = np.linalg.norm(np.mean(ests, axis=0) - g) / np.linalg.norm(g)
    assert err < 0.1


def test_exact_hint_gives_the_gradient_and_a_gradient_step() -> None:
    opt = cvzod(hint_fn=grad)
    run(opt, 40)
    x = opt.recommend()
    X = opt.ask()
    opt.tell(X, np.array([f(r) for r in X]))
    assert opt.last_grad is not None
    np.testing.assert_allclose(opt.last_grad, grad(x), rtol=0, atol=1e-3)
    assert opt.c == pytest.approx(1.0, abs=1e-3)
    # the hint part takes the full step: a gradient-descent step
    np.testing.assert_allclose(opt.recommend(), x - grad(x) / LAM.max(), atol=1e-5)
    assert opt.r2 > 0.99
    assert opt.m == opt.m_min  # the hint explains everything: fewest random probes


def test_coefficient_adapts_to_what_the_hint_is_worth_under_noise() -> None:
    """Noisy evaluations: the coefficient stays near 1 for an exact hint and falls toward 0
    for a hint that misses the gradient (its measured derivative is then pure noise)."""
    rng = np.random.default_rng(0)

    def noisy(x: np.ndarray) -> float:
        return f(x) + 1e-3 * float(rng.standard_normal())

    coef = {}
    for name, hint in (("exact", grad), ("miss", quality_hint(0.0, 0))):
        opt = cvzod(hint_fn=hint, mu=1e-2, beta=0.9)
        for _ in range(60):
            X = opt.ask()
            opt.tell(X, np.array([noisy(x) for x in X]))
        coef[name] = opt.c
    print("coefficient under noise:", coef)
    assert coef["exact"] > 0.8 and coef["miss"] < 0.3


# -- the claim -----------------------------------------------------------------------------


def _gd_steps_to_target() -> int:
    x, t = X0.copy(), 0
    while f(x) > TARGET:
        x -= grad(x) / LAM.max()
        t += 1
    return t


@pytest.mark.parametrize(("mode", "holds"), [("cv", True), ("zo", False)])
def test_claim_exact_hints_first_order_rate(mode: str, holds: bool) -> None:
    """Exact hints: as many steps as gradient descent, and far fewer evaluations than ZO.
    Stand-in: the same optimizer with the hints ignored (``mode="zo"``) fails it."""
    gd_steps = _gd_steps_to_target()
    ev, vals = run(cvzod(hint_fn=grad, mode=mode), 3000)
    hit = np.flatnonzero(vals <= TARGET)
    steps = int(hit[0]) + 1 if hit.size else 10**9
    ev_zo = np.median([evals_to_target(*run(cvzod(seed=s, mode="zo"), 5000)) for s in range(3)])
    print(f"GD steps {gd_steps}; CV-ZOD(exact, {mode}) steps {steps}, evals "
          f"{evals_to_target(ev, vals)}; pure ZO evals {ev_zo}")  # fmt: skip
    ok = steps <= 1.1 * gd_steps + 2 and evals_to_target(ev, vals) < 0.15 * ev_zo
    assert bool(ok) is holds


@pytest.mark.parametrize(("mode", "holds"), [("cv", True), ("zo", False)])
def test_claim_monotone_in_hint_quality_from_first_to_zeroth_order(mode: str, holds: bool) -> None:
    """Evaluations to reach the target fall as the hint quality ``q`` rises, and random
    hints (``q = 0``) cost about what pure ZO costs. Stand-in: hints ignored (flat)."""
    qs = [0.0, 0.5, 0.9, 1.0]
    cost = {
        q: float(
            np.median(
                [
                    evals_to_target(
                        *run(cvzod(seed=s, hint_fn=quality_hint(q, s), mode=mode), 6000)
                    )
                    for s in range(3)
                ]
            )
        )
        for q in qs
    }
    zo = float(np.median([evals_to_target(*run(cvzod(seed=s, mode="zo"), 6000)) for s in range(3)]))
    print(f"evals to 1e-4 f0 by hint quality ({mode}):", cost, "pure ZO:", zo)
    ok = bool(np.all(np.isfinite(list(cost.values()))))
    ok = ok and cost[1.0] < cost[0.9] < cost[0.5] < cost[0.0] and cost[0.0] <= 1.5 * zo
    assert bool(ok) is holds


@pytest.mark.parametrize(("mode", "holds"), [("cv", True), ("guided", False)])
def test_claim_guided_stalls_where_cvzod_keeps_going(mode: str, holds: bool) -> None:
    """Random (``q = 0``) and biased hints: the guided method stalls, CV-ZOD does not.
    Stand-in: the guided method in CV-ZOD's place fails it."""
    _, g_rand = run(cvzod(hint_fn=quality_hint(0.0, 0), mode="guided"), 2000)
    _, c_rand = run(cvzod(hint_fn=quality_hint(0.0, 0), mode=mode), 2000)
    assert g_rand[-1] == pytest.approx(F0)  # no step: the hint never sees the gradient
    ok = c_rand[-1] < 1e-2 * F0

    ev_g, g_bias = run(cvzod(hint_fn=biased_hint, mode="guided"), 3000)
    ev_c, c_bias = run(cvzod(hint_fn=biased_hint, mode=mode), 3000)
    g1, g3 = g_bias[ev_g <= 1000][-1], g_bias[-1]
    c1, c3 = c_bias[ev_c <= 1000][-1], c_bias[-1]
    print(f"biased hint, f/f0 at 1000 and 3000 evals: guided {g1 / F0:.3g} -> {g3 / F0:.3g}; ")
    print(f"{mode} {c1 / F0:.3g} -> {c3 / F0:.3g}")
    assert g3 > 0.05 * F0 and g3 > 0.9 * g1  # stalled
    ok = ok and c3 < 0.1 * c1 and c3 < 1e-2 * g3  # still decreasing
    assert bool(ok) is holds
