"""Constrained-RL baselines: CPO, PCPO and Lagrangian PPO (plus their unconstrained
twins TRPO and PPO), on a shared on-policy loop that LOCU and ASCPO reuse.

Methods (module-level ``RLMethod`` objects; kinds ``cmdp`` and ``statewise``):

- ``CPO`` (Achiam et al. 2017): maximize the linearized surrogate reward ``g^T x``
  subject to the linearized constraints ``B x + c <= 0`` and the trust region
  ``1/2 x^T F x <= delta``. One constraint: the analytic dual solution (``cpo_step``,
  derived below); several: the same dual minimized numerically over the ``m``
  multipliers (``cpo_step_multi``, scipy L-BFGS-B on a convex function of ``nu >= 0``).
  Infeasible linearization: the recovery step, the smallest ``F``-norm step onto the
  linearized feasible set scaled to the trust-region boundary (for one constraint
  ``-sqrt(2 delta / s) F^-1 b``, the paper's). Backtracking line search on the true KL
  and the linearized cost change (``surr_c_new - surr_c_old <= max(-c, 0)``) and, when
  not recovering, a non-decreasing surrogate reward.
- ``PCPO`` (Yang et al. 2020): the TRPO reward step ``sqrt(2 delta / q) F^-1 g``, then
  the projection onto the linearized constraint set in the KL (Fisher) norm; several
  constraints: onto the intersection, the small dual QP ``min_{mu >= 0} 1/2 mu^T S mu -
  mu^T d`` solved exactly by active-set enumeration (``nonneg_qp``). The projected step is
  backtracked only on the KL (at most ``1.5 max(delta, predicted KL)``) so a projection
  from far outside cannot blow the policy up.
- ``PPO_LAG``: clipped PPO on ``(A_r - sum_i lambda_i A_ci) / (1 + sum_i lambda_i)``
  (``A_r`` normalized, ``A_ci`` centred), each ``lambda_i >= 0`` updated once per
  iteration by projected gradient ascent ``lambda_i <- max(0, lambda_i + lambda_lr
  (J_Ci - d_i))`` with the rollout's mean episode cost ``J_Ci``.
- ``TRPO`` / ``PPO``: the same code with the constraints dropped (not in the catalogue;
  the weaker methods of the claim tests and benchmark).

Choices the papers leave open (and tested in ``tests/solvers/rl/test_rl_baselines.py``):

- Constraint value: ``J_Ci`` is the UNDISCOUNTED mean episode cost of the rollout's
  finished episodes (what ``api.evaluate`` scores and what ``limits`` budget), and the
  value used in the linearization is ``c_i = (J_Ci - d_i) / L`` with ``L`` the mean
  episode length: the surrogates are per-step means (``mean_t ratio_t A_ci,t``), so
  ``c`` is put in the same per-step units (as Safety Starter Agents does). A rollout with
  no finished episode counts its partial trajectory as one episode.
- Advantages: GAE(gamma, lam) for the reward (normalized to mean 0, std 1) and for each
  cost (centred only: its scale is what ``c`` is compared with). Cost critics are
  ``core.make_critic(critic)``, so any of its kinds can be used (hparam ``critic``: index
  into ``core.CRITIC_KINDS``, or pass the kind's name).
- ``statewise`` problems: these are the EXPECTED-cost baselines of ASCPO. They constrain
  the expected cumulative episode cost ``E[sum_t c_i,t] <= d_i`` with ``d_i =
  problem.options["episode_limits"][i]`` when given, else ``d_i = limits[i]`` (the
  instantaneous bound read as an episode budget: with 0/1 contact costs and a bound
  below 1, "on average fewer than ``limits[i]`` contact steps per episode"). They never
  look at the maximum instantaneous cost; the curve logs it so ASCPO can be compared.

The loop (``OnPolicyLoop``) and its contract, for a new method:

1. ``OnPolicyLoop(problem, seed, config)`` builds the environment, policy
   (``core.make_policy``), reward critic and cost critics; ``config`` is a ``LoopConfig``
   (``LoopConfig.from_hparams(**hparams)`` reads the shared hparams ``HPARAMS``).
2. ``loop.run(update)`` repeats ``budget // steps_per_iter`` times: ``core.collect`` a
   rollout; fit the critics (``core.fit_critic``); GAE; build an ``IterContext``; call
   ``update(ctx) -> dict`` (changes ``ctx.policy`` in place; the returned dict is added
   to the curve row); log one curve row ``{step, return, cost_<i>, max_cost_<i>, kl,
   ...}`` (``return``/``cost``: mean over the rollout's finished episodes; ``kl``: mean
   KL from the pre-update policy). Returns ``api.RLResult`` (``extra["config"]``, and
   ``extra["eval"]`` = ``api.evaluate`` when ``eval_episodes > 0``).
3. ``IterContext`` gives, all at the pre-update parameters ``x0`` (``n`` floats):
   ``adv_r (T,)``, ``adv_c (T, m)``, ``limits``/``J_c``/``c (m,)``, ``surrogates() ->
   (1 + m,)`` (surrogate reward then costs at the CURRENT parameters), ``g (n,)`` and
   ``B (m, n)`` (their gradients at ``x0``, cached), ``fvp(v) = (F + damping I) v``,
   ``solve(v) ~ F^-1 v`` (conjugate gradient), ``kl()``, ``set_params(x)``, and
   ``state`` (a dict that persists across iterations, e.g. multipliers).
4. A trust-region method is a ``step_direction(ctx) -> (x (n,), info)`` callable;
   ``trust_region_update(step_direction)`` turns it into an ``update`` that runs
   ``backtracking_line_search(ctx, x, info)``. ``info`` steers the line search:
   ``kl_limit`` (default ``kl_slack * delta``), ``check_reward`` (default True: the
   surrogate reward may not drop), ``cost_slack`` (``(m,)`` or None: the largest allowed
   rise of each surrogate cost; default ``max(-c, 0)``, None skips the cost check). Any
   other numeric entries of ``info`` land in the curve row.

What is a library's: gymnasium/MuJoCo (environments), torch autograd (gradients, the
Fisher product via ``core``), scipy L-BFGS-B (the multi-constraint CPO dual). Ours: the
loop, the analytic CPO dual, the recovery and projection steps, the line search, the
Lagrangian PPO.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import torch
from scipy.optimize import minimize
from torch.distributions import Categorical, Distribution, Independent, Normal

from optiforge.errors import ConfigError
from optiforge.solvers.rl import core
from optiforge.solvers.rl.api import ControlProblem, HParam, RLMethod, RLResult, evaluate
from optiforge.solvers.rl.envs import make_env

__all__ = [
    "CPO",
    "HPARAMS",
    "PCPO",
    "PPO",
    "PPO_LAG",
    "TRPO",
    "IterContext",
    "LoopConfig",
    "OnPolicyLoop",
    "backtracking_line_search",
    "constraint_budgets",
    "cpo_direction",
    "cpo_step",
    "cpo_step_multi",
    "nonneg_qp",
    "pcpo_direction",
    "pcpo_project",
    "ppo_lag_update",
    "trpo_direction",
    "trust_region_update",
]

_EPS = 1e-8

# ---------------------------------------------------------------------------------------
# hyperparameters and the loop


HPARAMS: dict[str, HParam] = {
    "delta": HParam(1e-3, 0.1, 0.01),  # KL radius (trust region; PPO's early-stop target)
    "gamma": HParam(0.9, 0.999, 0.99, log=False),
    "lam": HParam(0.8, 1.0, 0.95, log=False),  # GAE lambda
    "steps_per_iter": HParam(200, 20_000, 2000, kind="int"),
    "critic": HParam(0, len(core.CRITIC_KINDS) - 1, 0, log=False, kind="int"),
}
PPO_HPARAMS: dict[str, HParam] = {
    **HPARAMS,
    "lr": HParam(1e-5, 3e-3, 3e-4),
    "lambda_lr": HParam(1e-3, 1.0, 0.1),
}


@dataclass
class LoopConfig:
    """The shared loop's settings (``HPARAMS`` names plus the fixed ones)."""

    delta: float = 0.01
    gamma: float = 0.99
    lam: float = 0.95
    steps_per_iter: int = 2000
    critic: str = "mlp"
    critic_iters: int = 80
    critic_lr: float = 1e-3
    damping: float = 0.1
    cg_iters: int = 10
    kl_slack: float = 1.5
    backtrack_iters: int = 10
    backtrack_ratio: float = 0.8
    hidden: tuple[int, ...] = (64, 64)
    eval_episodes: int = 0
    constrained: bool = True
    """False drops every constraint (TRPO / PPO: the unconstrained twins)."""

    @classmethod
    def from_hparams(cls, **kw: Any) -> LoopConfig:
        crit = kw.pop("critic", "mlp")
        if not isinstance(crit, str):
            crit = core.CRITIC_KINDS[int(round(float(crit)))]
        if crit not in core.CRITIC_KINDS:
            raise ConfigError(f"unknown critic kind {crit!r} (known: {core.CRITIC_KINDS})")
        names = set(cls.__dataclass_fields__)
        unknown = set(kw) - names
        if unknown:
            raise ConfigError(f"unknown hyperparameters {sorted(unknown)}")
        if "steps_per_iter" in kw:
            kw["steps_per_iter"] = int(kw["steps_per_iter"])
        return cls(critic=crit, **kw)


