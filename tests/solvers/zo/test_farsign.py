"""FAR-SIGN: the ask/tell contract, the server's guarantees, and the Byzantine claim.

The claim (issue 24 item 7): with Byzantine workers, asynchronous FAR-SIGN beats
synchronous SGD with coordinate-wise median and trimmed-mean aggregation in accuracy
and wall-clock. Wall-clock is a simulated clock here (see ``farsign`` module docs).
Measured (issue 40: seeds 0-7, horizon 120; paired by seed, 95% t-intervals):

- ALIE, 2 of 10 Byzantine: final accuracy 0.958 vs 0.945 (median) / 0.946 (trimmed
  mean); FAR-SIGN minus the better of the two per seed +0.012 [0.007, 0.017]; time to 0.9
  16.5 vs 30.8 / 31.3. Asserted: the interval's lower end above 0, and faster.
- Sign flips, 3 of 10: 0.873 [0.813, 0.934] vs 0.900 [0.877, 0.923]; difference -0.027
  [-0.091, 0.037]: *not* above the robust aggregators (the 2-seed test before accepted
  "0.005 below" while the README said "above"), and slower to 0.9 (one seed never gets
  there by 120). Asserted what holds: the difference's lower end above -0.1, i.e. FAR-SIGN
  stays in the robust aggregators' range where undefended averaging collapses.
- The per-worker sign-bias correction (``beta``) changes the final accuracy by +0.005
  [-0.007, 0.018] (flip) and 0.000 [-0.002, 0.002] (ALIE): no measurable effect here; its
  one shown effect is silencing a constant sender's drift (unit test below).

Stand-ins (kept in the suite): the median aggregator in FAR-SIGN's place fails the ALIE
claim (difference 0); undefended averaging in its place fails the flip claim.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from optiforge.errors import ConfigError
from optiforge.evals.stats import mean_ci95
from optiforge.solvers.asktell import OPTIMIZERS, make
from optiforge.solvers.zo.farsign import (
    Cluster,
    FarSign,
    FarSignServer,
    coordinate_median,
    digits_task,
    directions,
    simulate_farsign,
    simulate_sync_robust,
    trimmed_mean,
)

# -- contract -----------------------------------------------------------------------------


def test_registered_unbounded_and_asks_2k_probes() -> None:
    opt = make("farsign", 5, seed=0, k=3, mu=0.1)
    assert OPTIMIZERS["farsign"] is FarSign and not FarSign.box
    X = opt.ask()
    assert X.shape == (6, 5) and X.dtype == np.float64
    np.testing.assert_allclose((X[0::2] + X[1::2]) / 2, np.tile(opt.recommend(), (3, 1)))
    np.testing.assert_allclose(np.abs(X[0::2] - X[1::2]), 0.2)  # +-mu along +-1 entries


def test_optional_bounds_keep_the_iterate_inside() -> None:
    opt = FarSign(4, seed=0, bounds=(np.zeros(4), np.ones(4)), x0=np.full(4, 0.5), eta=5.0)
    for _ in range(10):
        X = opt.ask()
        assert np.all((X >= 0) & (X <= 1))
        opt.tell(X, np.array([-np.sum(x) for x in X]))
    assert np.all((opt.recommend() >= 0) & (opt.recommend() <= 1))


def test_tell_checks_its_arguments() -> None:
    opt = FarSign(4, seed=0, k=2)
    X = opt.ask()
    with pytest.raises(ValueError, match="not the asked"):
        opt.tell(X[:3], np.zeros(3))
    with pytest.raises(ValueError, match="shape"):
        opt.tell(X, np.zeros(3))
    with pytest.raises(ValueError, match="non-finite"):
        opt.tell(X, np.array([0.0, 1.0, np.inf, 0.0]))
    with pytest.raises(ValueError, match="one mapping per point"):
        opt.tell(X, np.zeros(4), [{"worker": 1}])
    with pytest.raises(ConfigError):
        FarSign(4, k=0)


def test_same_seed_same_asks_and_descends() -> None:
    def quad(x: np.ndarray) -> float:
        return float(np.sum((x - 1.0) ** 2))

    finals = []
    for _ in range(2):
        opt = FarSign(20, seed=7, k=8, eta=0.05, decay=1e9, beta=0.0)
        for _ in range(300):
            X = opt.ask()
            opt.tell(X, np.array([quad(x) for x in X]))
        finals.append((opt.ask(), opt.recommend()))
    np.testing.assert_array_equal(finals[0][0], finals[1][0])
    assert quad(finals[0][1]) < 0.1 * quad(np.zeros(20))


# -- the server's guarantees --------------------------------------------------------------


def test_directions_come_from_the_seed_and_the_server_picks_seeds() -> None:
    np.testing.assert_array_equal(directions(5, 3, 7), directions(5, 3, 7))
    assert set(np.unique(directions(5, 3, 7))) <= {-1.0, 1.0}
    a, b = FarSignServer(np.zeros(3), seed=1), FarSignServer(np.zeros(3), seed=1)
    assert [a.new_seed() for _ in range(3)] == [b.new_seed() for _ in range(3)]


def test_one_message_has_bounded_influence_whatever_it_says() -> None:
    d, k, eta = 50, 16, 0.1
    U = directions(0, k, d)
    bound = eta / k * np.abs(U).sum(0)  # |signs| <= 1: the most one message can move
    for signs in (np.full(k, 1e12), -np.ones(k), np.sign(np.arange(k) - 7.5)):
        srv = FarSignServer(np.zeros(d), k=k, eta=eta)
        srv.apply(3, signs, U)
        assert np.all(np.abs(srv.x) <= bound + 1e-12)


def test_slow_bias_correction_silences_a_constant_sender() -> None:
    d, k = 40, 16
    drift = {}
    for beta in (0.0, 0.05):
        srv = FarSignServer(np.zeros(d), k=k, eta=0.1, beta=beta, decay=1e9)
        for t in range(400):
            srv.apply(0, np.ones(k), directions(t, k, d))  # a worker always answering +1
        drift[beta] = float(np.linalg.norm(srv.x))
        if beta:
            assert srv.bias[0] > 0.99  # the slow estimate found the constant bias
    # uncorrected, the constant sender random-walks the model ~ eta sqrt(t d / k)
    assert drift[0.05] < 0.25 * drift[0.0]


def test_bias_of_honest_signs_stays_near_zero() -> None:
    d, k = 40, 16
    g = np.random.default_rng(0).standard_normal(d)
    srv = FarSignServer(np.zeros(d), k=k, eta=1e-6, beta=0.05)
    for t in range(400):
        U = directions(t, k, d)
        srv.apply(0, np.sign(U @ g), U)
    assert abs(srv.bias[0]) < 0.15


def test_robust_aggregators() -> None:
    V = np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0], [100.0, -50.0]])
    np.testing.assert_allclose(coordinate_median(V), [2.5, 0.0])
    np.testing.assert_allclose(trimmed_mean(V, 1), [2.5, 0.0])


def test_simulation_is_seeded() -> None:
    task = digits_task(6, seed=0)
    runs = [
        simulate_farsign(task, Cluster(n_workers=6, n_byzantine=1, seed=0), horizon=10, k=16)
        for _ in range(2)
    ]
    assert runs[0].accs == runs[1].accs and runs[0].messages == runs[1].messages
    with pytest.raises(ConfigError):
        Cluster(n_workers=4, n_byzantine=2)


# -- the claim ----------------------------------------------------------------------------

CLAIM_SEEDS = tuple(range(8))


@cache
def claim_runs(attack: str, f: int, method: str) -> tuple[np.ndarray, np.ndarray]:
    """Final accuracy and simulated time to 0.9 per seed (``inf`` if never)."""
    task = digits_task(10, seed=0)
    acc, t09 = [], []
    for s in CLAIM_SEEDS:
        cl = Cluster(attack=attack, n_byzantine=f, seed=s)
        if method == "farsign":
            tr = simulate_farsign(task, cl, horizon=120, k=256, eta=0.3, seed=s)
        else:
            tr = simulate_sync_robust(task, cl, horizon=120, aggregator=method, lr=2.0, seed=s)
        acc.append(tr.final_acc)
        t09.append(tr.time_to(0.9))
    return np.asarray(acc), np.asarray(t09)


def byzantine_claim(attack: str, f: int, method: str) -> tuple[bool, str]:
    """``method`` against the better of median and trimmed mean, per seed (see module doc)."""
    acc, t09 = claim_runs(attack, f, method)
    med, t_med = claim_runs(attack, f, "median")
    trim, t_trim = claim_runs(attack, f, "trimmed_mean")
    m, half = mean_ci95(list(acc - np.maximum(med, trim)))
    lo = m - (half or 0.0)
    if attack == "alie":  # above, and faster to 0.9
        ok = lo > 0.0 and bool(np.all(np.isfinite(t09)))
        ok = ok and t09.mean() < min(t_med.mean(), t_trim.mean())
    else:  # in the robust aggregators' range (not above: measured)
        ok = lo > -0.1
    return bool(ok), (
        f"{attack} f={f} {method}: acc {acc.mean():.3f} vs median {med.mean():.3f} trimmed "
        f"{trim.mean():.3f}; difference {m:+.3f} [{lo:+.3f}, {m + (half or 0.0):+.3f}]; "
        f"time to 0.9 {t09.mean():.1f} vs {t_med.mean():.1f} / {t_trim.mean():.1f}"
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    ("attack", "f", "method", "holds"),
    [
        ("alie", 2, "farsign", True),
        ("flip", 3, "farsign", True),
        ("alie", 2, "median", False),  # stand-in: a robust aggregator is not above itself
        ("flip", 3, "mean", False),  # stand-in: undefended averaging collapses
    ],
)
def test_farsign_under_byzantine_workers(attack: str, f: int, method: str, holds: bool) -> None:
    ok, msg = byzantine_claim(attack, f, method)
    print(msg)
    assert ok is holds, msg


def test_zeroth_order_farsign_learns_where_plain_averaging_collapses() -> None:
    task = digits_task(10, seed=0)
    cl = Cluster(attack="flip", n_byzantine=3, seed=0)
    zo = simulate_farsign(task, cl, horizon=300, order="zeroth", k=8, eta=0.1, eval_every=10)
    mean = simulate_sync_robust(task, cl, horizon=300, aggregator="mean", eval_every=10)
    print(f"zeroth-order FAR-SIGN {zo.final_acc:.3f}, undefended mean {mean.final_acc:.3f}")
    assert zo.final_acc > 0.5 and mean.final_acc < 0.2  # measured 0.686, 0.090
