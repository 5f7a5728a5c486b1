"""LDPCache: answer a user's sequence of queries from an LLM under local differential privacy,
reusing cached responses where that is expected to be as good as asking again.

Setting. The user holds raw queries ``x = (x_1, ..., x_n)`` (text). The public side knows
a candidate set of ``k`` queries (``keys``: texts the local embedder compares, and
``questions``: the text sent for a candidate). The adversary (the LLM provider and
anyone on the wire) sees every request sent and *when* requests are sent (so also
which queries were answered locally). Everything else (raw queries, their embeddings,
the cache's bookkeeping) stays on the device.

One step, for raw query ``x_t`` (``LDPCacheSession.step``):

1. Embed ``x_t`` (the memory's MiniLM model, injected as ``embed``) and locate its
   candidate ``c_t = argmax_c cos(x_t, key_c)`` (local, free).
2. Score (local, free): ``E_send = P(keep c_t) * acc_llm`` is the expected accuracy of
   asking (the exponential mechanism keeps the query with ``P(keep)``, the LLM is right
   with the assumed ``acc_llm``); ``E_reuse = max_j p(cos(x_t, key_j)) * acc_j`` over cached
   entries, with ``p(s)`` the probability that a cached released query asks the same thing
   as the raw query at similarity ``s`` (a logistic fit on *public* candidate paraphrase
   pairs, ``fit_calibration``) and ``acc_j`` the entry's accuracy estimate. The relative
   gain ``g_t = clip(1 - E_reuse / E_send, 0, 1)`` is the score; the LLM is never asked
   whether to ask.
3. Decide send / reuse with an LDP mechanism (``decision``):
   - ``"svt"`` (default): AboveThreshold (sparse vector) on ``g_t``: send iff
     ``g_t + nu_t >= T + rho``; charge ``eps1`` when an epoch starts (``rho`` drawn); an
     epoch ends at its first send. Only sends pay.
   - ``"rr"``: prefer send iff ``g_t > T``; binary randomized response at ``eps_s``;
     charge ``eps_s`` every query.
   - ``"always"``: send every query (perturbed), answer from the cache (the ablation
     without a scheduler).
4. On send: charge ``eps_q``, release ``c~ ~ EM_eps_q(c_t)``, send ``questions[c~]``,
   cache the response under ``c~`` (multi-factor eviction when full).
5. Answer with the cached entry of largest ``p(s) * acc_j`` (after the insert), or ""
   when the cache is empty. Local post-processing: free.

Privacy accounting (what the accountant charges, and why that is the guarantee).

- (a) Query perturbation. The exponential mechanism's release probabilities form a
  ``k x k`` matrix; its exact LDP level ``max_c max_{q,q'} log P[q,c] / P[q',c]`` is
  computed and calibrated to ``eps_q`` (identity utility: k-ary randomized response,
  ``P(keep) = e^eps / (e^eps + k - 1)``). The sent text depends only on ``c~``.
- (b) Decision, ``"rr"``: for every cache state and every pair of raw queries,
  ``P(send | x) / P(send | x') <= a / b`` and ``P(reuse | x) / P(reuse | x') <=
  (1-b)/(1-a)``, both ``<= e^eps_s`` by the choice of ``(a, b)``. The bound holds for any
  cache state, also one that depends on earlier raw queries (hits move recency), so the
  chain rule composes it. ``"svt"``: the decision sequence of one epoch is the output of
  AboveThreshold run on the queries ``g_t(x)``; each ``g_t`` is any function of the whole
  raw sequence and of earlier outputs with values in ``[0, 1]``, so its sensitivity over
  *any* two sequences is 1, and with ``rho ~ Lap(2/eps1)``, ``nu ~ Lap(4/eps1)`` the epoch's
  output is ``eps1``-DP for any two raw sequences (Dwork & Roth 2014, Thm 3.23): user-level
  LDP, not only event-level. An epoch that never sends still costs ``eps1`` (charged at its
  start).
- (c) Cached answers, the cache, eviction: functions of released outputs and of local
  data never sent; they release nothing.
- (d) Composition. Every release has an epsilon fixed before it runs (``eps1`` or
  ``eps_s`` for decisions, ``eps_q`` for a send, which follows a decision output). The
  accountant is a privacy filter: a release runs only if the basic-composition sum stays
  ``<= total_budget``; a decision runs only if the budget also covers the send that may
  follow. Once the filter stops, every later query is answered from the cache with a
  data-independent "reuse" (free). Basic composition holds for filters with adaptively
  chosen epsilons (Rogers et al. 2016), so the session is ``total_budget``-LDP for the
  whole query sequence. The spent epsilon (the odometer) is
  ``svt: epochs * eps1 + sends * eps_q``, ``rr: n * eps_s + sends * eps_q``; the
  accountant also reports DRV advanced composition (useful only for small eps).

Sublinear budget. With ``"svt"`` the spent epsilon grows with the number of sends, which
grows with the number of *distinct facts* asked plus false alarms. No ``eps1``-LDP
scheduler can avoid false alarms entirely: if a novel query at step ``j`` is sent with
probability ``>= p``, a cached query at step ``j`` is sent with probability ``>= p e^-eps1``,
so sends (and the budget) grow at least like ``n p e^-eps1``: sublinear growth is a
statement about ``n`` up to about ``e^eps1 / p``, linear beyond. With ``"rr"`` the
decisions alone cost ``n * eps_s`` (linear).

Budget plan (a data-independent split of ``total_budget = B`` for ``n_planned = n``
queries, planned send fraction ``rho``, decision share ``alpha``): ``svt``: per send
``B / (rho n + 1)``, of which ``eps1 = alpha`` and ``eps_q = 1 - alpha`` shares; ``rr``:
``eps_s = alpha B / n``, ``eps_q = (1 - alpha) B / (rho n)``; ``always`` and the no-cache
baseline ``PerQueryLDP``: ``eps_q = B / n``.

Choices the issue leaves open and this module makes (each tested): the sensitive part is
the whole query (its candidate index among ``k``); the released text is the candidate's
canonical question (the user's wording never leaves); the expected-gain score above; the
accuracy estimate of an entry (``cache.CacheEntry.accuracy``); after a send whose release
differs from the located candidate the user still answers from the best cache entry.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from optiforge.errors import ConfigError
from optiforge.solvers.ldpcache.accountant import PrivacyAccountant
from optiforge.solvers.ldpcache.cache import CacheEntry, EvictionWeights, ResponseCache
from optiforge.solvers.ldpcache.mechanisms import (
    ExponentialMechanism,
    RandomizedResponseDecision,
    SparseVectorDecision,
)

Embed = Callable[[Sequence[str]], np.ndarray]
"""``n`` texts -> ``n x dim`` unit-norm rows (e.g. ``MiniLMEmbedder().embed``)."""
Ask = Callable[[str], str]
"""The released question -> the LLM's response text."""


