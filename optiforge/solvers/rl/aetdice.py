"""AETDICE: offline nonlinear multi-objective RL through the Aggregation-Expectation-
Transformation decomposition and DICE density ratios on the return-augmented state; with
its two baselines (linear scalarization, Markov-policy DICE) and the exact dynamic
programme that gives the true optimum on the gridworlds.

**Objectives** (``ControlProblem.objective``; the AET decomposition ``T(E[A(R)])`` of a
return vector ``R`` of ``K`` components). Grammar::

    objective := [ "ser:" | "esr:" ] body
    body      := "linear:" w1,...,wK                      E[w . R]
               | "min" [":" w1,...,wK] ["@" d1,...,dK]     E[min_k w_k (R_k - d_k)]
               | "fair" ["@" d1,...,dK]                    E[sum_k log(R_k - d_k)]  (d = -1)
               | "cvar:" a [":" w1,...,wK]                 CVaR_a(w . R), mean of the worst a
               | "threshold:" t1,...,tK                    P(R_k >= t_k for every k)

``esr:`` (expected scalarized return, the default) applies the aggregation ``A`` to each
episode's return and takes the expectation (``T`` the identity; for CVaR, through
Rockafellar-Uryasev ``CVaR_a(X) = max_tau tau - E[(tau - X)+] / a``, an ESR objective for each
fixed ``tau``). ``ser:`` (scalarized expected return: ``f(E[R])``, ``A`` the identity and
``T = f``) is allowed for ``min`` and ``fair``; for ``linear`` both coincide; ``cvar`` and
``threshold`` are distributional and have no SER form. ``fair`` takes ``log(max(x, 1e-3))``.
A bad string raises a one-line ``ConfigError``.

**Method.** An ESR objective is a terminal reward ``g(G_H)`` of the MDP whose state is
augmented with the step and the accumulated return vector, ``x_t = (t, s_t, G_t)``,
``G_t = sum_{tau<t} r_tau``; there the optimal policy is Markov (in ``x``), while on the plain
state it generally is not. AETDICE builds the empirical augmented MDP from the dataset
(every logged transition knows its ``G_t``), then estimates the stationary-distribution
correction ``w(x, a) = d^pi(x, a) / d^D(x, a)`` by the OptiDICE convex dual (finite horizon,
undiscounted, chi-square divergence ``phi(w) = (w - 1)^2 / 2`` at strength ``alpha``)::

    min_nu  E_{mu0}[nu(x0)] + E_D[ h(e_nu(x, a)) ],   e_nu = r~ + P^ nu - nu,
    h(e) = e + e^2 / (2 alpha) if e >= -alpha else -alpha / 2,  w* = max(0, 1 + e_nu / alpha)

(L-BFGS on the exact empirical Bellman residual; ``r~`` scaled to ``max |r~| = 1``), and
extracts the policy by weighted behaviour cloning, ``pi(a | x) ∝ d^D(x, a) w(x, a)`` (the
tabular maximum-likelihood fit of the weighted data). CVaR runs one dual per candidate
``tau`` (quantiles of the logged ``w . R``) and keeps the policy whose *estimated* CVaR is
best; every estimate is DualDICE's: the ratios ``d^pi / d^D`` of a fixed policy solve the
linear system ``(I - P^_pi)^T u = mu0_pi`` (the fixed point of DualDICE's convex objective,
exact on the empirical model), and ``u`` reweights the logged episode returns into an
estimated return distribution. SER objectives are concave in the occupancy: AETDICE then
solves the same chi-square-regularized primal ``max T(E_d[r]) - alpha D(d || d^D)`` under the
empirical flow constraints with cvxpy (Clarabel).

**Baselines**, on the same data: ``LINEAR_SCALARIZATION`` runs the same dual on the plain
state ``(t, s)`` with reward ``w . r`` for ``weights`` weight vectors on the simplex (a grid)
and keeps the weight whose policy's objective DualDICE estimates best on the augmented
data (a generous selection: the baseline is given AETDICE's estimator). ``MARKOV_DICE``
runs AETDICE's dual with the nonlinear terminal reward ``g(R)`` of each logged episode but
on the plain state ``(t, s)`` (no augmentation), with its own plain-state estimates.

**Policies.** ``TabularMOPolicy.probs(t, s, G)``; an augmented state the data never saw
falls back to the DICE-weighted action counts of its ``(t, s)`` over all ``G``, then to
uniform. The ``point`` environment is discretized (``bins`` cells of ``x``, actions
``{-1, 0, 1}``; its rewards are 0/1 so ``G`` is exact): tabular AETDICE on the grid. A
function-approximation (torch) variant is not written.

**Exact reference.** ``AugmentedMDP.build(model)`` enumerates the reachable augmented
states of a ``TabularModel``; ``dp_optimum`` runs backward induction on them (exact for any
ESR objective, CVaR by maximizing over ``tau`` on the finite set of reachable ``w . R``;
SER by the concave programme on exact occupancies); ``evaluate_exact`` propagates a
policy's state distribution forward and returns the exact return distribution.

What is a library's: scipy (L-BFGS-B, sparse matrices and ``spsolve``), cvxpy with
Clarabel (the SER programme), Gymnasium (environments). The rest is ours.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.optimize
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from optiforge.errors import ConfigError
from optiforge.solvers.rl.api import ControlProblem, HParam, RLMethod, RLResult
from optiforge.solvers.rl.mo_envs import TabularModel, TabularMOEnv

__all__ = ["AETDICE", "LINEAR_SCALARIZATION", "MARKOV_DICE", "AugmentedMDP", "EmpiricalMDP",
           "Objective", "TabularMOPolicy", "dp_optimum", "dualdice_distribution",
           "evaluate_exact", "optidice", "parse_objective", "solve"]  # fmt: skip

KINDS = ("linear", "min", "fair", "cvar", "threshold")
LOG_FLOOR = 1e-3


# =============================================================================== objective
def _nums(text: str, what: str) -> tuple[float, ...]:
    try:
        out = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise ConfigError(f"objective: {what} must be numbers separated by commas, got {text!r}"
                          ) from None  # fmt: skip
    if not out:
        raise ConfigError(f"objective: {what} is empty")
    return out


@dataclass(frozen=True)
class Objective:
    """A parsed objective (see the module docstring)."""

    kind: str
    mode: str = "esr"
    weights: tuple[float, ...] | None = None
    ref: tuple[float, ...] | None = None
    level: float = 1.0
    thresholds: tuple[float, ...] | None = None
    text: str = ""

    def check(self, k: int) -> None:
        for name, v in (("weights", self.weights), ("reference point", self.ref),
                        ("thresholds", self.thresholds)):  # fmt: skip
            if v is not None and len(v) != k:
                raise ConfigError(f"objective {self.text!r}: {name} have {len(v)} entries, the "
                                  f"environment has {k} reward components")  # fmt: skip

    def _w(self, k: int) -> np.ndarray:
        return np.asarray(self.weights if self.weights is not None else (1.0,) * k)

    def utility(self, R: np.ndarray) -> np.ndarray:
        """Per return vector (rows of ``R (n, K)``) the scalar ``A``/``f`` value ``(n,)``
        (for cvar: ``w . R``)."""
        R = np.atleast_2d(np.asarray(R, dtype=np.float64))
        k = R.shape[1]
        if self.kind in ("linear", "cvar"):
            return R @ self._w(k)
        if self.kind == "min":
            ref = np.asarray(self.ref if self.ref is not None else (0.0,) * k)
            return ((R - ref) * self._w(k)).min(axis=1)
        if self.kind == "fair":
            ref = np.asarray(self.ref if self.ref is not None else (-1.0,) * k)
            return np.log(np.maximum(R - ref, LOG_FLOOR)).sum(axis=1)
        assert self.thresholds is not None
        ok = np.all(np.asarray(self.thresholds) - 1e-9 <= R, axis=1)
        return np.asarray(ok, dtype=np.float64)

    def terminal_reward(self, R: np.ndarray, tau: float | None = None) -> np.ndarray:
        """The ESR terminal reward ``g(R)`` ``(n,)``; for cvar ``tau - (tau - w.R)+ / a``."""
        u = self.utility(R)
        if self.kind == "cvar":
            assert tau is not None
            return tau - np.maximum(tau - u, 0.0) / self.level
        return u

    def value(self, R: np.ndarray, probs: np.ndarray) -> float:
        """The objective of the return distribution with atoms ``R (n, K)`` and
        probabilities ``probs (n,)`` (normalized here)."""
        R = np.atleast_2d(np.asarray(R, dtype=np.float64))
        p = np.asarray(probs, dtype=np.float64)
        p = p / p.sum()
        if self.mode == "ser":
            return float(self.utility((p @ R)[None, :])[0])
        u = self.utility(R)
        if self.kind != "cvar":
            return float(p @ u)
        order = np.argsort(u, kind="stable")
        left, acc = self.level, 0.0
        for i in order:
            take = min(p[i], left)
            acc += take * u[i]
            left -= take
            if left <= 1e-15:
                break
        return acc / self.level


def parse_objective(text: str, n_rewards: int | None = None) -> Objective:
    """Parse ``text`` (grammar in the module docstring); ``ConfigError`` on a bad string or
    (with ``n_rewards``) on vectors of the wrong length."""
    raw = text
    text = text.strip().replace(" ", "")
    mode = "esr"
    if text.startswith(("ser:", "esr:")):
        mode, text = text[:3], text[4:]
    head, _, rest = text.partition(":")
    for k in ("min", "fair"):
        if head.startswith(k + "@"):
            head, rest = k, head[len(k) :] + (":" + rest if rest else "")
    if head not in KINDS:
        raise ConfigError(f"objective {raw!r}: unknown kind {head!r} (known: {', '.join(KINDS)}; "
                          "e.g. linear:0.7,0.3, min, fair, cvar:0.2, threshold:50,-14)")  # fmt: skip
    obj: Objective
    if head == "linear":
        if not rest:
            raise ConfigError(f"objective {raw!r}: linear needs weights, e.g. linear:0.7,0.3")
        obj = Objective("linear", mode, weights=_nums(rest, "linear weights"), text=raw)
    elif head in ("min", "fair"):
        args, _, ref = rest.partition("@")
        if head == "fair" and args:
            raise ConfigError(f"objective {raw!r}: fair takes only a reference point, fair@d1,d2")
        obj = Objective(head, mode, weights=_nums(args, "min weights") if args else None,
                        ref=_nums(ref, "reference point") if ref else None, text=raw)  # fmt: skip
    elif head == "cvar":
        lvl, _, w = rest.partition(":")
        try:
            level = float(lvl)
        except ValueError:
            raise ConfigError(f"objective {raw!r}: cvar needs a level in (0, 1], e.g. cvar:0.2"
                              ) from None  # fmt: skip
        if not 0.0 < level <= 1.0:
            raise ConfigError(f"objective {raw!r}: the cvar level must lie in (0, 1]")
        obj = Objective("cvar", mode, weights=_nums(w, "cvar weights") if w else None,
                        level=level, text=raw)  # fmt: skip
    else:
        if not rest:
            raise ConfigError(f"objective {raw!r}: threshold needs one bound per component")
        obj = Objective("threshold", mode, thresholds=_nums(rest, "thresholds"), text=raw)
    if mode == "ser" and head in ("cvar", "threshold"):
        raise ConfigError(f"objective {raw!r}: {head} is distributional and has no ser: form")
    if n_rewards is not None:
        obj.check(n_rewards)
    return obj


# ===================================================================== exact (the model)
def _gkey(G: np.ndarray) -> tuple[float, ...]:
    return tuple(np.round(np.asarray(G, dtype=np.float64), 9).tolist())


@dataclass
class AugmentedMDP:
    """The reachable augmented states ``(t, s, G)`` of a ``TabularModel`` and its edges.

    Nodes: ``t (N,)``, ``s (N,)``, ``G (N, K)``. Edges (one per reachable ``(node, action,
    next state)``): ``src``, ``act``, ``prob``, ``dst`` (next node, -1 when the transition
    ends the episode: done or ``t + 1 = horizon``), ``gend (E, K)`` the accumulated return
    after the edge."""

    t: np.ndarray
    s: np.ndarray
    G: np.ndarray
    src: np.ndarray
    act: np.ndarray
    prob: np.ndarray
    dst: np.ndarray
    gend: np.ndarray
    mu0: np.ndarray
    n_actions: int
    horizon: int

    @classmethod
    def build(cls, model: TabularModel) -> AugmentedMDP:
        index: dict[tuple[Any, ...], int] = {}
        ts: list[int] = []
        ss: list[int] = []
        Gs: list[tuple[float, ...]] = []
        K = model.n_rewards

        def node(t: int, s: int, G: tuple[float, ...]) -> int:
            key = (t, s, G)
            if key not in index:
                index[key] = len(ts)
                ts.append(t)
                ss.append(s)
                Gs.append(G)
            return index[key]

        zero = _gkey(np.zeros(K))
        mu0 = [node(0, int(s), zero) for s in np.flatnonzero(model.mu0)]
        edges: list[tuple[int, int, float, int, tuple[float, ...]]] = []
        frontier = list(mu0)
        for t in range(model.horizon):
            nxt: list[int] = []
            for i in frontier:
                s, G = ss[i], np.asarray(Gs[i])
                for a in range(model.n_actions):
                    for s2 in np.flatnonzero(model.P[s, a]):
                        g2 = _gkey(G + model.R[s, a, s2])
                        end = bool(model.done[s, a, s2]) or t + 1 == model.horizon
                        before = len(ts)
                        j = -1 if end else node(t + 1, int(s2), g2)
                        if j >= 0 and j == before:
                            nxt.append(j)
                        edges.append((i, a, float(model.P[s, a, s2]), j, g2))
            frontier = nxt
        m0 = np.zeros(len(ts))
        for s in np.flatnonzero(model.mu0):
            m0[index[(0, int(s), zero)]] += model.mu0[s]
        e = list(zip(*edges, strict=True))
        return cls(np.asarray(ts), np.asarray(ss), np.asarray(Gs, dtype=np.float64).reshape(-1, K),
                   np.asarray(e[0]), np.asarray(e[1]), np.asarray(e[2]), np.asarray(e[3]),
                   np.asarray(e[4], dtype=np.float64), m0, model.n_actions, model.horizon)  # fmt: skip

    @property
    def n_nodes(self) -> int:
        return len(self.t)


def _backward(aug: AugmentedMDP, g_end: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Backward induction with terminal reward ``g_end (E,)`` per ending edge: node values
    ``(N,)`` and greedy actions ``(N,)``."""
    V = np.zeros(aug.n_nodes)
    Q = np.zeros((aug.n_nodes, aug.n_actions))
    et = aug.t[aug.src]
    for t in range(aug.horizon - 1, -1, -1):
        e = np.flatnonzero(et == t)
        d = aug.dst[e]
        val = np.where(d >= 0, V[np.maximum(d, 0)], g_end[e])
        np.add.at(Q, (aug.src[e], aug.act[e]), aug.prob[e] * val)
        nodes = np.flatnonzero(aug.t == t)
        V[nodes] = Q[nodes].max(axis=1)
    return V, Q.argmax(axis=1)


