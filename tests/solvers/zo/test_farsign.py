"""FAR-SIGN: the ask/tell contract, the server's guarantees, and the Byzantine claim.

The claim (issue 24 item 7): with Byzantine workers, asynchronous FAR-SIGN beats
synchronous SGD with coordinate-wise median and trimmed-mean aggregation in accuracy
and wall-clock. Wall-clock is a simulated clock here (see ``farsign`` module docs).
What holds: final accuracy under sign-flipping (3 of 10) and ALIE (2 of 10) workers;
time to 0.9 test accuracy only under ALIE; under sign flipping FAR-SIGN is slower.
"""

from __future__ import annotations

import numpy as np
import pytest

from optiforge.errors import ConfigError
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

CLAIM_SEEDS = (0, 1)


def _mean_traces(attack: str, f: int) -> dict[str, tuple[float, float]]:
    """(mean final accuracy, mean simulated time to 0.9 test accuracy) per method."""
    task = digits_task(10, seed=0)
    out = {}
    for name in ("median", "trimmed_mean", "farsign"):
        traces = []
        for s in CLAIM_SEEDS:
            cl = Cluster(attack=attack, n_byzantine=f, seed=s)
            if name == "farsign":
                traces.append(simulate_farsign(task, cl, horizon=120, k=256, eta=0.3, seed=s))
            else:
                traces.append(
                    simulate_sync_robust(task, cl, horizon=120, aggregator=name, lr=2.0, seed=s)
                )
        out[name] = (
            float(np.mean([t.final_acc for t in traces])),
            float(np.mean([t.time_to(0.9) for t in traces])),
        )
    return out


@pytest.mark.parametrize(("attack", "f", "faster"), [("flip", 3, False), ("alie", 2, True)])
def test_farsign_under_byzantine_workers(attack: str, f: int, faster: bool) -> None:
    """Accuracy holds under both attacks; simulated time to 0.9 only under ALIE.

    Measured (seeds 0-1, horizon 120): flip f=3: FAR-SIGN 0.932 final vs 0.918 for median
    and trimmed mean, but 40 vs 26 time units to 0.9 (three sign-flippers cancel 60% of
    the signal in every direction while the aggregators drop their huge vectors);
    ALIE f=2: 0.958 vs 0.945 / 0.947 and 16 vs 30 / 31 time units.
    """
    res = _mean_traces(attack, f)
    print(f"{attack}, f={f}: (final acc, time to 0.9) {res}")
    best = max(res["median"][0], res["trimmed_mean"][0])
    assert res["farsign"][0] >= best - 0.005  # the documented margin
    assert res["farsign"][0] > 0.9
    if faster:
        assert res["farsign"][1] < min(res["median"][1], res["trimmed_mean"][1])
    else:  # what holds: it gets there, later
        assert res["farsign"][1] < float("inf")


def test_zeroth_order_farsign_learns_where_plain_averaging_collapses() -> None:
    task = digits_task(10, seed=0)
    cl = Cluster(attack="flip", n_byzantine=3, seed=0)
    zo = simulate_farsign(task, cl, horizon=300, order="zeroth", k=8, eta=0.1, eval_every=10)
    mean = simulate_sync_robust(task, cl, horizon=300, aggregator="mean", eval_every=10)
    print(f"zeroth-order FAR-SIGN {zo.final_acc:.3f}, undefended mean {mean.final_acc:.3f}")
    assert zo.final_acc > 0.5 and mean.final_acc < 0.2  # measured 0.686, 0.090