@dataclass(frozen=True)
class Calibration:
    """``p(s) = sigmoid((s - tau) / width)``: P(same question | cosine similarity ``s``)."""

    tau: float = 0.8
    width: float = 0.05

    def __call__(self, s: np.ndarray) -> np.ndarray:
        z = (np.asarray(s, dtype=float) - self.tau) / self.width
        return 1.0 / (1.0 + np.exp(-np.clip(z, -50, 50)))


def fit_calibration(sims: np.ndarray, same: np.ndarray, *, ridge: float = 1e-3) -> Calibration:
    """Logistic regression of ``same`` (0/1) on ``sims`` by Newton's method (``n`` pairs).

    Fit on public pairs only (paraphrases of candidate questions against candidate keys),
    so it costs no privacy.
    """
    s = np.asarray(sims, dtype=float).ravel()
    y = np.asarray(same, dtype=float).ravel()
    if s.shape != y.shape or len(s) < 2 or y.min() == y.max():
        raise ConfigError("need >= 2 pairs with both labels to fit the calibration")
    x = np.stack([np.ones_like(s), s], axis=1)
    w = np.zeros(2)
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-np.clip(x @ w, -50, 50)))
        grad = x.T @ (p - y) + ridge * w
        hess = (x * (p * (1 - p))[:, None]).T @ x + ridge * np.eye(2)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    if w[1] <= 0:
        raise ConfigError("similarity does not predict sameness on the calibration pairs")
    return Calibration(tau=float(-w[0] / w[1]), width=float(1.0 / w[1]))


class ChatLLM(Protocol):
    """What ``chat_asker`` needs of the project's ``LLM`` (``complete(...).text``)."""

    def complete(self, messages: list[dict[str, Any]], **params: Any) -> Any: ...


def chat_asker(llm: ChatLLM, *, system: str | None = None, **params: Any) -> Ask:
    """An ``Ask`` that sends the released question as one user message to ``llm``."""

    def ask(question: str) -> str:
        msgs = [{"role": "system", "content": system}] if system else []
        msgs.append({"role": "user", "content": question})
        return str(llm.complete(msgs, **params).text)

    return ask