def _cvar_taus(obj: Objective, R: np.ndarray, limit: int | None = None) -> np.ndarray:
    u = np.unique(np.round(obj.utility(R), 9))
    if limit is not None and len(u) > limit:
        u = np.unique(np.quantile(u, np.linspace(0, 1, limit)))
    return u


def dp_optimum(model: TabularModel, obj: Objective, aug: AugmentedMDP | None = None
               ) -> tuple[float, np.ndarray]:  # fmt: skip
    """The exact optimum of ``obj`` over all (history-dependent) policies and an optimal
    deterministic augmented policy ``(N,)`` (actions per node of ``aug``). ESR: backward
    induction on the augmented state (CVaR: the best ``tau`` of the reachable ``w . R``);
    SER: the concave programme on exact occupancies (the policy is then its argmax)."""
    aug = aug or AugmentedMDP.build(model)
    obj.check(model.n_rewards)
    if obj.mode == "ser" and obj.kind != "linear":
        trans = _Transitions.from_aug(aug)
        u = _ser_program(trans, obj, None, 0.0)
        occ = np.zeros((aug.n_nodes, aug.n_actions))
        occ[trans.pair_node, trans.pair_act] = u
        mean = trans.rvec.T @ (u[trans.tr_pair] * trans.tr_w)
        return obj.value(mean, np.ones(1)), occ.argmax(1)
    root = np.flatnonzero(aug.mu0)
    taus: Sequence[float | None] = [None]
    if obj.kind == "cvar":
        taus = list(_cvar_taus(obj, aug.gend[aug.dst < 0]))
    best, best_pol = -np.inf, np.zeros(aug.n_nodes, dtype=int)
    for tau in taus:
        V, pol = _backward(aug, obj.terminal_reward(aug.gend, tau))
        v = float(aug.mu0[root] @ V[root])
        if v > best + 1e-12:
            best, best_pol = v, pol
    return best, best_pol


