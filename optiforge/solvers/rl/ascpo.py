"""ASCPO: absolute state-wise constrained policy optimization.

Goal (problem kind ``statewise``): maximize expected return while, for every constraint
``i``, the *maximum instantaneous cost along a trajectory* ``M_i = max_t c_i(s_t)`` stays
at or below the bound ``w_i = limits[i]`` with high probability.

Our reading of the method (the issue leaves the construction open; these are the choices):

1. **Maximum-MDP.** ``M`` is written as a sum of non-negative increments of the running
   maximum, ``D_t = max(0, c_t - u_t)`` with ``u_t = max_{k<t} c_k`` (``u_0 = 0``: costs are
   ``>= 0`` by the ``envs`` convention), so ``sum_t D_t = M`` exactly (``max_increments``).
   ``(s_t, u_t)`` is a Markov state for this cumulative signal, so ``M`` has critics and
   advantages like an undiscounted cumulative cost. The critics see ``(obs, u_t)``; the
   policy sees only ``obs`` (so ``api.evaluate`` runs it unchanged).
2. **Mean and second-moment critics.** ``V1(s, u) = E[G]`` and ``V2(s, u) = E[G^2]`` of the
   remaining increment ``G_t = sum_{k>=t} D_k``. From ``G_t = D_t + G_{t+1}``:
   ``G_t^2 = D_t^2 + 2 D_t G_{t+1} + G_{t+1}^2``, so ``V2`` is the value of the per-step
   signal ``r2_t = D_t^2 + 2 D_t G_{t+1}`` (``second_moment_signal``; ``G_{t+1}`` estimated by
   the mean's lambda-return, so that with ``lambda = 1`` the target is ``M^2`` exactly), and
   both critics are fitted to GAE(lambda) targets with ``gamma = 1`` (``moment_targets``).
   ``M`` ends with its episode: nothing is bootstrapped after a time-limit truncation,
   only where the batch cuts an episode (``episode_closed``; bootstrapping at the time
   limit, as for discounted returns, was measured to flip the second moment's sign).
3. **The bound.** ``B = E[M] + k sqrt(Var[M])`` (``upper_bound``) with ``E[M]`` and
   ``Var[M]`` estimated from the finished episodes of the current batch (unbiased under the
   current policy; the critics' start values when no episode finished). The constraint is
   ``B <= w``. **Certificate** (one-sided Chebyshev / Cantelli): for any distribution with
   finite variance, ``P(M - E[M] >= k sigma) <= 1/(1+k^2)``, so ``B <= w`` implies
   ``P(M > w) <= 1/(1+k^2)`` (``cantelli_bound``; ``k_for_confidence`` inverts it). No
   Gaussian quantile is used: on heavy tails (Student-t) a Gaussian quantile bound fails
   (tested), Cantelli does not.
4. **Gradient of the bound.** With ``mu = V1``, ``m2 = V2``, ``sigma^2 = m2 - mu^2``:
   ``grad B = (1 - k mu / sigma) grad mu + (k / (2 sigma)) grad m2``, so its policy-gradient
   advantage is the same combination of the two advantages (``bound_advantage``);
   ``sigma`` is floored at ``sigma_min`` (a policy that never touches the cost has
   ``sigma = 0``, where the square root's derivative is unbounded). When ``k mu / sigma``
   is large the two terms nearly cancel, so a critic's error that bootstrapping
   (``lambda < 1``) turns into bias no longer cancels (a lagging ``V2`` was measured at
   half of ``V1`` where 0/1 costs make them equal). The moments' advantages are
   therefore Monte-Carlo by default (``lam_m = 1``: the critics act only as baselines,
   which leaves the gradient unbiased whatever their error; hparam ``lam_m``).
5. **Policy step.** A CPO-style trust-region step on the linearized bounds, several
   constraints at once (``trust_region_step``): maximize ``g^T x`` subject to
   ``B_i + b_i^T x <= w_i`` and ``x^T F x / 2 <= delta`` (``F`` the Fisher matrix), solved
   in its ``m``-dimensional dual. While the iterate is infeasible (some ``B_i > w_i``) the
   step is taken on the monotone outer bound ``mu + k sqrt(E[M^2]) >= B`` instead
   (``outer_bound_advantage``): ``mu + k sigma`` is not monotone in ``M`` (0/1 costs:
   ``p + k sqrt(p(1-p))`` decreases towards ``p = 1``), and descending it was measured
   to drive the policy into always violating. When the linearized constraints cannot all
   be met inside the trust region, a **recovery step** minimizes the worst linearized violation,
   ``min_x max_i (B_i - w_i + b_i^T x)`` over the trust region, again through a small dual
   (over the simplex). A backtracking line search then checks the sampled KL and that the
   surrogate bound does not get worse than the linearization allowed.
6. **Which cost.** The bound uses the costs the agent observes, ``info["costs"]`` (with
   ``cost_noise`` these carry heavy-tailed Student-t noise: the certificate is then about
   the observed ``M``); ``info["costs_true"]`` (the clean indicator) is never used for
   training. Benchmarks report the empirical violation probability of both.

What is a library's and what is ours: torch autograd gives the gradients and the Fisher
products (``core``); scipy's SLSQP / L-BFGS-B solve the ``m``-dimensional duals. The
increments, the moment critics' targets, the bound, its gradient, the dual step and the
recovery step are ours; the on-policy loop (collection, reward critic, line search) is
``baselines.OnPolicyLoop``, shared with CPO / PCPO / Lagrangian PPO.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import torch
from scipy import optimize

from optiforge.errors import ConfigError
from optiforge.solvers.rl.api import ControlProblem, HParam, RLMethod, RLResult

# --------------------------------------------------------------------------- maximum-MDP


def running_max(costs: torch.Tensor, last: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Running maximum of ``costs (T, m)`` within episodes (``last (T,)`` is 1 on an
    episode's final step). Returns ``(before, after)``, both ``(T, m)``: ``before[t] =
    max(0, costs of the episode's steps < t)`` (0 at an episode's first step), ``after[t]
    = max(before[t], costs[t])``."""
    before = torch.zeros_like(costs)
    after = torch.zeros_like(costs)
    u = torch.zeros(costs.shape[1], dtype=costs.dtype)
    for t in range(costs.shape[0]):
        before[t] = u
        u = torch.maximum(u, costs[t])
        after[t] = u
        if last[t] > 0:
            u = torch.zeros_like(u)
    return before, after