@dataclass
class LDPCacheConfig:
    """Options of one LDPCache session."""

    total_budget: float
    """``B``: the session's total epsilon (the filter)."""
    n_planned: int
    """Number of queries the budget is planned for."""
    decision: Literal["svt", "rr", "always"] = "svt"
    planned_send_fraction: float = 0.2
    """``rho``: sends per query the plan assumes."""
    decision_share: float = 0.5
    """``alpha``: share of the per-send cost (svt) or of the budget (rr) for decisions."""
    threshold: float = 0.5
    """``T``: send when the relative gain exceeds it (noisily for svt/rr)."""
    send_floor: float | None = None
    """rr only: ``P(send | prefer reuse)``; None = symmetric randomized response."""
    capacity: int = 16
    policy: Literal["multi", "lru"] = "multi"
    weights: EvictionWeights = field(default_factory=EvictionWeights)
    llm_accuracy: float = 0.9
    """Assumed probability the LLM answers an unperturbed question right."""
    eps_decision: float | None = None
    """Fixed decision epsilon (``eps1`` or ``eps_s``) instead of the plan's (with
    ``eps_query``; for odometer runs with ``total_budget = inf``)."""
    eps_query: float | None = None
    """Fixed query-perturbation epsilon instead of the plan's."""

    def plan(self) -> tuple[float, float]:
        """``(eps_decision, eps_query)``: the fixed ones, else the budget plan (module doc)."""
        if self.eps_query is not None:
            if not self.eps_query > 0:
                raise ConfigError("eps_query must be > 0")
            if self.decision != "always" and not (self.eps_decision or 0) > 0:
                raise ConfigError("a fixed eps_query needs a fixed eps_decision > 0")
            return (self.eps_decision or 0.0) if self.decision != "always" else 0.0, self.eps_query
        b, n = self.total_budget, self.n_planned
        rho, alpha = self.planned_send_fraction, self.decision_share
        if not (b > 0 and n >= 1 and 0 < rho <= 1 and 0 < alpha < 1):
            raise ConfigError("need total_budget > 0, n_planned >= 1, rho in (0,1], alpha in (0,1)")
        if self.decision == "svt":
            per_send = b / (rho * n + 1)
            return alpha * per_send, (1 - alpha) * per_send
        if self.decision == "rr":
            return alpha * b / n, (1 - alpha) * b / max(1.0, rho * n)
        if self.decision == "always":
            return 0.0, b / n
        raise ConfigError(f"unknown decision {self.decision!r}")


@dataclass
class StepResult:
    """What one query produced."""

    located: int
    """The candidate the raw query was mapped to (local)."""
    sent: bool
    released: int | None
    """Released candidate index when sent."""
    answer: str
    spent: float
    """Basic-composition epsilon spent so far (after this step)."""


def _locate(keys: np.ndarray, q: np.ndarray) -> int:
    return int(np.argmax(keys @ q))