def constraint_budgets(problem: ControlProblem, m: int) -> np.ndarray:
    """The episode-cost budgets ``d (m,)`` the expected-cost methods enforce (module
    docstring: ``limits`` for cmdp; for statewise ``options["episode_limits"]`` or
    ``limits``)."""
    lim: Any = problem.limits
    if problem.kind == "statewise" and "episode_limits" in problem.options:
        lim = problem.options["episode_limits"]
    elif problem.kind not in ("cmdp", "statewise"):
        raise ConfigError(f"{problem.kind!r} problems are not on-policy constrained control")
    d = np.asarray(lim, dtype=np.float64).reshape(-1)
    if d.size != m:
        raise ConfigError(f"problem {problem.name!r} gives {d.size} limits for {m} costs")
    return d


def _detach(d: Distribution) -> Distribution:
    if isinstance(d, Independent):
        base = d.base_dist
        return Independent(Normal(base.loc.detach().clone(), base.scale.detach().clone()), 1)
    assert isinstance(d, Categorical)
    return Categorical(logits=d.logits.detach().clone())


@dataclass
class IterContext:
    """One iteration's data at the pre-update parameters ``x0`` (see the module
    docstring for the contract). ``T`` steps, ``m`` constraints, ``n`` parameters."""

    iteration: int
    policy: core.Policy
    rollout: core.Rollout
    adv_r: torch.Tensor  # (T,) normalized
    adv_c: torch.Tensor  # (T, m) centred
    limits: np.ndarray  # (m,) episode-cost budgets d
    J_c: np.ndarray  # (m,) mean undiscounted episode cost
    ep_len: float  # mean episode length L
    config: LoopConfig
    state: dict[str, Any]
    x0: torch.Tensor = field(init=False)
    old_dist: Distribution = field(init=False)
    logp_old: torch.Tensor = field(init=False)
    _g: torch.Tensor | None = field(default=None, init=False)
    _B: torch.Tensor | None = field(default=None, init=False)
    _fvp: Callable[[torch.Tensor], torch.Tensor] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.x0 = core.flat_params(self.policy).clone()
        with torch.no_grad():
            d = self.policy.dist(self.rollout.obs)
            self.old_dist = _detach(d)
            self.logp_old = d.log_prob(self.rollout.act).detach()

    @property
    def m(self) -> int:
        return int(self.adv_c.shape[1])

    @property
    def delta(self) -> float:
        return self.config.delta

    @property
    def c(self) -> np.ndarray:
        """``(J_c - d) / L``, ``(m,)``: the constraint values in the surrogates' per-step
        units (> 0: violated)."""
        return (self.J_c - self.limits) / max(self.ep_len, 1.0)

    def surrogates(self) -> torch.Tensor:
        """``(1 + m,)``: ``mean_t ratio_t A_r,t`` then ``mean_t ratio_t A_ci,t`` at the
        current parameters (with graph)."""
        ratio = torch.exp(self.policy.dist(self.rollout.obs).log_prob(self.rollout.act)
                          - self.logp_old)  # fmt: skip
        r = (ratio * self.adv_r).mean().reshape(1)
        cst = (ratio[:, None] * self.adv_c).mean(0)
        return torch.cat([r, cst])

    @contextmanager
    def at_x0(self) -> Iterator[None]:
        """Evaluate at the pre-update parameters ``x0`` and then put back the current ones
        (so ``g``, ``B``, ``fvp`` and ``solve`` are at ``x0`` even mid line search)."""
        cur = core.flat_params(self.policy)
        moved = not torch.equal(cur, self.x0)
        if moved:
            self.set_params(self.x0)
        try:
            yield
        finally:
            if moved:
                self.set_params(cur)

    def _grads(self) -> None:
        with self.at_x0():
            s = self.surrogates()
            rows = [core.flat_grad(s[k], self.policy, retain_graph=True)
                    for k in range(s.shape[0])]  # fmt: skip
        self._g = rows[0].detach()
        n = self._g.numel()
        self._B = torch.stack(rows[1:]).detach() if len(rows) > 1 else torch.zeros(0, n)

    @property
    def g(self) -> torch.Tensor:
        """Gradient of the surrogate reward at ``x0``, ``(n,)``."""
        if self._g is None:
            self._grads()
        assert self._g is not None
        return self._g

    @property
    def B(self) -> torch.Tensor:
        """Gradients of the surrogate costs at ``x0``, ``(m, n)``."""
        if self._B is None:
            self._grads()
        assert self._B is not None
        return self._B

    def fvp(self, v: torch.Tensor) -> torch.Tensor:
        """``(F + damping I) v`` at ``x0`` (``F``: Fisher of the policy on the rollout)."""
        with self.at_x0():
            if self._fvp is None:
                self._fvp = core.fisher_vector_product(
                    self.policy, self.rollout.obs, damping=self.config.damping
                )
            return self._fvp(v)

    def solve(self, v: torch.Tensor) -> torch.Tensor:
        """``~ F^-1 v`` by conjugate gradient (``cg_iters``)."""
        with self.at_x0():
            return core.conjugate_gradient(self.fvp, v, iters=self.config.cg_iters)

    def kl(self) -> float:
        """Mean KL(old || current) over the rollout's states."""
        with torch.no_grad():
            return float(core.mean_kl(self.policy, self.rollout.obs, self.old_dist))

    def set_params(self, x: torch.Tensor) -> None:
        core.set_flat_params(self.policy, x)