def max_increments(costs: torch.Tensor, last: torch.Tensor) -> torch.Tensor:
    """``D (T, m)``: ``D_t = max(0, c_t - u_t)``, the increase of the episode's running
    maximum at step ``t``; per episode ``sum_t D_t = max_t c_t`` exactly (costs ``>= 0``)."""
    before, after = running_max(costs, last)
    return after - before


def second_moment_signal(d: torch.Tensor, cont1: torch.Tensor) -> torch.Tensor:
    """Per-step signal whose value is ``E[G^2]``: ``r2_t = D_t^2 + 2 D_t G1_{t+1}`` with
    ``cont1 (T,)`` an estimate of the remaining increment after step ``t`` (0 after a
    terminal state). All ``(T,)``."""
    return d**2 + 2.0 * d * cont1


def continuation(tgt1: torch.Tensor, v1_next: torch.Tensor, last: torch.Tensor,
                 terminal: torch.Tensor) -> torch.Tensor:  # fmt: skip
    """``G1_{t+1}`` estimates ``(T,)``: the next step's lambda-return ``tgt1[t+1]`` inside an
    episode, the critic ``v1_next`` where the batch cuts an episode, 0 after a terminal."""
    nxt = torch.cat([tgt1[1:], tgt1.new_zeros(1)])
    return torch.where(last > 0, v1_next * (1.0 - terminal), nxt)


def episode_closed(last: torch.Tensor, episode_lengths: Sequence[int]) -> torch.Tensor:
    """``(T,)``: 1 where an episode ends, by termination *or by the time limit*, 0 elsewhere
    and where the batch cuts an episode in progress (its last step, when the finished
    episodes' lengths do not add up to ``T``). ``M`` is the maximum over the episode, so
    nothing accrues after a time-limit truncation: the moments bootstrap only at a cut
    (bootstrapping at truncations, right for discounted returns, was measured to bias the
    second moment's sign on point-hazards)."""
    closed = last.clone()
    if int(sum(episode_lengths)) < last.shape[0]:
        closed[-1] = 0.0
    return closed


