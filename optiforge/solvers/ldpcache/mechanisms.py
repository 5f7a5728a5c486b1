"""The local randomizers of LDPCache and an empirical check of their guarantee.

- ``ExponentialMechanism``: privatizes the user's query over a public candidate set
  (``k`` candidate queries). ``P[q, c] ∝ exp(lam * U[q, c])`` for a utility matrix
  ``U`` (``k x k``, values in ``[0, 1]``); ``lam`` is calibrated by bisection so that the
  mechanism's *exact* local-DP level ``max_c max_{q,q'} log P[q, c] / P[q', c]`` equals
  the requested epsilon (computed from the matrix, not bounded with the textbook factor 2).
  The default utility (identity) makes it k-ary randomized response, where ``lam = eps``.
- ``RandomizedResponseDecision``: one binary decision (send / reuse) per query,
  ``eps``-LDP for any two raw queries: ``P(send | prefer send) = a``,
  ``P(send | prefer reuse) = b`` with ``max(log a/b, log (1-b)/(1-a)) = eps``.
- ``SparseVectorDecision``: AboveThreshold (the sparse vector technique) over the query
  sequence: the score ``g_t in [0, 1]`` of each query is compared with a noisy threshold;
  a whole run of "reuse" answers up to and including the first "send" costs ``eps1`` in
  total, so only sends pay.
- ``ldp_violation_bound``: the distinguishing attack's statistic (a lower confidence bound
  on the largest log-ratio of two output distributions estimated from samples).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from optiforge.errors import ConfigError


def _exact_ldp_epsilon(logp: np.ndarray) -> float:
    """``max_c (max_q logp[q, c] - min_q logp[q, c])`` for a ``k x k`` log-probability matrix."""
    return float(np.max(logp.max(axis=0) - logp.min(axis=0)))


def _log_softmax_rows(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


class ExponentialMechanism:
    """Exponential mechanism over ``k`` public candidates, calibrated to an exact ``epsilon``.

    Args:
        epsilon: the local-DP level of one release (> 0).
        utility: ``k x k`` matrix, ``utility[q, c]`` in ``[0, 1]`` = how good releasing
            candidate ``c`` is for raw query ``q``; default identity (k-ary randomized
            response).
        k: number of candidates when ``utility`` is None.
    """

    def __init__(self, epsilon: float, *, utility: np.ndarray | None = None, k: int = 0) -> None:
        if not epsilon > 0:
            raise ConfigError(f"epsilon must be > 0, got {epsilon}")
        if utility is None:
            if k < 2:
                raise ConfigError(f"need k >= 2 candidates, got {k}")
            utility = np.eye(k)
        utility = np.asarray(utility, dtype=float)
        if utility.ndim != 2 or utility.shape[0] != utility.shape[1]:
            raise ConfigError(f"utility must be k x k, got shape {utility.shape}")
        if utility.min() < 0 or utility.max() > 1:
            raise ConfigError("utility values must lie in [0, 1]")
        self.epsilon = float(epsilon)
        self.utility = utility
        self.k = utility.shape[0]
        self.lam = self._calibrate()
        self.log_probs = _log_softmax_rows(self.lam * utility)
        """``k x k``: ``log P(release c | raw q)``."""

    def _calibrate(self) -> float:
        """Largest ``lam`` whose exact LDP level is <= epsilon (bisection; the level is
        continuous in ``lam`` and 0 at ``lam = 0``)."""

        def level(lam: float) -> float:
            return _exact_ldp_epsilon(_log_softmax_rows(lam * self.utility))

        lo, hi = 0.0, self.epsilon
        while level(hi) < self.epsilon and hi < 1e6:
            lo, hi = hi, 2 * hi
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            if level(mid) <= self.epsilon:
                lo = mid
            else:
                hi = mid
        return lo

    @property
    def probs(self) -> np.ndarray:
        """``k x k`` release probabilities, rows sum to 1."""
        return np.exp(self.log_probs)

    def ldp_epsilon(self) -> float:
        """The exact local-DP level of the calibrated mechanism (<= ``epsilon``)."""
        return _exact_ldp_epsilon(self.log_probs)

    def keep_probability(self, q: int) -> float:
        """``P(release q | raw q)``."""
        return float(math.exp(self.log_probs[q, q]))

    def release(self, q: int, rng: np.random.Generator) -> int:
        """One privatized candidate index for raw candidate ``q``."""
        return int(rng.choice(self.k, p=self.probs[q]))


@dataclass(frozen=True)
class RandomizedResponseDecision:
    """Binary randomized response on the scheduler's preferred action, ``epsilon``-LDP.

    ``send_floor`` is ``b = P(send | prefer reuse)``; None gives the symmetric choice
    ``b = 1 / (1 + e^eps)``. Then ``a = P(send | prefer send) = min(b e^eps,
    1 - (1 - b) e^-eps)``, the largest value both ratio constraints allow.
    """

    epsilon: float
    send_floor: float | None = None

    def __post_init__(self) -> None:
        if not self.epsilon > 0:
            raise ConfigError(f"epsilon must be > 0, got {self.epsilon}")
        if self.send_floor is not None and not 0 < self.send_floor < 1:
            raise ConfigError("send_floor must lie in (0, 1)")

    @property
    def probabilities(self) -> tuple[float, float]:
        """``(a, b)``: ``P(send | prefer send)``, ``P(send | prefer reuse)``."""
        e = math.exp(self.epsilon)
        b = 1.0 / (1.0 + e) if self.send_floor is None else self.send_floor
        a = min(b * e, 1.0 - (1.0 - b) / e)
        return a, b

    def ldp_epsilon(self) -> float:
        """Exact level: ``max(log a/b, log (1-b)/(1-a))``."""
        a, b = self.probabilities
        return max(math.log(a / b), math.log((1 - b) / (1 - a)))

    def decide(self, prefer_send: bool, rng: np.random.Generator) -> bool:
        """True = send."""
        a, b = self.probabilities
        return bool(rng.random() < (a if prefer_send else b))


@dataclass
class SparseVectorDecision:
    """AboveThreshold with restarts: send iff ``g + nu >= threshold + rho``.

    ``g`` in ``[0, 1]`` (clipped) so its sensitivity over any two query sequences is
    ``Delta = 1``; ``rho ~ Lap(2 / eps1)`` is drawn when an epoch starts, ``nu ~ Lap(4 /
    eps1)`` fresh for every query (Dwork & Roth, Algorithm 1). One epoch (every "reuse"
    answer up to and including the first "send") is ``eps1``-DP; the caller charges
    ``eps1`` when ``epoch_open`` turns True and a new epoch starts after each send.
    """

    epsilon: float
    threshold: float = 0.5
    rho: float = field(default=0.0, init=False)
    epoch_open: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        if not self.epsilon > 0:
            raise ConfigError(f"epsilon must be > 0, got {self.epsilon}")

    def start_epoch(self, rng: np.random.Generator) -> None:
        """Draw the epoch's threshold noise (the caller charges ``epsilon`` now)."""
        self.rho = float(rng.laplace(0.0, 2.0 / self.epsilon))
        self.epoch_open = True

    def decide(self, score: float, rng: np.random.Generator) -> bool:
        """True = send (ends the epoch). Needs an open epoch."""
        if not self.epoch_open:
            raise ConfigError("start_epoch before decide (its epsilon must be charged first)")
        g = min(1.0, max(0.0, float(score)))
        nu = float(rng.laplace(0.0, 4.0 / self.epsilon))
        send = g + nu >= self.threshold + self.rho
        if send:
            self.epoch_open = False
        return bool(send)