class OnPolicyLoop:
    """Collection, critics, GAE, the per-iteration context and curve logging; ``run``
    takes the method's ``update(ctx) -> dict`` (module docstring)."""

    def __init__(self, problem: ControlProblem, seed: int, config: LoopConfig) -> None:
        if problem.kind not in ("cmdp", "statewise"):
            raise ConfigError(f"{problem.kind!r} problems need an offline method")
        self.problem, self.seed, self.config = problem, int(seed), config
        torch.manual_seed(self.seed)
        self.gen = np.random.default_rng(self.seed)
        self.tgen = torch.Generator().manual_seed(self.seed)
        self.env = make_env(problem.env)
        self.m_env = len(getattr(self.env, "cost_names", ())) or 1
        self.limits_all = constraint_budgets(problem, self.m_env)
        self.m = self.m_env if config.constrained else 0
        self.policy = core.make_policy(self.env, config.hidden)
        n_obs = int(np.prod(self.env.observation_space.shape or (1,)))
        self.v_r = core.Critic(n_obs, 1, (64, 64))
        self.v_c = core.make_critic(config.critic, n_obs, self.m_env)
        self.state: dict[str, Any] = {}

    def context(self, it: int, ro: core.Rollout) -> IterContext:
        cfg = self.config
        with torch.no_grad():
            vr = self.v_r(ro.obs)[:, 0]
            vr_n = self.v_r(ro.next_obs)[:, 0]
            vc = core.critic_values(self.v_c, ro.obs)
            vc_n = core.critic_values(self.v_c, ro.next_obs)
        adv_r, tgt_r = core.gae(ro.rew, vr, vr_n, ro.last, ro.terminal, cfg.gamma, cfg.lam)
        advs, tgts = [], []
        for i in range(self.m_env):
            a, t = core.gae(ro.costs[:, i], vc[:, i], vc_n[:, i], ro.last, ro.terminal,
                            cfg.gamma, cfg.lam)  # fmt: skip
            advs.append(a)
            tgts.append(t)
        adv_c = torch.stack(advs, 1)
        core.fit_critic(self.v_r, ro.obs, tgt_r[:, None], cfg.critic_iters, cfg.critic_lr,
                        gen=self.tgen)  # fmt: skip
        core.fit_critic(self.v_c, ro.obs, torch.stack(tgts, 1), cfg.critic_iters, cfg.critic_lr,
                        gen=self.tgen)  # fmt: skip
        adv_r = (adv_r - adv_r.mean()) / (adv_r.std() + _EPS)
        adv_c = adv_c - adv_c.mean(0, keepdim=True)
        if ro.episodes:
            J_c = ro.mean_cost()
            ep_len = float(np.mean([e.length for e in ro.episodes]))
        else:  # the partial trajectory as one episode
            J_c = ro.costs.double().sum(0).numpy()
            ep_len = float(ro.costs.shape[0])
        keep = slice(0, self.m)
        return IterContext(it, self.policy, ro, adv_r, adv_c[:, keep], self.limits_all[keep],
                           np.asarray(J_c, dtype=np.float64)[keep], ep_len, cfg, self.state)  # fmt: skip

    def run(self, update: Callable[[IterContext], Mapping[str, Any]]) -> RLResult:
        cfg = self.config
        iters = max(1, self.problem.budget // cfg.steps_per_iter)
        curve: list[dict[str, float]] = []
        step = 0
        for it in range(iters):
            ro = core.collect(self.env, self.policy, cfg.steps_per_iter, self.gen, self.m_env)
            step += cfg.steps_per_iter
            ctx = self.context(it, ro)
            info = dict(update(ctx))
            row: dict[str, float] = {"step": float(step), "return": ro.mean_return()}
            mc = ro.mean_cost()
            mx = (np.mean([e.max_cost for e in ro.episodes], axis=0) if ro.episodes
                  else ro.costs.max(0).values.double().numpy())  # fmt: skip
            for i in range(self.m_env):
                row[f"cost_{i}"] = float(mc[i]) if ro.episodes else float(ro.costs[:, i].sum())
                row[f"max_cost_{i}"] = float(mx[i])
            row["kl"] = ctx.kl()
            for k, v in info.items():
                if isinstance(v, int | float | bool | np.floating | np.integer):
                    row[k] = float(v)
            curve.append(row)
        self.env.close()
        extra: dict[str, Any] = {"config": asdict(cfg), "limits": self.limits_all.tolist()}
        if cfg.eval_episodes > 0:
            extra["eval"] = evaluate(self.problem, self.policy, episodes=cfg.eval_episodes)
        extra.update({k: v for k, v in self.state.items() if isinstance(v, list | float)})
        return RLResult(self.policy, curve, extra)


# ---------------------------------------------------------------------------------------
# trust-region update and its line search


StepDirection = Callable[[IterContext], tuple[torch.Tensor, dict[str, Any]]]


def backtracking_line_search(ctx: IterContext, x: torch.Tensor, info: Mapping[str, Any]
                             ) -> dict[str, Any]:  # fmt: skip
    """Try ``x0 + ratio^k x`` for ``k = 0..backtrack_iters-1``; accept the first with mean
    KL <= ``info["kl_limit"]``, each surrogate cost's rise <= ``info["cost_slack"]`` and
    (``info["check_reward"]``) a surrogate reward no lower than at ``x0``. None accepted:
    the parameters stay at ``x0``. Returns ``info`` plus ``accepted`` (1/0) and
    ``step_frac``."""
    cfg = ctx.config
    kl_limit = float(info.get("kl_limit", cfg.kl_slack * ctx.delta))
    check_reward = bool(info.get("check_reward", True))
    slack = info.get("cost_slack", np.maximum(-ctx.c, 0.0)) if ctx.m else None
    with torch.no_grad():
        s0 = ctx.surrogates()
    out = {k: v for k, v in info.items() if k not in ("cost_slack",)}
    if not torch.isfinite(x).all():
        return {**out, "accepted": 0.0, "step_frac": 0.0}
    frac = 1.0
    for _ in range(cfg.backtrack_iters):
        ctx.set_params(ctx.x0 + frac * x)
        with torch.no_grad():
            s = ctx.surrogates()
        kl = ctx.kl()
        ok = math.isfinite(kl) and kl <= kl_limit
        if ok and check_reward:
            ok = bool(s[0] >= s0[0])
        if ok and slack is not None:
            rise = (s[1:] - s0[1:]).double().numpy()
            ok = bool(np.all(rise <= np.asarray(slack) + 1e-12))
        if ok:
            return {**out, "accepted": 1.0, "step_frac": frac}
        frac *= cfg.backtrack_ratio
    ctx.set_params(ctx.x0)
    return {**out, "accepted": 0.0, "step_frac": 0.0}


def trust_region_update(step_direction: StepDirection,
                        line_search: Callable[[IterContext, torch.Tensor, Mapping[str, Any]],
                                              dict[str, Any]] = backtracking_line_search
                        ) -> Callable[[IterContext], dict[str, Any]]:  # fmt: skip
    """``update(ctx)``: ``x, info = step_direction(ctx)`` then ``line_search(ctx, x, info)``."""

    def update(ctx: IterContext) -> dict[str, Any]:
        x, info = step_direction(ctx)
        return line_search(ctx, x, info)

    return update


# ---------------------------------------------------------------------------------------
# the small subproblems (pure numpy; tested against cvxpy)


def nonneg_qp(S: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``argmin_{mu >= 0} 1/2 mu^T S mu - d^T mu`` for a small PSD ``S (m, m)``: exact by
    enumerating active sets (m <= 10; the smallest-objective KKT point), L-BFGS-B beyond."""
    m = d.shape[0]
    S = 0.5 * (S + S.T) + 1e-12 * np.eye(m)
    if m > 10:
        res = minimize(lambda u: (0.5 * u @ S @ u - d @ u, S @ u - d), np.zeros(m), jac=True,
                       method="L-BFGS-B", bounds=[(0, None)] * m)  # fmt: skip
        return np.asarray(res.x)
    best, best_f = np.zeros(m), 0.0
    for k in range(1, m + 1):
        for act in itertools.combinations(range(m), k):
            a = list(act)
            try:
                mu_a = np.linalg.solve(S[np.ix_(a, a)], d[a])
            except np.linalg.LinAlgError:
                mu_a = np.linalg.lstsq(S[np.ix_(a, a)], d[a], rcond=None)[0]
            if np.any(mu_a < -1e-12):
                continue
            mu = np.zeros(m)
            mu[a] = np.maximum(mu_a, 0.0)
            f = 0.5 * mu @ S @ mu - d @ mu
            if f < best_f - 1e-15:
                best, best_f = mu, f
    return best


def cpo_step(q: float, r: float, s: float, c: float, delta: float
             ) -> tuple[float, float, str]:  # fmt: skip
    """One-constraint CPO in closed form. With ``v = F^-1 g``, ``w = F^-1 b``, ``q = g.v``,
    ``r = g.w``, ``s = b.w``, the problem ``max g^T x s.t. b^T x + c <= 0, 1/2 x^T F x <=
    delta`` has the solution ``x = (v - nu w) / lam``; returns ``(lam, nu, case)``:

    - ``"trpo"``: the constraint is inactive on the whole trust region (``c < 0`` and
      ``c^2 / s >= 2 delta``) or ``b = 0``: ``nu = 0``, ``lam = sqrt(q / 2 delta)``;
    - ``"recovery"``: no point of the trust region satisfies the linearization (``c > 0``
      and ``c^2 / s > 2 delta``): the caller steps ``-sqrt(2 delta / s) w`` (here ``lam =
      inf``, ``nu = sqrt(2 delta / s)``, so ``x = -nu w / 1``: see ``cpo_direction``);
    - ``"dual"``: minimizing the Lagrangian dual ``(q - 2 nu r + nu^2 s) / (2 lam) + lam
      delta - nu c`` over ``nu >= 0`` in closed form leaves ``max_{lam > 0} -1/2 (A /
      lam + B lam) + r c / s`` where ``nu = (r + lam c) / s > 0`` (``A = q - r^2 / s``,
      ``B = 2 delta - c^2 / s``) and ``-1/2 (q / lam + 2 delta lam)`` where ``nu = 0``;
      each is maximized on its interval of ``lam``, the better taken.
    """
    if s <= _EPS:
        return math.sqrt(q / (2 * delta)), 0.0, "trpo"
    Bq = 2 * delta - c * c / s
    if c < 0 and Bq <= 0:
        return math.sqrt(q / (2 * delta)), 0.0, "trpo"
    if c > 0 and Bq < 0:
        return math.inf, math.sqrt(2 * delta / s), "recovery"
    A = max(q - r * r / s, 0.0)
    # nu = (r + lam c) / s > 0 on the interval la, nu = 0 on lb
    t = -r / c if c != 0 else 0.0
    if c < 0:
        la, lb = (0.0, max(t, 0.0)), (max(t, 0.0), math.inf)
    elif c > 0:
        la, lb = (max(t, 0.0), math.inf), (0.0, max(t, 0.0))
    else:
        la, lb = ((0.0, math.inf), (0.0, 0.0)) if r > 0 else ((0.0, 0.0), (0.0, math.inf))

    def proj(v: float, iv: tuple[float, float]) -> float:
        return min(max(v, iv[0]), iv[1])

    def f_a(lam: float) -> float:
        return -0.5 * (A / (lam + _EPS) + Bq * lam) + r * c / s

    def f_b(lam: float) -> float:
        return -0.5 * (q / (lam + _EPS) + 2 * delta * lam)

    cands = []
    if la[1] > la[0]:
        lam_a = proj(math.sqrt(A / Bq) if Bq > 0 else math.inf, la)
        if math.isfinite(lam_a):
            cands.append((f_a(lam_a), lam_a))
    if lb[1] > lb[0]:
        lam_b = proj(math.sqrt(q / (2 * delta)), lb)
        if math.isfinite(lam_b):
            cands.append((f_b(lam_b), lam_b))
    if not cands:  # degenerate (e.g. g ~ 0): stay on the feasible side
        return math.inf, 0.0, "dual"
    lam = max(cands)[1]
    nu = max(0.0, (r + lam * c) / s)
    return lam, nu, "dual"


def cpo_step_multi(q: float, r: np.ndarray, S: np.ndarray, c: np.ndarray, delta: float
                   ) -> tuple[float, np.ndarray, str]:  # fmt: skip
    """Several constraints: ``max g^T x s.t. B x + c <= 0, 1/2 x^T F x <= delta`` with
    ``r = B F^-1 g (m,)``, ``S = B F^-1 B^T (m, m)``. Feasibility first: the smallest
    ``F``-norm point of the linearized set, ``x_f = -F^-1 B^T mu`` with ``mu =
    nonneg_qp(S, c)`` (the dual of ``min 1/2 x^T F x s.t. B x + c <= 0``); if ``1/2
    x_f^T F x_f > delta``: ``("recovery", mu)`` (the caller
    scales ``x_f`` to the boundary). Else the dual ``min_{nu >= 0} sqrt(2 delta (q - 2
    nu.r + nu^T S nu)) - nu.c`` (``lam`` minimized out in closed form) by L-BFGS-B:
    ``x = F^-1 (g - B^T nu) / lam``, ``lam = sqrt((q - 2 nu.r + nu^T S nu) / 2 delta)``.
    Returns ``(lam, nu or mu, case)``."""
    S = 0.5 * (S + S.T)
    mu = nonneg_qp(S, c)
    if 0.5 * mu @ S @ mu > delta:
        return math.inf, mu, "recovery"

    def dual(nu: np.ndarray) -> tuple[float, np.ndarray]:
        quad = max(q - 2 * nu @ r + nu @ S @ nu, 1e-12)
        root = math.sqrt(2 * delta * quad)
        return root - nu @ c, (delta / root) * (2 * S @ nu - 2 * r) - c

    best = None
    for start in (np.zeros_like(c), mu):
        res = minimize(dual, start, jac=True, method="L-BFGS-B", bounds=[(0, None)] * len(c),
                       options={"ftol": 1e-14, "gtol": 1e-12, "maxiter": 500})  # fmt: skip
        if best is None or res.fun < best.fun:
            best = res
    assert best is not None
    nu = np.maximum(np.asarray(best.x), 0.0)
    lam = math.sqrt(max(q - 2 * nu @ r + nu @ S @ nu, 1e-12) / (2 * delta))
    return lam, nu, "dual"


def pcpo_project(x_half: np.ndarray, S: np.ndarray, Bx: np.ndarray, c: np.ndarray
                 ) -> np.ndarray:  # fmt: skip
    """PCPO's projection in the ``F`` norm: ``argmin_x 1/2 |x - x_half|_F^2 s.t. B x + c
    <= 0`` is ``x_half - F^-1 B^T mu`` with ``mu = nonneg_qp(S, B x_half + c)``, ``S = B
    F^-1 B^T``. Takes ``Bx = B x_half``; returns ``mu (m,)``. One constraint: ``mu =
    max(0, (b^T x_half + c) / s)``, the paper's formula."""
    return nonneg_qp(S, Bx + c)


# ---------------------------------------------------------------------------------------
# the directions


def _gram(ctx: IterContext) -> tuple[torch.Tensor, torch.Tensor, float, np.ndarray, np.ndarray]:
    """``v = F^-1 g``, ``W = F^-1 B^T (n, m)``, ``q``, ``r (m,)``, ``S (m, m)``."""
    g, B = ctx.g, ctx.B
    v = ctx.solve(g)
    W = (
        torch.stack([ctx.solve(B[i]) for i in range(ctx.m)], 1)
        if ctx.m
        else torch.zeros(g.numel(), 0)
    )
    q = float(g @ v)
    r = 0.5 * ((B @ v) + (W.T @ g)).double().numpy()
    S = (B @ W).double().numpy()
    return v, W, q, r, 0.5 * (S + S.T)


def trpo_direction(ctx: IterContext) -> tuple[torch.Tensor, dict[str, Any]]:
    """The natural-gradient step to the trust-region boundary, ``sqrt(2 delta / q) F^-1
    g`` (constraints ignored: TRPO)."""
    v = ctx.solve(ctx.g)
    q = float(ctx.g @ v)
    x = v * math.sqrt(2 * ctx.delta / max(q, _EPS))
    return x, {"cost_slack": None}


def cpo_direction(ctx: IterContext) -> tuple[torch.Tensor, dict[str, Any]]:
    """CPO's step (module docstring); ``info["case"]``: 0 trpo, 1 dual, 2 recovery."""
    if ctx.m == 0:
        return trpo_direction(ctx)
    v, W, q, r, S = _gram(ctx)
    c = ctx.c
    if ctx.m == 1:
        lam, nu, case = cpo_step(q, float(r[0]), float(S[0, 0]), float(c[0]), ctx.delta)
        if case == "recovery":
            x = -nu * W[:, 0]
        elif not math.isfinite(lam):
            x = torch.zeros_like(v)
        else:
            x = (v - nu * W[:, 0]) / lam
    else:
        lam, nu_v, case = cpo_step_multi(q, r, S, c, ctx.delta)
        if case == "recovery":
            xf = -(W @ torch.as_tensor(nu_v, dtype=W.dtype))
            xf_norm = float(nu_v @ S @ nu_v)
            x = xf * math.sqrt(2 * ctx.delta / max(xf_norm, _EPS))
        else:
            x = (v - W @ torch.as_tensor(nu_v, dtype=W.dtype)) / lam
    code = {"trpo": 0, "dual": 1, "recovery": 2}[case]
    info: dict[str, Any] = {"case": code, "check_reward": case != "recovery"}
    return x, info


def pcpo_direction(ctx: IterContext) -> tuple[torch.Tensor, dict[str, Any]]:
    """PCPO: the TRPO reward step then the ``F``-norm projection onto ``B x + c <= 0``."""
    x_half, _ = trpo_direction(ctx)
    if ctx.m == 0:
        return x_half, {"cost_slack": None}
    _, W, _, _, S = _gram(ctx)
    Bx = (ctx.B @ x_half).double().numpy()
    mu = pcpo_project(Bx, S, Bx, ctx.c)
    x = x_half - W @ torch.as_tensor(mu, dtype=W.dtype)
    pred_kl = 0.5 * float(x @ ctx.fvp(x))
    info = {"kl_limit": ctx.config.kl_slack * max(ctx.delta, pred_kl), "check_reward": False,
            "cost_slack": None, "projected": float(np.any(mu > 0)), "pred_kl": pred_kl}  # fmt: skip
    return x, info


# ---------------------------------------------------------------------------------------
# Lagrangian PPO


def ppo_lag_update(lr: float = 3e-4, lambda_lr: float = 0.1, epochs: int = 10,
                   minibatch: int = 64, clip: float = 0.2
                   ) -> Callable[[IterContext], dict[str, Any]]:  # fmt: skip
    """``update(ctx)``: first ``lambda_i <- max(0, lambda_i + lambda_lr (J_Ci - d_i))``,
    then clipped-PPO epochs on ``(A_r - lambda . A_c) / (1 + sum lambda)`` with Adam,
    stopped early when the mean KL passes ``kl_slack * delta``. Multipliers and the Adam
    state live in ``ctx.state`` (``lambda``)."""

    def update(ctx: IterContext) -> dict[str, Any]:
        st = ctx.state
        if "opt" not in st:
            st["opt"] = torch.optim.Adam(ctx.policy.parameters(), lr=lr)
            st["lambda"] = [0.0] * ctx.m
        lam = np.maximum(np.asarray(st["lambda"]) + lambda_lr * (ctx.J_c - ctx.limits), 0.0)
        st["lambda"] = lam.tolist()
        lam_t = torch.as_tensor(lam, dtype=torch.float32)
        adv = (ctx.adv_r - (ctx.adv_c @ lam_t if ctx.m else 0.0)) / (1.0 + float(lam.sum()))
        obs, act, lp0 = ctx.rollout.obs, ctx.rollout.act, ctx.logp_old
        T = obs.shape[0]
        gen = torch.Generator().manual_seed(int(ctx.iteration) + 7)
        opt: torch.optim.Optimizer = st["opt"]
        epochs_run = 0
        for _ in range(epochs):
            if ctx.kl() > ctx.config.kl_slack * ctx.delta:
                break
            perm = torch.randperm(T, generator=gen)
            for i in range(0, T, minibatch):
                idx = perm[i : i + minibatch]
                ratio = torch.exp(ctx.policy.dist(obs[idx]).log_prob(act[idx]) - lp0[idx])
                a = adv[idx]
                loss = -torch.min(ratio * a, ratio.clamp(1 - clip, 1 + clip) * a).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
            epochs_run += 1
        info: dict[str, Any] = {"epochs": epochs_run}
        for i, v in enumerate(lam):
            info[f"lambda_{i}"] = float(v)
        return info

    return update


# ---------------------------------------------------------------------------------------
# the RLMethods


def _split(kw: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: kw.pop(k) for k in keys if k in kw}


def _run_tr(direction: StepDirection, constrained: bool) -> Callable[..., RLResult]:
    def run(problem: ControlProblem, seed: int = 0, **hp: Any) -> RLResult:
        cfg = LoopConfig.from_hparams(constrained=constrained, **hp)
        return OnPolicyLoop(problem, seed, cfg).run(trust_region_update(direction))

    return run


def _run_ppo(constrained: bool) -> Callable[..., RLResult]:
    def run(problem: ControlProblem, seed: int = 0, **hp: Any) -> RLResult:
        ppo_kw = _split(hp, ("lr", "lambda_lr", "epochs", "minibatch", "clip"))
        cfg = LoopConfig.from_hparams(constrained=constrained, **hp)
        return OnPolicyLoop(problem, seed, cfg).run(ppo_lag_update(**ppo_kw))

    return run


_KINDS: frozenset[Any] = frozenset({"cmdp", "statewise"})

CPO = RLMethod(
    name="cpo",
    kinds=_KINDS,
    description="Constrained Policy Optimization (Achiam et al. 2017): a trust-region step "
    "maximizing the linearized return subject to the linearized expected episode costs, "
    "with a recovery step when infeasible",
    hparams=HPARAMS,
    run=_run_tr(cpo_direction, True),
)
PCPO = RLMethod(
    name="pcpo",
    kinds=_KINDS,
    description="Projection-based CPO (Yang et al. 2020): a TRPO reward step, then a "
    "projection onto the linearized expected-cost constraints in the KL (Fisher) norm",
    hparams=HPARAMS,
    run=_run_tr(pcpo_direction, True),
)
PPO_LAG = RLMethod(
    name="ppo-lag",
    kinds=_KINDS,
    description="Lagrangian PPO: clipped PPO on the reward advantage minus multiplier-"
    "weighted cost advantages, multipliers raised while the expected episode cost exceeds "
    "its budget",
    hparams=PPO_HPARAMS,
    run=_run_ppo(True),
)
TRPO = RLMethod(
    name="trpo",
    kinds=_KINDS,
    description="TRPO (constraints ignored): CPO's loop without the constraints",
    hparams=HPARAMS,
    run=_run_tr(trpo_direction, False),
)
PPO = RLMethod(
    name="ppo",
    kinds=_KINDS,
    description="PPO (constraints ignored): Lagrangian PPO's loop without the constraints",
    hparams={k: v for k, v in PPO_HPARAMS.items() if k != "lambda_lr"},
    run=_run_ppo(False),
)