def moment_targets(d: torch.Tensor, v1: torch.Tensor, v1_next: torch.Tensor, v2: torch.Tensor,
                   v2_next: torch.Tensor, last: torch.Tensor, terminal: torch.Tensor,
                   lam: float = 0.95) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:  # fmt: skip
    """Undiscounted GAE(``lam``) for the increments ``d (T,)`` (mean critic ``v1``) and for
    the second-moment signal (``v2``), whose cross term uses the mean's lambda-return
    (``continuation``). Returns ``(adv1, target1, adv2, target2)``, all ``(T,)``. With
    ``lam = 1`` and no cut episode, ``target1`` at an episode's first step is its ``M`` and
    ``target2`` its ``M^2`` whatever the critics say."""
    from optiforge.solvers.rl.core import gae

    adv1, tgt1 = gae(d, v1, v1_next, last, terminal, gamma=1.0, lam=lam)
    r2 = second_moment_signal(d, continuation(tgt1, v1_next, last, terminal))
    adv2, tgt2 = gae(r2, v2, v2_next, last, terminal, gamma=1.0, lam=lam)
    return adv1, tgt1, adv2, tgt2


# --------------------------------------------------------------------------- the bound


def cantelli_bound(k: float) -> float:
    """One-sided Chebyshev: ``P(X - E X >= k sigma) <= 1 / (1 + k^2)`` for any ``X`` with
    finite variance (``k >= 0``)."""
    if k < 0:
        raise ValueError("k must be >= 0")
    return 1.0 / (1.0 + k * k)


def k_for_confidence(p: float) -> float:
    """The ``k`` whose Cantelli bound is ``p`` (``0 < p <= 1``): ``sqrt(1/p - 1)``."""
    if not 0 < p <= 1:
        raise ValueError("p must be in (0, 1]")
    return math.sqrt(1.0 / p - 1.0)


def upper_bound(mean: np.ndarray | float, var: np.ndarray | float, k: float) -> np.ndarray:
    """``mean + k sqrt(max(var, 0))`` per constraint."""
    return np.asarray(mean, dtype=np.float64) + k * np.sqrt(
        np.maximum(np.asarray(var, dtype=np.float64), 0.0)
    )