def _clopper_pearson(count: int, n: int, alpha: float) -> tuple[float, float]:
    from scipy.stats import beta

    lo = 0.0 if count == 0 else float(beta.ppf(alpha / 2, count, n - count + 1))
    hi = 1.0 if count == n else float(beta.ppf(1 - alpha / 2, count + 1, n - count))
    return lo, hi


def ldp_violation_bound(
    outputs_x: Sequence[Hashable], outputs_y: Sequence[Hashable], *, alpha: float = 0.01
) -> tuple[float, float]:
    """Distinguishing attack on a randomizer run many times on two inputs ``x`` and ``y``.

    Returns ``(estimate, lower)``: the largest empirical ``|log P_x(o) / P_y(o)|`` over
    outputs seen under both inputs, and a lower confidence bound on the true largest
    log-ratio over all outputs (Clopper-Pearson intervals, Bonferroni over outputs and both
    directions, overall level ``1 - alpha``). An ``eps``-LDP randomizer has ``lower <= eps``
    with probability >= 1 - alpha; a deterministic one gives ``lower`` far above any eps.
    """
    cx, cy = Counter(outputs_x), Counter(outputs_y)
    nx, ny = len(outputs_x), len(outputs_y)
    if nx == 0 or ny == 0:
        raise ConfigError("need samples under both inputs")
    support = sorted(set(cx) | set(cy), key=repr)
    a = alpha / (2 * len(support))
    estimate, lower = 0.0, 0.0
    for o in support:
        px, py = cx[o] / nx, cy[o] / ny
        if px > 0 and py > 0:
            estimate = max(estimate, abs(math.log(px / py)))
        lx, hx = _clopper_pearson(cx[o], nx, a)
        ly, hy = _clopper_pearson(cy[o], ny, a)
        if lx > 0:
            lower = max(lower, math.log(lx / hy))
        if ly > 0:
            lower = max(lower, math.log(ly / hx))
    return estimate, lower
