"""Policy-gradient machinery every method here shares (torch, CPU-sized).

- ``GaussianPolicy`` (continuous actions; state-independent log-std) and
  ``CategoricalPolicy``, both ``nn.Module`` with ``dist(obs)``.
- ``Critic``: an MLP value function; ``make_critic(kind, n_obs, n_out)`` builds the cost
  critics' architectures (``"mlp"``, ``"wide"``, ``"linear"``, ``"shared"``: one network
  with a head per constraint), so a method can be run with several.
- ``collect(env, policy, steps, gen)``: on-policy rollouts, with per-step reward, the cost
  vector ``info["costs"]`` (``envs`` convention) and episode statistics: return, cumulative
  cost per constraint, maximum instantaneous cost per constraint, length.
- ``gae``: generalized advantage estimates for any per-step signal (reward or a cost).
- ``flat_params`` / ``set_flat_params`` / ``flat_grad``, ``fisher_vector_product`` (the
  Hessian of the mean KL at the current policy, the Fisher-Rao metric) and
  ``conjugate_gradient``: what natural-gradient and trust-region methods (CPO, PCPO,
  LOCU, ASCPO) need.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from torch import nn
from torch.distributions import Categorical, Distribution, Independent, Normal

from optiforge.errors import ConfigError


def mlp(n_in: int, n_out: int, hidden: tuple[int, ...] = (64, 64), act: type[nn.Module] = nn.Tanh
        ) -> nn.Sequential:  # fmt: skip
    layers: list[nn.Module] = []
    for h in hidden:
        layers += [nn.Linear(n_in, h), act()]
        n_in = h
    layers.append(nn.Linear(n_in, n_out))
    return nn.Sequential(*layers)


class GaussianPolicy(nn.Module):
    """``a ~ N(mu(s), diag(exp(2 log_std)))``; ``mu`` an MLP, ``log_std`` a parameter."""

    def __init__(self, n_obs: int, n_act: int, hidden: tuple[int, ...] = (64, 64),
                 log_std: float = -0.5) -> None:  # fmt: skip
        super().__init__()
        self.mu = mlp(n_obs, n_act, hidden)
        self.log_std = nn.Parameter(torch.full((n_act,), float(log_std)))

    def dist(self, obs: torch.Tensor) -> Distribution:
        return Independent(Normal(self.mu(obs), self.log_std.exp()), 1)

    def act(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        return self.mu(obs) if deterministic else self.dist(obs).sample()


class CategoricalPolicy(nn.Module):
    def __init__(self, n_obs: int, n_act: int, hidden: tuple[int, ...] = (64, 64)) -> None:
        super().__init__()
        self.logits = mlp(n_obs, n_act, hidden)

    def dist(self, obs: torch.Tensor) -> Distribution:
        return Categorical(logits=self.logits(obs))

    def act(self, obs: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        return self.logits(obs).argmax(-1) if deterministic else self.dist(obs).sample()


Policy = GaussianPolicy | CategoricalPolicy


def make_policy(env: gym.Env, hidden: tuple[int, ...] = (64, 64)) -> Policy:  # type: ignore[type-arg]
    n_obs = int(np.prod(env.observation_space.shape or (1,)))
    if isinstance(env.action_space, gym.spaces.Box):
        return GaussianPolicy(n_obs, int(np.prod(env.action_space.shape)), hidden)
    if isinstance(env.action_space, gym.spaces.Discrete):
        return CategoricalPolicy(n_obs, int(env.action_space.n), hidden)
    raise ConfigError(f"unsupported action space {env.action_space}")


class Critic(nn.Module):
    """Value function(s): ``forward(obs) -> (B, n_out)``."""

    def __init__(self, n_obs: int, n_out: int = 1, hidden: tuple[int, ...] = (64, 64)) -> None:
        super().__init__()
        self.net = mlp(n_obs, n_out, hidden) if hidden else nn.Linear(n_obs, n_out)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.net(obs)
        return out


CRITIC_KINDS = ("mlp", "wide", "linear", "shared")


def make_critic(kind: str, n_obs: int, n_out: int) -> nn.ModuleList | Critic:
    """Cost critics for ``n_out`` constraints: a ``ModuleList`` of one critic each
    (``mlp`` 64x64, ``wide`` 256x256, ``linear``), or one ``Critic`` with ``n_out`` heads
    (``shared``). Either way ``critic_values(critics, obs) -> (B, n_out)``."""
    if kind == "shared":
        return Critic(n_obs, n_out)
    hidden = {"mlp": (64, 64), "wide": (256, 256), "linear": ()}.get(kind)
    if hidden is None:
        raise ConfigError(f"unknown critic kind {kind!r} (known: {', '.join(CRITIC_KINDS)})")
    return nn.ModuleList(Critic(n_obs, 1, hidden) for _ in range(n_out))


def critic_values(critics: nn.Module, obs: torch.Tensor) -> torch.Tensor:
    if isinstance(critics, nn.ModuleList):
        return torch.cat([c(obs) for c in critics], dim=1)
    out: torch.Tensor = critics(obs)
    return out


@dataclass
class Episode:
    ret: float
    cost: np.ndarray  # (m,) cumulative cost per constraint
    max_cost: np.ndarray  # (m,) largest instantaneous cost per constraint
    length: int


@dataclass
class Rollout:
    """``T`` steps: ``obs (T, n_obs)``, ``act``, ``logp (T,)``, ``rew (T,)``, ``costs (T, m)``,
    ``last (T,)`` (1 where an episode ends or is cut), ``terminal (T,)`` (1 where it ends
    in a terminal state: no bootstrap), ``next_obs (T, n_obs)``; finished episodes'
    statistics in ``episodes``."""

    obs: torch.Tensor
    act: torch.Tensor
    logp: torch.Tensor
    rew: torch.Tensor
    costs: torch.Tensor
    last: torch.Tensor
    terminal: torch.Tensor
    next_obs: torch.Tensor
    episodes: list[Episode] = field(default_factory=list)

    def mean_return(self) -> float:
        return float(np.mean([e.ret for e in self.episodes])) if self.episodes else float("nan")

    def mean_cost(self) -> np.ndarray:
        """Mean cumulative cost per constraint over finished episodes, ``(m,)``."""
        if not self.episodes:
            return np.full(self.costs.shape[1], np.nan)
        return np.mean([e.cost for e in self.episodes], axis=0)


def collect(env: gym.Env, policy: Policy, steps: int, gen: np.random.Generator,  # type: ignore[type-arg]
            n_costs: int | None = None) -> Rollout:  # fmt: skip
    """Run ``policy`` for ``steps`` steps (episodes reset with seeds drawn from ``gen``;
    an episode in progress at the end is cut and not counted in ``episodes``)."""
    m = n_costs if n_costs is not None else len(getattr(env, "cost_names", ())) or 1
    obs_l, act_l, logp_l, rew_l, cost_l, last_l, term_l, nxt_l = [], [], [], [], [], [], [], []
    episodes: list[Episode] = []
    o, _ = env.reset(seed=int(gen.integers(2**31)))
    ret, ecost, emax, n = 0.0, np.zeros(m), np.zeros(m), 0
    for t in range(steps):
        ot = torch.as_tensor(np.asarray(o, dtype=np.float32).reshape(-1))
        with torch.no_grad():
            d = policy.dist(ot)
            a = d.sample()
            lp = d.log_prob(a)
        a_np = a.numpy()
        o2, r, term, trunc, info = env.step(a_np if a_np.ndim else int(a_np))
        c = np.asarray(info.get("costs", np.zeros(m)), dtype=np.float64).reshape(-1)
        if c.shape[0] != m:
            raise ConfigError(f"environment reported {c.shape[0]} costs, expected {m}")
        obs_l.append(ot)
        act_l.append(a)
        logp_l.append(lp)
        rew_l.append(float(r))
        cost_l.append(c)
        nxt_l.append(torch.as_tensor(np.asarray(o2, dtype=np.float32).reshape(-1)))
        ret += float(r)
        ecost += c
        emax = np.maximum(emax, c)
        n += 1
        end = term or trunc or t == steps - 1
        last_l.append(float(end))
        term_l.append(float(term))
        if term or trunc:
            episodes.append(Episode(ret, ecost.copy(), emax.copy(), n))
            o, _ = env.reset(seed=int(gen.integers(2**31)))
            ret, ecost, emax, n = 0.0, np.zeros(m), np.zeros(m), 0
        else:
            o = o2
    return Rollout(
        obs=torch.stack(obs_l), act=torch.stack(act_l), logp=torch.stack(logp_l),
        rew=torch.tensor(rew_l, dtype=torch.float32),
        costs=torch.as_tensor(np.stack(cost_l), dtype=torch.float32),
        last=torch.tensor(last_l), terminal=torch.tensor(term_l), next_obs=torch.stack(nxt_l),
        episodes=episodes,
    )  # fmt: skip


def gae(signal: torch.Tensor, values: torch.Tensor, next_values: torch.Tensor,
        last: torch.Tensor, terminal: torch.Tensor, gamma: float = 0.99, lam: float = 0.95
        ) -> tuple[torch.Tensor, torch.Tensor]:  # fmt: skip
    """GAE(gamma, lambda) of a per-step ``signal (T,)`` with value estimates ``values (T,)``
    and ``next_values (T,)`` (of ``next_obs``; bootstrapped unless ``terminal``). Returns
    ``(advantages, value targets)``, both ``(T,)``."""
    delta = signal + gamma * next_values * (1.0 - terminal) - values
    adv = torch.zeros_like(signal)
    acc = torch.zeros(())
    for t in range(signal.shape[0] - 1, -1, -1):
        acc = delta[t] + gamma * lam * (1.0 - last[t]) * acc
        adv[t] = acc
    return adv, adv + values


def flat_params(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.data.reshape(-1) for p in model.parameters()])


def set_flat_params(model: nn.Module, flat: torch.Tensor) -> None:
    i = 0
    for p in model.parameters():
        n = p.numel()
        p.data.copy_(flat[i : i + n].view_as(p))
        i += n


def flat_grad(y: torch.Tensor, model: nn.Module, **kwargs: Any) -> torch.Tensor:
    grads = torch.autograd.grad(y, list(model.parameters()), allow_unused=True, **kwargs)
    return torch.cat([(torch.zeros_like(p) if g is None else g).reshape(-1)
                      for g, p in zip(grads, model.parameters(), strict=True)])  # fmt: skip


def mean_kl(policy: Policy, obs: torch.Tensor, old: Distribution) -> torch.Tensor:
    return torch.distributions.kl_divergence(old, policy.dist(obs)).mean()


def fisher_vector_product(policy: Policy, obs: torch.Tensor, damping: float = 1e-2
                          ) -> Callable[[torch.Tensor], torch.Tensor]:  # fmt: skip
    """``v -> (F + damping I) v`` with ``F`` the Hessian of the mean KL from the current
    policy (its Fisher information, the Fisher-Rao metric on the parameters)."""
    with torch.no_grad():
        d = policy.dist(obs)
        old = (Independent(Normal(d.base_dist.loc.clone(), d.base_dist.scale.clone()), 1)
               if isinstance(d, Independent) else Categorical(logits=d.logits.clone()))  # type: ignore[attr-defined]  # fmt: skip
    kl = mean_kl(policy, obs, old)
    g = flat_grad(kl, policy, create_graph=True)

    def fvp(v: torch.Tensor) -> torch.Tensor:
        return flat_grad((g * v).sum(), policy, retain_graph=True).detach() + damping * v

    return fvp


def conjugate_gradient(avp: Callable[[torch.Tensor], torch.Tensor], b: torch.Tensor,
                       iters: int = 10, tol: float = 1e-10) -> torch.Tensor:  # fmt: skip
    """Approximately solve ``A x = b`` for symmetric positive-definite ``A`` given as
    ``avp``."""
    x = torch.zeros_like(b)
    r, p = b.clone(), b.clone()
    rr = r @ r
    for _ in range(iters):
        ap = avp(p)
        alpha = rr / (p @ ap + 1e-12)
        x += alpha * p
        r -= alpha * ap
        rr_new = r @ r
        if rr_new < tol:
            break
        p = r + (rr_new / rr) * p
        rr = rr_new
    return x


def fit_critic(critic: nn.Module, obs: torch.Tensor, targets: torch.Tensor, iters: int = 40,
               lr: float = 1e-3, batch: int = 256, gen: torch.Generator | None = None) -> float:  # fmt: skip
    """Regress ``critic(obs)`` (``(T, k)``, via ``critic_values``) on ``targets (T, k)`` with
    Adam minibatches; returns the final mean squared error."""
    opt = torch.optim.Adam(critic.parameters(), lr=lr)
    n = obs.shape[0]
    for _ in range(iters):
        idx = torch.randint(n, (min(batch, n),), generator=gen)
        loss = ((critic_values(critic, obs[idx]) - targets[idx]) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
    with torch.no_grad():
        return float(((critic_values(critic, obs) - targets) ** 2).mean())