def episode_moments(maxima: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and unbiased variance of per-episode maxima ``(E, m)`` -> two ``(m,)``
    (variance 0 with a single episode)."""
    maxima = np.asarray(maxima, dtype=np.float64)
    mean = maxima.mean(axis=0)
    var = maxima.var(axis=0, ddof=1) if maxima.shape[0] > 1 else np.zeros_like(mean)
    return mean, var


def bound_advantage(adv1: torch.Tensor, adv2: torch.Tensor, mean: float, var: float, k: float,
                    sigma_min: float = 0.05) -> torch.Tensor:  # fmt: skip
    """Advantage whose policy gradient is ``grad (mu + k sigma)``: ``(1 - k mu / sigma) adv1
    + k / (2 sigma) adv2`` with ``sigma = max(sqrt(var), sigma_min)``; ``adv1``, ``adv2``
    ``(T,)`` the mean and second-moment advantages. ``k = 0`` gives ``adv1`` (mean only)."""
    if k == 0:
        return adv1
    sigma = max(math.sqrt(max(var, 0.0)), sigma_min)
    return (1.0 - k * mean / sigma) * adv1 + (k / (2.0 * sigma)) * adv2


def outer_bound_advantage(adv1: torch.Tensor, adv2: torch.Tensor, m2: float, k: float,
                          sigma_min: float = 0.05) -> torch.Tensor:  # fmt: skip
    """Advantage of the monotone bound ``mu + k sqrt(E[M^2]) >= mu + k sigma``: ``adv1 +
    k / (2 sqrt(m2)) adv2`` (``sqrt(m2)`` floored at ``sigma_min``). Both coefficients are
    positive, so descending it lowers the first two moments of ``M``; descending ``mu + k
    sigma`` need not (0/1 costs: ``p + k sqrt(p (1 - p))`` falls as ``p -> 1``)."""
    root = max(math.sqrt(max(m2, 0.0)), sigma_min)
    return adv1 + (k / (2.0 * root)) * adv2


# --------------------------------------------------------------------------- the step


@dataclass
class StepInfo:
    mode: str
    """``"unconstrained"`` (no constraint active), ``"constrained"`` (dual with active
    constraints), ``"recovery"`` (linearized constraints infeasible in the trust region)."""
    nu: np.ndarray
    """Multipliers of the linearized constraints ``(m,)`` (recovery: simplex weights)."""
    predicted: np.ndarray
    """Linearized constraint values ``c + B x`` after the step ``(m,)``."""


def trust_region_step(g: np.ndarray, b: np.ndarray, c: np.ndarray, hinv_g: np.ndarray,
                      hinv_b: np.ndarray, delta: float) -> tuple[np.ndarray, StepInfo]:  # fmt: skip
    """Solve ``max_x g^T x  s.t.  c_i + b_i^T x <= 0 (i < m),  x^T H x / 2 <= delta``.

    ``g (n,)`` the reward gradient, ``b (m, n)`` the constraint gradients, ``c (m,)`` the
    current constraint values (``bound - limit``: ``<= 0`` is feasible), ``hinv_g = H^-1 g``
    and ``hinv_b (m, n) = H^-1 b_i`` (conjugate gradient on the Fisher product). Returns
    the step ``x (n,)`` and a ``StepInfo``.

    Feasibility of the linearization: ``min_x max_i (c_i + b_i^T x)`` over the trust region
    equals ``max_{w in simplex} w^T c - sqrt(2 delta w^T S w)`` with ``S = b H^-1 b^T``;
    if that is ``> 0`` the step is the recovery step ``x = -sqrt(2 delta / w^T S w) H^-1
    b^T w`` (``w`` its maximizer). Otherwise the dual of the step is ``min_{nu >= 0}
    sqrt(2 delta (q - 2 r^T nu + nu^T S nu)) - nu^T c`` (``q = g^T H^-1 g``, ``r = b H^-1
    g``) and ``x = sqrt(2 delta / (q - 2 r^T nu + nu^T S nu)) H^-1 (g - b^T nu)``."""
    g, b, c = np.asarray(g, float), np.atleast_2d(np.asarray(b, float)), np.asarray(c, float)
    hinv_g, hinv_b = np.asarray(hinv_g, float), np.atleast_2d(np.asarray(hinv_b, float))
    m = c.shape[0]
    s = b @ hinv_b.T
    s = 0.5 * (s + s.T)
    q = float(g @ hinv_g)
    r = b @ hinv_g

    def worst(w: np.ndarray) -> float:  # maximized over the simplex
        return float(w @ c - math.sqrt(max(2.0 * delta * float(w @ s @ w), 0.0)))

    # the simplex problem is concave: SLSQP from the most violated vertex
    w0 = np.eye(m)[int(np.argmax(c))] if m else np.zeros(0)
    if m and c.max() > 0:
        res = optimize.minimize(
            lambda w: -worst(w), w0, method="SLSQP", bounds=[(0.0, 1.0)] * m,
            constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1.0}],
        )  # fmt: skip
        w = np.clip(res.x, 0.0, None)
        w = w / w.sum() if w.sum() > 0 else w0
        if worst(w0) > worst(w):
            w = w0
        if worst(w) > 0:
            direction = hinv_b.T @ w
            quad = float(w @ s @ w)
            x = -math.sqrt(2.0 * delta / max(quad, 1e-12)) * direction
            return x, StepInfo("recovery", w, c + b @ x)

    def quad_of(nu: np.ndarray) -> float:
        return max(q - 2.0 * float(r @ nu) + float(nu @ s @ nu), 1e-12)

    def natural(nu: np.ndarray) -> np.ndarray:
        return math.sqrt(2.0 * delta / quad_of(nu)) * (hinv_g - hinv_b.T @ nu)

    x0 = natural(np.zeros(m))
    if m == 0 or (c + b @ x0).max() <= 0:
        return x0, StepInfo("unconstrained", np.zeros(m), c + b @ x0)

    def dual(nu: np.ndarray) -> tuple[float, np.ndarray]:
        qq = quad_of(nu)
        val = math.sqrt(2.0 * delta * qq) - float(nu @ c)
        grad = math.sqrt(2.0 * delta / qq) * (s @ nu - r) - c
        return val, grad

    res = optimize.minimize(dual, np.ones(m), jac=True, method="L-BFGS-B",
                            bounds=[(0.0, None)] * m)  # fmt: skip
    nu = np.clip(res.x, 0.0, None)
    x = natural(nu)
    return x, StepInfo("constrained", nu, c + b @ x)


# --------------------------------------------------------------------------- the method


def _augment(obs: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """The maximum-MDP's state ``(obs, u)``: ``(T, n_obs + m)``."""
    return torch.cat([obs, u.to(obs.dtype)], dim=1)


@dataclass
class MomentCritics:
    """Per constraint a mean critic ``V1`` and a second-moment critic ``V2`` of the
    remaining running-maximum increment, on the augmented state ``(obs, u)``; each a
    ``core.make_critic(kind, n_obs + m, m)`` (so any cost-critic architecture works)."""

    v1: torch.nn.Module
    v2: torch.nn.Module

    @classmethod
    def build(cls, kind: str, n_obs: int, m: int) -> MomentCritics:
        from optiforge.solvers.rl.core import make_critic

        return cls(make_critic(kind, n_obs + m, m), make_critic(kind, n_obs + m, m))


@dataclass
class BoundEstimate:
    """One iteration's per-constraint estimates ``(m,)``: ``mean``/``var`` of ``M``, the
    bound ``mean + k sqrt(var)`` and ``adv (T, m)`` its advantage; ``outer (m,)`` the
    monotone bound ``mean + k sqrt(E[M^2])`` and ``adv_outer (T, m)`` its advantage."""

    mean: np.ndarray
    var: np.ndarray
    bound: np.ndarray
    adv: torch.Tensor
    outer: np.ndarray
    adv_outer: torch.Tensor


def estimate_bound(ro: Any, critics: MomentCritics, k: float, lam: float, sigma_min: float,
                   critic_iters: int, critic_lr: float, gen: torch.Generator | None = None
                   ) -> BoundEstimate:  # fmt: skip
    """From a ``core.Rollout``: the increments of the observed costs, the moment critics'
    advantages and targets (critics fitted after the advantages are taken, as the shared
    loop does for its critics), ``E[M]`` and ``Var[M]`` from the finished episodes (the
    critics' values at the batch's first state when none finished) and the bound's
    advantage per constraint."""
    from optiforge.solvers.rl.core import critic_values, fit_critic

    costs = ro.costs.double()
    before, after = running_max(costs, ro.last)
    d = (after - before).float()
    s, s_next = _augment(ro.obs, before), _augment(ro.next_obs, after)
    with torch.no_grad():
        v1, v1n = critic_values(critics.v1, s), critic_values(critics.v1, s_next)
        v2, v2n = critic_values(critics.v2, s), critic_values(critics.v2, s_next)
    m = costs.shape[1]
    closed = episode_closed(ro.last, [e.length for e in ro.episodes])
    a1s, t1s, a2s, t2s = [], [], [], []
    for i in range(m):
        a1, t1, a2, t2 = moment_targets(d[:, i], v1[:, i], v1n[:, i], v2[:, i], v2n[:, i],
                                        ro.last, closed, lam)  # fmt: skip
        a1s.append(a1)
        t1s.append(t1)
        a2s.append(a2)
        t2s.append(t2)
    fit_critic(critics.v1, s, torch.stack(t1s, 1), critic_iters, critic_lr, gen=gen)
    fit_critic(critics.v2, s, torch.stack(t2s, 1), critic_iters, critic_lr, gen=gen)
    if ro.episodes:
        mean, var = episode_moments(np.stack([e.max_cost for e in ro.episodes]))
    else:
        mean = v1[0].double().numpy()
        var = np.maximum(v2[0].double().numpy() - mean**2, 0.0)
    adv = torch.stack([bound_advantage(a1s[i], a2s[i], float(mean[i]), float(var[i]), k,
                                       sigma_min) for i in range(m)], 1)  # fmt: skip
    m2 = var + mean**2
    adv_outer = torch.stack([outer_bound_advantage(a1s[i], a2s[i], float(m2[i]), k, sigma_min)
                             for i in range(m)], 1)  # fmt: skip
    return BoundEstimate(mean, var, upper_bound(mean, var, k), adv,
                         mean + k * np.sqrt(np.maximum(m2, 0.0)), adv_outer)  # fmt: skip


MODES = {"unconstrained": 0, "constrained": 1, "recovery": 2}


def ascpo_direction(ctx: Any) -> tuple[torch.Tensor, dict[str, Any]]:
    """``trust_region_step`` on a ``baselines.IterContext`` whose cost surrogates are the
    bounds' (``ctx.c``: bound minus limit in per-step units); ``info["mode"]`` 0/1/2 as
    ``MODES``; the reward check is off for a recovery step."""
    g, b = ctx.g, ctx.B
    hinv_g = ctx.solve(g)
    hinv_b = torch.stack([ctx.solve(b[i]) for i in range(ctx.m)])
    x, info = trust_region_step(g.double().numpy(), b.double().numpy(), ctx.c,
                                hinv_g.double().numpy(), hinv_b.double().numpy(), ctx.delta)  # fmt: skip
    step = torch.as_tensor(x, dtype=g.dtype)
    return step, {"mode": MODES[info.mode], "check_reward": info.mode != "recovery"}


def ascpo_update(limits: Sequence[float] | np.ndarray, k: float = 2.0, sigma_min: float = 0.05,
                 critic: str = "mlp", lam_m: float = 1.0) -> Callable[[Any], dict[str, Any]]:  # fmt: skip
    """The ``update(ctx)`` that ``baselines.OnPolicyLoop.run`` calls: estimate the bounds
    (``estimate_bound``; moment critics kept in ``ctx.state``), put them in place of the
    expected-cost surrogates (a copy of the context with ``adv_c`` the centred bound
    advantages, ``J_c`` the bounds and ``limits`` the state-wise bounds ``w``), then the
    trust-region / recovery step and the shared backtracking line search."""
    from optiforge.solvers.rl.baselines import backtracking_line_search

    w = np.asarray(limits, dtype=np.float64)

    def update(ctx: Any) -> dict[str, Any]:
        ro, cfg = ctx.rollout, ctx.config
        m = int(ro.costs.shape[1])
        if "ascpo_critics" not in ctx.state:
            ctx.state["ascpo_critics"] = MomentCritics.build(critic, int(ro.obs.shape[1]), m)
        est = estimate_bound(ro, ctx.state["ascpo_critics"], k, lam_m, sigma_min,
                             cfg.critic_iters, cfg.critic_lr)  # fmt: skip
        w_ = w if w.size == m else np.full(m, float(w.reshape(-1)[0]))
        if np.all(est.bound <= w_):  # feasible: the step keeps mu + k sigma <= w
            adv, value = est.adv, est.bound
        else:  # infeasible: step on the monotone bound (see ``outer_bound_advantage``)
            adv, value = est.adv_outer, est.outer
        bctx = replace(ctx, adv_c=adv - adv.mean(0, keepdim=True), J_c=value, limits=w_)
        x, info = ascpo_direction(bctx)
        out = backtracking_line_search(bctx, x, info)
        for i in range(m):
            out[f"bound_{i}"] = float(est.bound[i])
            out[f"mean_max_{i}"] = float(est.mean[i])
            out[f"std_max_{i}"] = float(math.sqrt(max(est.var[i], 0.0)))
        return out

    return update


HPARAMS: dict[str, HParam] = {
    "k": HParam(0.0, 5.0, 2.0, log=False),  # certificate P(M > w) <= 1 / (1 + k^2)
    "sigma_min": HParam(1e-3, 0.5, 0.05),
    "delta": HParam(1e-3, 0.1, 0.01),
    "lam": HParam(0.8, 1.0, 0.95, log=False),  # GAE lambda of the reward
    "lam_m": HParam(0.8, 1.0, 1.0, log=False),  # of the moments (1: Monte-Carlo, see 4.)
    "steps_per_iter": HParam(200, 20_000, 2000, kind="int"),
    "critic": HParam(0, 3, 0, log=False, kind="int"),
}


def run(problem: ControlProblem, seed: int = 0, **hp: Any) -> RLResult:
    """Train ASCPO on a ``statewise`` problem (``limits``: the bounds ``w`` on each
    instantaneous cost). Hyperparameters: ``k``, ``sigma_min`` and the shared loop's
    (``baselines.LoopConfig``). ``extra["certificate"]`` is ``1 / (1 + k^2)``, the bound
    on ``P(M_i > w_i)`` once ``bound_i <= w_i``."""
    from optiforge.solvers.rl.baselines import LoopConfig, OnPolicyLoop

    if problem.kind != "statewise":
        raise ConfigError(f"ASCPO solves statewise problems, not {problem.kind!r}")
    k = float(hp.pop("k", 2.0))
    sigma_min = float(hp.pop("sigma_min", 0.05))
    lam_m = float(hp.pop("lam_m", 1.0))
    cfg = LoopConfig.from_hparams(**hp)
    loop = OnPolicyLoop(problem, seed, cfg)
    res = loop.run(ascpo_update(problem.limits, k, sigma_min, cfg.critic, lam_m))
    res.extra["certificate"] = cantelli_bound(k)
    res.extra["k"] = k
    return res


ASCPO = RLMethod(
    name="ascpo",
    kinds=frozenset({"statewise"}),
    description="Absolute state-wise constrained policy optimization: bounds the maximum "
    "instantaneous cost per episode by mean + k std (mean and second-moment critics of the "
    "running-maximum increments), a trust-region step on the linearized bound with a "
    "recovery step; certificate P(max cost > limit) <= 1/(1+k^2) for any finite-variance "
    "cost distribution (Cantelli)",
    hparams=HPARAMS,
    run=run,
)