def evaluate_exact(aug: AugmentedMDP, pi: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact return distribution of the augmented policy ``pi (N, A)`` (rows: action
    probabilities per node): atoms ``(n, K)`` and probabilities ``(n,)``."""
    m = aug.mu0.copy()
    et = aug.t[aug.src]
    atoms: dict[tuple[float, ...], float] = {}
    for t in range(aug.horizon):
        e = np.flatnonzero(et == t)
        flow = m[aug.src[e]] * pi[aug.src[e], aug.act[e]] * aug.prob[e]
        d = aug.dst[e]
        np.add.at(m, d[d >= 0], flow[d >= 0])
        for k in np.flatnonzero(d < 0):
            if flow[k] > 0:
                key = _gkey(aug.gend[e[k]])
                atoms[key] = atoms.get(key, 0.0) + float(flow[k])
    keys = list(atoms)
    return np.asarray(keys, dtype=np.float64), np.asarray([atoms[k] for k in keys])


# ================================================================== data -> empirical MDP
def discretize(obs: np.ndarray, bins: int) -> np.ndarray:
    """Tabular observations pass through; ``(T, 1)`` floats in [-1, 1] become ``bins`` cells."""
    obs = np.asarray(obs)
    if obs.ndim == 1 and np.issubdtype(obs.dtype, np.integer):
        return obs.astype(np.int64)
    x = np.asarray(obs, dtype=np.float64).reshape(len(obs), -1)[:, 0]
    return np.clip(((x + 1.0) / 2.0 * bins).astype(np.int64), 0, bins - 1)


def discretize_actions(act: np.ndarray) -> np.ndarray:
    act = np.asarray(act)
    if act.ndim == 1 and np.issubdtype(act.dtype, np.integer):
        return act.astype(np.int64)
    v = np.asarray(act, dtype=np.float64).reshape(len(act), -1)[:, 0]
    return np.rint(np.clip(v, -1, 1)).astype(np.int64) + 1  # {-1, 0, 1} -> {0, 1, 2}


@dataclass
class _Transitions:
    """Pairs ``(node, action)`` with per-transition successors: the shared input of the
    dual, DualDICE and the SER programme (empirical: each logged transition weighs
    ``1 / n(pair)``; exact: its probability)."""

    n_nodes: int
    n_actions: int
    pair_node: np.ndarray
    pair_act: np.ndarray
    dD: np.ndarray
    mu0: np.ndarray
    tr_pair: np.ndarray
    tr_dst: np.ndarray
    tr_w: np.ndarray
    tr_gend: np.ndarray
    rvec: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    """(T, K) the reward vector of each transition."""

    @classmethod
    def from_aug(cls, aug: AugmentedMDP) -> _Transitions:
        A = aug.n_actions
        pid = aug.src * A + aug.act
        uniq, inv = np.unique(pid, return_inverse=True)
        Gsrc = aug.G[aug.src]
        return cls(aug.n_nodes, A, uniq // A, uniq % A, np.ones(len(uniq)), aug.mu0, inv,
                   aug.dst, aug.prob, aug.gend, aug.gend - Gsrc)  # fmt: skip

    @property
    def n_pairs(self) -> int:
        return len(self.pair_node)

    def step_matrix(self) -> sp.csr_matrix:
        """``M = P^ - I`` as a (pairs, nodes) matrix (ending transitions go nowhere)."""
        keep = self.tr_dst >= 0
        P = sp.csr_matrix((self.tr_w[keep], (self.tr_pair[keep], self.tr_dst[keep])),
                          shape=(self.n_pairs, self.n_nodes))  # fmt: skip
        eye = sp.csr_matrix((np.ones(self.n_pairs), (np.arange(self.n_pairs), self.pair_node)),
                            shape=(self.n_pairs, self.n_nodes))  # fmt: skip
        return (P - eye).tocsr()

    def pair_mean(self, per_transition: np.ndarray) -> np.ndarray:
        return np.bincount(self.tr_pair, weights=self.tr_w * per_transition,
                           minlength=self.n_pairs)  # fmt: skip


@dataclass
class EmpiricalMDP:
    """The empirical MDP of a dataset on augmented keys ``(t, s, G_t)`` or plain keys
    ``(t, s)``. ``trans`` holds the pairs and logged transitions; ``keys`` the node keys;
    ``step_rew (T, K)`` the logged reward vectors."""

    augmented: bool
    keys: list[tuple[Any, ...]]
    index: dict[tuple[Any, ...], int]
    trans: _Transitions
    step_rew: np.ndarray
    n_episodes: int

    @classmethod
    def from_data(cls, data: dict[str, np.ndarray], augmented: bool, n_actions: int,
                  bins: int = 21) -> EmpiricalMDP:  # fmt: skip
        s = discretize(data["obs"], bins)
        s2 = discretize(data["next_obs"], bins)
        a = discretize_actions(data["act"])
        rew = np.asarray(data["rew"], dtype=np.float64)
        t, ep, last = data["t"].astype(int), data["episode"].astype(int), data["last"].astype(bool)
        K = rew.shape[1]
        G = np.zeros_like(rew)
        acc = np.zeros(K)
        for i in range(len(t)):
            if t[i] == 0:
                acc = np.zeros(K)
            G[i] = acc
            acc = acc + rew[i]
        gend = G + rew
        index: dict[tuple[Any, ...], int] = {}
        keys: list[tuple[Any, ...]] = []

        def node(key: tuple[Any, ...]) -> int:
            if key not in index:
                index[key] = len(keys)
                keys.append(key)
            return index[key]

        def key_of(tt: int, ss: int, g: np.ndarray) -> tuple[Any, ...]:
            return (tt, ss, _gkey(g)) if augmented else (tt, ss)

        src = np.array([node(key_of(t[i], s[i], G[i])) for i in range(len(t))])
        dst = np.array([-1 if last[i] else node(key_of(t[i] + 1, s2[i], gend[i]))
                        for i in range(len(t))])  # fmt: skip
        pid = src * n_actions + a
        uniq, inv, counts = np.unique(pid, return_inverse=True, return_counts=True)
        n_ep = int(ep.max()) + 1 if len(ep) else 0
        mu0 = np.bincount(src[t == 0], minlength=len(keys)) / max(n_ep, 1)
        trans = _Transitions(len(keys), n_actions, uniq // n_actions, uniq % n_actions,
                             counts / max(n_ep, 1), mu0.astype(np.float64), inv, dst,
                             1.0 / counts[inv], gend, rew)  # fmt: skip
        return cls(augmented, keys, index, trans, rew, n_ep)


# ============================================================================ the solvers
def optidice(trans: _Transitions, r_tr: np.ndarray, alpha: float) -> tuple[np.ndarray, float]:
    """The OptiDICE dual (module docstring) for per-transition rewards ``r_tr (T,)``:
    ratios ``w (pairs,)`` and the estimated objective ``sum d^D w r~`` (unscaled)."""
    r = trans.pair_mean(r_tr)
    scale = float(np.abs(r).max()) or 1.0
    r = r / scale
    M = trans.step_matrix()
    MT = M.T.tocsr()
    dD, mu0 = trans.dD, trans.mu0

    def fg(nu: np.ndarray) -> tuple[float, np.ndarray]:
        e = r + M @ nu
        pos = e >= -alpha
        h = np.where(pos, e + e * e / (2 * alpha), -alpha / 2)
        w = np.where(pos, 1.0 + e / alpha, 0.0)
        return float(mu0 @ nu + dD @ h), mu0 + MT @ (dD * w)

    res = scipy.optimize.minimize(fg, np.zeros(trans.n_nodes), jac=True, method="L-BFGS-B",
                                  options={"maxiter": 20_000, "maxfun": 40_000, "gtol": 1e-10,
                                           "ftol": 1e-15})  # fmt: skip
    e = r + M @ res.x
    w = np.maximum(0.0, 1.0 + e / alpha)
    return w, float(dD @ (w * r)) * scale


def dualdice_distribution(trans: _Transitions, pi_pair: np.ndarray
                          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """DualDICE for a fixed policy ``pi_pair (pairs,)`` (its probability of each pair's
    action; each node's pairs sum to 1): ratios ``w = d^pi / d^D (pairs,)`` from
    ``(I - P^_pi)^T u = mu0_pi``, ``u = d^D w``, and the estimated return distribution
    (atoms ``(T', K)`` the logged final returns, probabilities ``(T',)``)."""
    n = trans.n_pairs
    keep = trans.tr_dst >= 0
    # u_q = pi_q (mu0[node(q)] + sum_p u_p P^(node(q) | p))
    node_pairs = sp.csr_matrix((np.ones(n), (trans.pair_node, np.arange(n))),
                               shape=(trans.n_nodes, n))  # fmt: skip
    P = sp.csr_matrix((trans.tr_w[keep], (trans.tr_pair[keep], trans.tr_dst[keep])),
                      shape=(n, trans.n_nodes))  # fmt: skip
    into = sp.diags(pi_pair) @ node_pairs.T @ P.T  # (pairs, pairs): u_q <- u_p
    u = spla.spsolve((sp.identity(n) - into).tocsc(), pi_pair * trans.mu0[trans.pair_node])
    u = np.asarray(u).reshape(-1)
    end = ~keep
    mass = u[trans.tr_pair[end]] * trans.tr_w[end]
    return u / trans.dD, trans.tr_gend[end], mass


def _ser_program(trans: _Transitions, obj: Objective, dD: np.ndarray | None, alpha: float
                 ) -> np.ndarray:  # fmt: skip
    """max T(E_u[r]) - alpha sum (u - d^D)^2 / (2 d^D) over occupancies ``u (pairs,)`` >= 0
    under the flow constraints (cvxpy, Clarabel); ``dD=None``: no regularizer."""
    import cvxpy as cp

    n = trans.n_pairs
    rbar = np.stack([trans.pair_mean(trans.rvec[:, k]) for k in range(trans.rvec.shape[1])], 1)
    scale = float(np.abs(rbar).max()) or 1.0
    keep = trans.tr_dst >= 0
    inflow = sp.csr_matrix((trans.tr_w[keep], (trans.tr_dst[keep], trans.tr_pair[keep])),
                           shape=(trans.n_nodes, n))  # fmt: skip
    out = sp.csr_matrix((np.ones(n), (trans.pair_node, np.arange(n))), shape=(trans.n_nodes, n))
    u = cp.Variable(n, nonneg=True)
    ER = (rbar / scale).T @ u
    K = rbar.shape[1]
    w = np.asarray(obj.weights if obj.weights is not None else (1.0,) * K)
    if obj.kind == "min":
        ref = np.asarray(obj.ref if obj.ref is not None else (0.0,) * K) / scale
        util = cp.min(cp.multiply(w, ER - ref))
    else:
        ref = np.asarray(obj.ref if obj.ref is not None else (-1.0,) * K) / scale
        util = cp.sum(cp.log(ER - ref))
    goal = util
    if dD is not None and alpha > 0:
        goal = util - alpha * cp.sum(cp.multiply(1.0 / (2 * dD), cp.square(u - dD)))
    prob = cp.Problem(cp.Maximize(goal), [out @ u == trans.mu0 + inflow @ u])
    try:
        prob.solve(solver=cp.CLARABEL)
    except cp.error.SolverError:  # Clarabel can stall on the exact (unregularized) programme
        prob.solve(solver=cp.SCS, eps=1e-8, max_iters=200_000)
    if u.value is None:
        raise ConfigError(f"objective {obj.text!r}: the SER programme found no solution "
                          f"({prob.status})")  # fmt: skip
    return np.maximum(np.asarray(u.value), 0.0)


# ============================================================================== policies
@dataclass
class TabularMOPolicy:
    """Action probabilities on augmented (``(t, s, G)``) or plain (``(t, s)``) keys, with
    the fallback of the module docstring. ``bins`` discretizes float observations."""

    augmented: bool
    table: dict[tuple[Any, ...], np.ndarray]
    fallback: dict[tuple[int, int], np.ndarray]
    n_actions: int
    bins: int = 21
    continuous_actions: bool = False

    def probs(self, t: int, s: int, G: np.ndarray) -> np.ndarray:
        key = (t, s, _gkey(G)) if self.augmented else (t, s)
        p = self.table.get(key)
        if p is None:
            p = self.fallback.get((t, s))
        if p is None:
            return np.full(self.n_actions, 1.0 / self.n_actions)
        return p

    def on_aug(self, aug: AugmentedMDP) -> np.ndarray:
        """``(N, A)``: the policy on every node of an exact augmented MDP."""
        return np.stack([self.probs(int(aug.t[i]), int(aug.s[i]), aug.G[i])
                         for i in range(aug.n_nodes)])  # fmt: skip

    def act(self, obs: Any, t: int, G: np.ndarray, gen: np.random.Generator,
            deterministic: bool = False) -> Any:  # fmt: skip
        """One action for a raw observation at step ``t`` with accumulated return ``G``."""
        o = np.asarray(obs)
        s = int(o) if o.ndim == 0 else int(discretize(o.reshape(1, -1).astype(float), self.bins)[0])
        p = self.probs(t, s, G)
        a = int(np.argmax(p)) if deterministic else int(gen.choice(self.n_actions, p=p))
        return np.array([float(a - 1)], dtype=np.float32) if self.continuous_actions else a


def _policy(emp: EmpiricalMDP, u: np.ndarray, bins: int, cont: bool) -> TabularMOPolicy:
    """Weighted behaviour cloning: ``pi(a | x) ∝ u(x, a) = d^D(x, a) w(x, a)``; nodes where
    every ``u`` is 0 keep the behaviour's counts."""
    tr = emp.trans
    A = tr.n_actions
    W = np.zeros((tr.n_nodes, A))
    B = np.zeros((tr.n_nodes, A))
    W[tr.pair_node, tr.pair_act] = u
    B[tr.pair_node, tr.pair_act] = tr.dD
    tot = W.sum(1, keepdims=True)
    probs = np.where(tot > 1e-12, W / np.maximum(tot, 1e-300),
                     B / np.maximum(B.sum(1, keepdims=True), 1e-300))  # fmt: skip
    table = {k: probs[i] for i, k in enumerate(emp.keys)}
    agg: dict[tuple[int, int], np.ndarray] = {}
    for i, k in enumerate(emp.keys):
        agg[(k[0], k[1])] = agg.get((k[0], k[1]), np.zeros(A)) + (W[i] if tot[i] > 1e-12 else B[i])
    fallback = {k: v / v.sum() for k, v in agg.items() if v.sum() > 0}
    return TabularMOPolicy(emp.augmented, table, fallback, A, bins, cont)


def _pi_on(emp: EmpiricalMDP, policy: TabularMOPolicy) -> np.ndarray:
    """``(pairs,)``: ``policy`` on ``emp``'s pairs, renormalized over the logged actions of
    each node (off-support actions cannot be estimated from data); no mass: behaviour."""
    tr = emp.trans
    p = np.zeros(tr.n_pairs)
    for j in range(tr.n_pairs):
        key = emp.keys[tr.pair_node[j]]
        G = np.asarray(key[2]) if emp.augmented else np.zeros(1)
        p[j] = policy.probs(key[0], key[1], G)[tr.pair_act[j]]
    tot = np.bincount(tr.pair_node, weights=p, minlength=tr.n_nodes)
    beh = np.bincount(tr.pair_node, weights=tr.dD, minlength=tr.n_nodes)
    node = tr.pair_node
    return np.where(tot[node] > 1e-12, p / np.maximum(tot[node], 1e-300), tr.dD / beh[node])


def estimate(emp: EmpiricalMDP, obj: Objective, policy: TabularMOPolicy) -> float:
    """DualDICE's estimate of ``obj`` for ``policy`` from the data behind ``emp``."""
    _, atoms, mass = dualdice_distribution(emp.trans, _pi_on(emp, policy))
    if mass.sum() <= 0:
        return -np.inf
    return obj.value(atoms, mass)


# ================================================================================= solve
def simplex_grid(k: int, n: int) -> np.ndarray:
    """Weight vectors on the ``k``-simplex with coordinates in multiples of ``1/(n-1)``."""
    m = n - 1
    pts = [c for c in itertools.product(range(m + 1), repeat=k) if sum(c) == m]
    return np.asarray(pts, dtype=np.float64) / m


def solve(method: str, data: dict[str, np.ndarray], obj: Objective, n_actions: int,
          alpha: float = 0.001, bins: int = 21, weights: int = 11, n_tau: int = 12
          ) -> tuple[TabularMOPolicy, dict[str, Any]]:  # fmt: skip
    """Train ``method`` (``"aetdice"``, ``"linear-scalarization"``, ``"markov-dice"``) on
    ``data`` for ``obj``: the policy and what it measured (``estimate``: its own estimate
    of the objective; ``weight`` / ``tau`` where selected)."""
    cont = not (np.asarray(data["act"]).ndim == 1
                and np.issubdtype(np.asarray(data["act"]).dtype, np.integer))  # fmt: skip
    obj.check(np.asarray(data["rew"]).shape[1])
    aug = EmpiricalMDP.from_data(data, True, n_actions, bins)
    if method == "aetdice":
        emp = aug
    elif method in ("markov-dice", "linear-scalarization"):
        emp = EmpiricalMDP.from_data(data, False, n_actions, bins)
    else:
        raise ConfigError(f"unknown mo-offline method {method!r}")
    tr = emp.trans
    last = tr.tr_dst < 0
    info: dict[str, Any] = {}
    if method == "linear-scalarization":
        best: tuple[float, TabularMOPolicy | None, Any] = (-np.inf, None, None)
        K = tr.rvec.shape[1]
        grid = np.asarray([obj.weights]) if obj.kind == "linear" else simplex_grid(K, weights)
        for wv in grid:
            w, _ = optidice(tr, tr.rvec @ wv, alpha)
            pol = _policy(emp, tr.dD * w, bins, cont)
            # the baseline is scored with AETDICE's augmented estimator (generous)
            lifted = TabularMOPolicy(True, {}, {k: v for k, v in pol.table.items()}, n_actions,
                                     bins, cont)  # fmt: skip
            est = estimate(aug, obj, lifted)
            if est > best[0]:
                best = (est, pol, wv.tolist())
        assert best[1] is not None
        info.update(estimate=best[0], weight=best[2])
        return best[1], info
    if obj.mode == "ser" and obj.kind != "linear":
        u = _ser_program(tr, obj, tr.dD, alpha)
        pol = _policy(emp, u, bins, cont)
        info["estimate"] = estimate(emp, obj, pol)
        return pol, info
    taus: Sequence[float | None] = [None]
    if obj.kind == "cvar":
        taus = list(_cvar_taus(obj, tr.tr_gend[last], n_tau))
    best2: tuple[float, TabularMOPolicy | None, Any] = (-np.inf, None, None)
    for tau in taus:
        g = np.where(last, obj.terminal_reward(tr.tr_gend, tau), 0.0)
        w, _ = optidice(tr, g, alpha)
        pol = _policy(emp, tr.dD * w, bins, cont)
        est = estimate(emp, obj, pol)
        if est > best2[0]:
            best2 = (est, pol, tau)
    assert best2[1] is not None
    info.update(estimate=best2[0], tau=best2[2])
    return best2[1], info


def rollout_returns(env_spec: str, policy: TabularMOPolicy, episodes: int, seed: int
                    ) -> np.ndarray:  # fmt: skip
    """Monte-Carlo return vectors ``(episodes, K)`` of ``policy`` (for envs without an exact
    model, e.g. ``point``)."""
    from optiforge.solvers.rl.mo_envs import make_mo_env

    env = make_mo_env(env_spec)
    gen = np.random.default_rng(seed)
    out = []
    for k in range(episodes):
        o, _ = env.reset(seed=seed + k)
        G = np.zeros(len(env.reward_names))
        t, done = 0, False
        while not done:
            o, r, term, trunc, _ = env.step(policy.act(o, t, G, gen))
            G = G + np.asarray(r, dtype=np.float64)
            t += 1
            done = term or trunc
        out.append(G)
    env.close()
    return np.asarray(out)


def evaluate_objective(problem: ControlProblem, policy: TabularMOPolicy, episodes: int = 50,
                       seed: int = 10_000) -> dict[str, Any]:  # fmt: skip
    """The stated objective (higher is better) of ``policy`` on ``episodes`` fresh
    Monte-Carlo episodes (seeds ``seed + k``) of ``problem.env``, what the ``rl`` suite
    scores an offline plan by: ``{"objective", "returns" (mean vector), "episodes"}``."""
    from optiforge.solvers.rl.mo_envs import make_mo_env

    env = make_mo_env(problem.env)
    obj = parse_objective(problem.objective or "", len(env.reward_names))
    env.close()
    R = rollout_returns(problem.env, policy, episodes, seed)
    return {"objective": obj.value(R, np.ones(len(R))), "returns": R.mean(axis=0).tolist(),
            "episodes": episodes}  # fmt: skip


# ============================================================================ RL methods
def _runner(method: str) -> Callable[..., RLResult]:
    def run(problem: ControlProblem, seed: int = 0, alpha: float = 0.001, **_: Any) -> RLResult:
        """``problem.env`` an ``mo_envs`` spec; ``problem.options``: ``data`` (arrays) or
        ``episodes`` (default 300) and ``behaviour`` (default mixture) to collect them with
        ``seed``. ``extra``: the method's estimate, and on the gridworlds the exact value
        and the DP optimum."""
        from optiforge.solvers.rl import mo_data
        from optiforge.solvers.rl.mo_envs import make_mo_env

        if problem.kind != "mo-offline":
            raise ConfigError(f"{method} solves mo-offline problems, not {problem.kind!r}")
        env = make_mo_env(problem.env)
        obj = parse_objective(problem.objective or "", len(env.reward_names))
        data = problem.options.get("data")
        if data is None:
            data = mo_data.collect_dataset(problem.env, int(problem.options.get("episodes", 300)),
                                           seed, str(problem.options.get("behaviour", "mixture")))  # fmt: skip
        n_act = int(env.action_space.n) if hasattr(env.action_space, "n") else 3
        pol, info = solve(method, data, obj, n_act, alpha=float(alpha))
        if isinstance(env, TabularMOEnv):
            aug = AugmentedMDP.build(env.model())
            info["value"] = obj.value(*evaluate_exact(aug, pol.on_aug(aug)))
            info["dp_optimum"] = dp_optimum(env.model(), obj, aug)[0]
        else:
            # the method's own report; seeds 30000+ (the rl suite scores on 10000+ itself)
            R = rollout_returns(problem.env, pol, 200, 30_000)
            info["value"] = obj.value(R, np.ones(len(R)))
        return RLResult(pol, [], info)

    return run


_HP = {"alpha": HParam(1e-5, 1.0, 1e-3)}
AETDICE = RLMethod("aetdice", frozenset({"mo-offline"}),
                   "offline nonlinear multi-objective RL: OptiDICE-style density ratios on the "
                   "state augmented with the accumulated return vector (ESR and SER objectives)",
                   _HP, _runner("aetdice"))  # fmt: skip
LINEAR_SCALARIZATION = RLMethod("linear-scalarization", frozenset({"mo-offline"}),
                                "the best weighted sum of the rewards, DICE on the plain state",
                                _HP, _runner("linear-scalarization"))  # fmt: skip
MARKOV_DICE = RLMethod("markov-dice", frozenset({"mo-offline"}),
                       "DICE with the nonlinear objective on the plain state (a Markov policy)",
                       _HP, _runner("markov-dice"))  # fmt: skip