class LDPCacheSession:
    """One user's session: ``step(query)`` per raw query, or ``run(queries)``.

    Args:
        config: options and budget.
        keys: ``k`` public candidate key texts (embedded once).
        questions: ``k`` public candidate questions (what is sent).
        ask: the LLM (``chat_asker(llm)`` for the project's LLM layer).
        embed: the local embedder.
        calibration: similarity -> P(same question) (``fit_calibration``).
        utility: optional ``k x k`` utility for the exponential mechanism (default k-RR).
    """

    def __init__(
        self,
        config: LDPCacheConfig,
        keys: Sequence[str],
        questions: Sequence[str],
        ask: Ask,
        embed: Embed,
        calibration: Calibration,
        *,
        utility: np.ndarray | None = None,
        seed: int = 0,
    ) -> None:
        if len(keys) != len(questions) or len(keys) < 2:
            raise ConfigError("need >= 2 candidates, keys and questions of equal length")
        self.config = config
        self.questions = list(questions)
        self.ask = ask
        self.embed = embed
        self.calibration = calibration
        self.rng = np.random.default_rng(seed)
        self.key_vecs = np.asarray(embed(list(keys)), dtype=float)
        self.eps_decision, self.eps_query = config.plan()
        self.mechanism = ExponentialMechanism(self.eps_query, utility=utility, k=len(keys))
        self.accountant = PrivacyAccountant(budget=config.total_budget)
        self.cache = ResponseCache(
            config.capacity,
            policy=config.policy,
            weights=config.weights,
            llm_accuracy=config.llm_accuracy,
        )
        self.svt = (
            SparseVectorDecision(self.eps_decision, config.threshold)
            if config.decision == "svt"
            else None
        )
        self.rr = (
            RandomizedResponseDecision(self.eps_decision, config.send_floor)
            if config.decision == "rr"
            else None
        )
        self.t = 0
        self.sends = 0

    def best_entry(self, q: np.ndarray) -> tuple[CacheEntry | None, float]:
        """The cached entry of largest ``p(s) * acc`` for query vector ``q`` and that value."""
        if not self.cache.entries:
            return None, 0.0
        p = self.calibration(self.cache.keys() @ q)
        acc = np.array([e.accuracy(self.config.llm_accuracy) for e in self.cache.entries])
        value = p * acc
        j = int(np.argmax(value))
        return self.cache.entries[j], float(value[j])

    def score(self, q: np.ndarray, located: int) -> float:
        """Relative expected accuracy gain of sending, ``clip(1 - E_reuse / E_send, 0, 1)``."""
        e_send = self.mechanism.keep_probability(located) * self.config.llm_accuracy
        _, e_reuse = self.best_entry(q)
        return float(min(1.0, max(0.0, 1.0 - e_reuse / e_send))) if e_send > 0 else 0.0

    def _decide(self, score: float) -> bool:
        acc, eq = self.accountant, self.eps_query
        if self.config.decision == "always":
            return acc.can_afford(eq)
        if self.svt is not None:
            if not self.svt.epoch_open:
                if not acc.can_afford(self.eps_decision + eq):
                    return False  # filter closed: data-independent reuse from now on
                acc.charge("decision", self.eps_decision)
                self.svt.start_epoch(self.rng)
            return self.svt.decide(score, self.rng)
        assert self.rr is not None
        if not acc.can_afford(self.eps_decision + eq):
            return False
        acc.charge("decision", self.eps_decision)
        return self.rr.decide(score > self.config.threshold, self.rng)

    def step_vec(self, q: np.ndarray) -> StepResult:
        """One step for an already embedded raw query ``q`` (``dim``)."""
        self.t += 1
        located = _locate(self.key_vecs, q)
        send = self._decide(self.score(q, located))
        released = None
        if send:
            self.accountant.charge("query", self.eps_query)
            released = self.mechanism.release(located, self.rng)
            response = self.ask(self.questions[released])
            self.cache.insert(released, self.key_vecs[released], response, self.t)
            self.sends += 1
        entry, _ = self.best_entry(q)
        if entry is not None and not send:
            self.cache.touch(entry, self.t)
        answer = entry.response if entry is not None else ""
        return StepResult(located, send, released, answer, self.accountant.basic())

    def step(self, query: str) -> StepResult:
        """One raw query -> its answer (and what was released)."""
        return self.step_vec(np.asarray(self.embed([query]), dtype=float)[0])

    def run(self, queries: Sequence[str]) -> list[StepResult]:
        """All queries in order (embedded in one batch: local, free)."""
        vecs = np.asarray(self.embed(list(queries)), dtype=float)
        return [self.step_vec(v) for v in vecs]


class PerQueryLDP:
    """The baseline: every query perturbed at ``B / n`` and sent; the answer is the response."""

    def __init__(
        self,
        total_budget: float,
        n_planned: int,
        keys: Sequence[str],
        questions: Sequence[str],
        ask: Ask,
        embed: Embed,
        *,
        utility: np.ndarray | None = None,
        seed: int = 0,
    ) -> None:
        self.questions = list(questions)
        self.ask = ask
        self.embed = embed
        self.rng = np.random.default_rng(seed)
        self.key_vecs = np.asarray(embed(list(keys)), dtype=float)
        self.eps_query = total_budget / n_planned
        self.mechanism = ExponentialMechanism(self.eps_query, utility=utility, k=len(keys))
        self.accountant = PrivacyAccountant(budget=total_budget)

    def run(self, queries: Sequence[str]) -> list[StepResult]:
        """All queries in order; stops sending (answers "") once the budget is spent."""
        out = []
        for q in np.asarray(self.embed(list(queries)), dtype=float):
            located = _locate(self.key_vecs, q)
            if not self.accountant.can_afford(self.eps_query):
                out.append(StepResult(located, False, None, "", self.accountant.basic()))
                continue
            self.accountant.charge("query", self.eps_query)
            released = self.mechanism.release(located, self.rng)
            answer = self.ask(self.questions[released])
            out.append(StepResult(located, True, released, answer, self.accountant.basic()))
        return out


def fit_exponent(n: np.ndarray, spent: np.ndarray) -> float:
    """Slope of ``log spent`` on ``log n`` (least squares; points with spent > 0)."""
    n, spent = np.asarray(n, dtype=float), np.asarray(spent, dtype=float)
    ok = (n > 0) & (spent > 0)
    if ok.sum() < 2:
        raise ConfigError("need >= 2 positive points to fit an exponent")
    return float(np.polyfit(np.log(n[ok]), np.log(spent[ok]), 1)[0])


__all__ = [
    "Ask",
    "Calibration",
    "ChatLLM",
    "Embed",
    "LDPCacheConfig",
    "LDPCacheSession",
    "PerQueryLDP",
    "StepResult",
    "chat_asker",
    "fit_calibration",
    "fit_exponent",
]
