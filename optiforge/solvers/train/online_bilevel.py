"""Online bilevel optimization (OBO) with local-regret guarantees: adaptive inner
iterations, a single-loop variant, window averaging, and the prior fixed-budget methods.

At round ``t`` the learner plays ``x_t`` (in the ball ``||x|| <= R``), then the round's
problem is revealed: ``F_t(x) = f_t(x, y*_t(x))`` with ``y*_t(x) = argmin_y g_t(x, y)``,
``g_t`` ``mu``-strongly convex and ``L``-smooth in ``y``. The learner sees oracles only:
``grad_y g_t``, the Hessian action ``grad^2_yy g_t v``, the cross term
``grad^2_xy g_t v`` and ``grad f_t``. A hypergradient estimate is built by implicit
differentiation, ``h = grad_x f - grad^2_xy g v`` with ``v`` approximately solving
``grad^2_yy g v = grad_y f`` (both at the current inner iterate ``y``).

Regret (what ``local_regret`` in the claim benchmark measures, exactly):

- standard bilevel local regret ``sum_t ||grad F_t(x_t)||^2``;
- window-smoothed local regret ``sum_t ||grad F_{t,W}(x_t)||^2`` with
  ``F_{t,W} = (1/W) sum_{i<W} F_{t-i}`` and ``F_j = 0`` for ``j < 0`` (Hazan et al.'s
  time smoothing; ``W = 1`` is the standard one).

Path variation (documented choice; the stream computes both exactly for its quadratics):
``V_T = sum_t sup_{||x||<=R} |F_{t+1}(x) - F_t(x)|`` (function variation; the bound of
the adaptive method is ``O(1 + V_T)``) and the inner-minimizer variation
``H_{2,T} = sum_t sup_{||x||<=R} ||y*_{t+1}(x) - y*_t(x)||^2``.

Methods (all one loop, ``run_online_bilevel``, configured by ``OBOConfig``):

1. ``adaptive`` (``OBOConfig.adaptive()``): inner gradient steps on ``g_t`` warm-started
   from ``y_{t-1}`` until ``||grad_y g_t(x_t, y)|| <= eps_t``, ``eps_t = max(tol0 /
   (t+1), rel_tol ||h_{t-1}||)`` (an absolute part that makes the inner errors summable
   once the outer iterate settles, a relative part that saves evaluations while the
   hypergradient is large: an inexact step with relative error < 1/2 still descends),
   and at most ``cap_t = cap0 + ceil(cap_log
   log(t+2))`` gradient evaluations: the total is ``O(T log T)`` by construction and
   usually far below it, since warm starts make most rounds cheap and the iterations go
   where the problem moved (after a switch, at the start). The linear system for ``v`` is
   solved the same way (warm-started gradient steps on ``1/2 v'Hv - v'grad_y f`` with the
   same test on the residual and cap). Then one projected outer step on ``h``.
2. ``single_loop`` (``OBOConfig.single_loop()``): one inner step, one auxiliary step on
   ``v`` (warm-started: ``v_t`` continues from ``v_{t-1}``), one outer step per round.
3. ``window`` (``OBOConfig.window_averaged(W)``): one outer step per round on the average
   of the hypergradients of the last ``W`` problems *at the current* ``x_t`` (each past
   problem keeps its own warm-started ``y`` and ``v``, re-solved adaptively at ``x_t``);
   this is a gradient step on ``F_{t,W}``, which moves by ``O(1/W)`` per round, hence the
   ``O(T / W^2)`` window-smoothed regret when ``F_t`` is strongly convex (measured).

Baselines (the prior algorithms, same loop, other settings):

- ``fixed``: ``K`` warm-started inner steps and ``K`` auxiliary steps per round whatever
  happened (OAGD-style, Tarzanagh et al.'s online alternating gradient descent; with
  ``window > 1`` its windowed version);
- ``single_loop_neumann``: single loop with the plain truncated-Neumann hypergradient,
  ``v = beta sum_{q<Q} (I - beta H)^q grad_y f`` recomputed from zero each round (no warm
  start of ``v``, no averaging);
- ``window_mode="stored"``: the average of the last ``W`` *stored* hypergradients, each
  taken at its own past ``x`` (SOBOW-style; one inner solve per round).

Choices where the description is silent (ours): inner and auxiliary steps are plain
gradient steps with ``beta = 1 / L`` (``L`` = the stream's inner smoothness); the outer
step is ``alpha = 1 / L_F`` unless given; the stopping test mixes an absolute
``tol0/(t+1)`` and a relative ``rel_tol ||h_{t-1}||`` part (defaults 0.3 and 0.05, set on
the switching stream of the benchmark; ``rel_tol = 0.2`` is measurably worse there); a cap counts gradient evaluations
(including the one that passes the test). Everything is vectorized over ``S`` independent
problem instances (the leading batch dimension) and, in window mode, over the ``W``
problems of the window; counts are per instance, as if each ran alone. No library does
any part of this: it is ours, in torch.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any, Literal, Protocol

import torch
from torch import Tensor

__all__ = [
    "BilevelStream",
    "OBOConfig",
    "OBORun",
    "QuadraticBilevelStream",
    "drifting_quadratic_stream",
    "local_regret",
    "run_online_bilevel",
]


class BilevelStream(Protocol):
    """Oracles of a time-varying bilevel problem, batched over ``S`` instances.

    ``t`` is a ``(n,)`` LongTensor of rounds; ``x`` is ``n x S x dx``, ``y`` and ``v`` are
    ``n x S x dy``; each method returns the same leading shape.
    """

    horizon: int
    n_instances: int
    dim_x: int
    dim_y: int
    inner_smoothness: float
    outer_smoothness: float
    radius: float
    dtype: torch.dtype

    def grad_y_g(self, t: Tensor, x: Tensor, y: Tensor) -> Tensor:
        """``grad_y g_t(x, y)``: ``n x S x dy``."""
        ...

    def hvp_yy_g(self, t: Tensor, x: Tensor, y: Tensor, v: Tensor) -> Tensor:
        """``grad^2_yy g_t(x, y) v``: ``n x S x dy``."""
        ...

    def cross_g(self, t: Tensor, x: Tensor, y: Tensor, v: Tensor) -> Tensor:
        """``grad^2_xy g_t(x, y) v``: ``n x S x dx``."""
        ...

    def grad_f(self, t: Tensor, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        """``(grad_x f_t, grad_y f_t)``: ``n x S x dx`` and ``n x S x dy``."""
        ...


@dataclass(frozen=True)
class OBOConfig:
    """One online bilevel method (see the module docstring for the named ones)."""

    inner: Literal["adaptive", "fixed"] = "adaptive"
    inner_steps: int = 1
    """``K``: inner (and, with ``aux="fixed"``, auxiliary) gradient evaluations per round
    for the fixed-budget methods."""
    aux: Literal["adaptive", "fixed"] = "adaptive"
    aux_steps: int = 1
    warm_start_v: bool = True
    """``False``: ``v`` restarts from 0 each round (truncated Neumann series)."""
    tol0: float = 0.3
    """Adaptive stopping: ``||grad_y g|| <= eps_t`` (and the same on the residual) with
    ``eps_t = max(tol0 / (t+1), rel_tol ||h_{t-1}||)``."""
    rel_tol: float = 0.05
    """Relative part of the test: the hypergradient needs only to be accurate relative to
    its own size (an inexact gradient step with relative error < 1/2 still descends)."""
    cap0: int = 20
    cap_log: float = 10.0
    """Per-round cap on evaluations: ``cap0 + ceil(cap_log * log(t+2))``."""
    window: int = 1
    window_mode: Literal["current", "stored"] = "current"
    outer_lr: float | None = None
    """``alpha``; ``None``: ``1 / stream.outer_smoothness``."""
    inner_lr: float | None = None
    """``beta``; ``None``: ``1 / stream.inner_smoothness``."""

    @staticmethod
    def adaptive(**kw: Any) -> OBOConfig:
        return replace(OBOConfig(), **kw)

    @staticmethod
    def single_loop(window: int = 1) -> OBOConfig:
        return OBOConfig(inner="fixed", aux="fixed", inner_steps=1, aux_steps=1, window=window)

    @staticmethod
    def window_averaged(window: int, **kw: Any) -> OBOConfig:
        return replace(OBOConfig(window=window), **kw)

    @staticmethod
    def fixed(k: int, window: int = 1) -> OBOConfig:
        """OAGD-style: ``k`` warm-started inner and auxiliary steps per round."""
        return OBOConfig(inner="fixed", aux="fixed", inner_steps=k, aux_steps=k, window=window)

    @staticmethod
    def single_loop_neumann(q: int) -> OBOConfig:
        """One inner step; ``v`` from a ``q``-term Neumann series from zero each round."""
        return OBOConfig(inner="fixed", aux="fixed", inner_steps=1, aux_steps=q, warm_start_v=False)

    def cap(self, t: int) -> int:
        return self.cap0 + math.ceil(self.cap_log * math.log(t + 2))


@dataclass
class OBORun:
    """What a run played and spent.

    ``xs``: ``T x S x dx`` (``xs[t]`` played before round ``t`` is revealed);
    ``inner_evals`` / ``hvps``: ``T x S`` gradient evaluations of ``g`` in ``y`` and
    Hessian-vector products (``grad^2_yy g v``) per round and instance.
    """

    xs: Tensor
    inner_evals: Tensor
    hvps: Tensor

    def total_inner(self) -> Tensor:
        """``S``: total inner gradient evaluations per instance."""
        return self.inner_evals.sum(0)

    def total_oracle(self) -> Tensor:
        """``S``: inner gradients plus Hessian-vector products per instance."""
        return self.inner_evals.sum(0) + self.hvps.sum(0)


def _descend(
    grad: Callable[[Tensor], Tensor],
    z: Tensor,
    lr: float,
    adaptive: bool,
    tol: Tensor,
    iters: int,
) -> tuple[Tensor, Tensor]:
    """Gradient steps ``z <- z - lr grad(z)``, masked per ``(n, S)`` entry.

    Fixed: ``iters`` evaluations and steps. Adaptive: evaluate; stop an entry once
    ``||grad|| <= tol`` (``tol``: ``S``, per instance); at most ``iters`` evaluations. Returns ``(z, evals)`` with
    ``evals`` of shape ``n x S``.
    """
    evals = torch.zeros(z.shape[:-1], dtype=torch.long, device=z.device)
    alive = torch.ones(z.shape[:-1], dtype=torch.bool, device=z.device)
    for _ in range(iters):
        g = grad(z)
        evals += alive
        if adaptive:
            alive = alive & (torch.linalg.vector_norm(g, dim=-1) > tol)
            if not bool(alive.any()):
                break
        z = torch.where(alive.unsqueeze(-1), z - lr * g, z)
    return z, evals


def _inner_grad(stream: BilevelStream, t: Tensor, x: Tensor, y: Tensor) -> Tensor:
    return stream.grad_y_g(t, x, y)


def _aux_residual(
    stream: BilevelStream, t: Tensor, x: Tensor, y: Tensor, gy: Tensor, v: Tensor
) -> Tensor:
    """``grad^2_yy g v - grad_y f``: the gradient of ``1/2 v'Hv - v'grad_y f``."""
    return stream.hvp_yy_g(t, x, y, v) - gy


def _project(x: Tensor, radius: float) -> Tensor:
    norm = torch.linalg.vector_norm(x, dim=-1, keepdim=True)
    return x * torch.clamp(radius / norm.clamp_min(1e-300), max=1.0)


def run_online_bilevel(
    stream: BilevelStream,
    cfg: OBOConfig,
    x0: Tensor | None = None,
) -> OBORun:
    """Play ``cfg`` on ``stream`` for ``stream.horizon`` rounds (module docstring)."""
    T, S, dx, dy = stream.horizon, stream.n_instances, stream.dim_x, stream.dim_y
    W = cfg.window if cfg.window_mode == "current" else 1
    if cfg.window < 1:
        raise ValueError("window must be >= 1")
    f = stream.dtype
    x = torch.zeros(S, dx, dtype=f) if x0 is None else x0.to(f).clone()
    ys = torch.zeros(W, S, dy, dtype=f)
    vs = torch.zeros(W, S, dy, dtype=f)
    stored = torch.zeros(cfg.window, S, dx, dtype=f)
    xs = torch.empty(T, S, dx, dtype=f)
    inner_evals = torch.zeros(T, S, dtype=torch.long)
    hvps = torch.zeros(T, S, dtype=torch.long)
    beta = cfg.inner_lr if cfg.inner_lr is not None else 1.0 / stream.inner_smoothness
    alpha = cfg.outer_lr if cfg.outer_lr is not None else 1.0 / stream.outer_smoothness
    h_norm = torch.zeros(S, dtype=stream.dtype)
    for t in range(T):
        xs[t] = x
        # the new problem enters slot 0, warm-started from the newest state (problem t-1)
        ys = torch.roll(ys, 1, 0)
        vs = torch.roll(vs, 1, 0)
        if W > 1:
            ys[0] = ys[1]
            vs[0] = vs[1]
        if not cfg.warm_start_v:
            vs = torch.zeros_like(vs)
        n = min(t + 1, W)
        idx = t - torch.arange(n)
        X = x.expand(n, S, dx)
        tol = torch.clamp(cfg.rel_tol * h_norm, min=cfg.tol0 / (t + 1))
        cap = cfg.cap(t)
        y, e_in = _descend(
            partial(_inner_grad, stream, idx, X),
            ys[:n],
            beta,
            cfg.inner == "adaptive",
            tol,
            cap if cfg.inner == "adaptive" else cfg.inner_steps,
        )
        gx, gy = stream.grad_f(idx, X, y)
        v, e_aux = _descend(
            partial(_aux_residual, stream, idx, X, y, gy),
            vs[:n],
            beta,
            cfg.aux == "adaptive",
            tol,
            cap if cfg.aux == "adaptive" else cfg.aux_steps,
        )
        ys = torch.cat([y, ys[n:]])
        vs = torch.cat([v, vs[n:]])
        h = gx - stream.cross_g(idx, X, y, v)  # n x S x dx
        inner_evals[t] = e_in.sum(0)
        hvps[t] = e_aux.sum(0)
        if cfg.window_mode == "current":
            # F_{t,W} = (1/W) sum_{i<W} F_{t-i}, F_j = 0 for j < 0: divide by W, not n
            hbar = h.sum(0) / cfg.window
        else:
            stored = torch.roll(stored, 1, 0)
            stored[0] = h[0]
            hbar = stored.sum(0) / cfg.window
        h_norm = torch.linalg.vector_norm(hbar, dim=-1)
        x = _project(x - alpha * hbar, stream.radius)
    return OBORun(xs=xs, inner_evals=inner_evals, hvps=hvps)


# -- the synthetic time-varying quadratic bilevel problem -------------------------------------


@dataclass
class QuadraticBilevelStream:
    """``g_t(x, y) = 1/2 y'A_t y - y'B_t x``, ``f_t(x, y) = 1/2 ||y - c_t||^2 +
    rho/2 ||x||^2``; ``y*_t(x) = M_t x`` with ``M_t = A_t^{-1} B_t``.

    ``A``: ``T x S x dy x dy`` (SPD, eigenvalues in ``[mu, L]``), ``B``: ``T x S x dy x dx``,
    ``c``: ``T x S x dy``.
    """

    A: Tensor
    B: Tensor
    c: Tensor
    rho: float
    radius: float
    inner_smoothness: float
    outer_smoothness: float

    def __post_init__(self) -> None:
        self.horizon, self.n_instances, self.dim_y, self.dim_x = self.B.shape
        self.dtype = self.A.dtype
        self.M = torch.linalg.solve(self.A, self.B)

    def grad_y_g(self, t: Tensor, x: Tensor, y: Tensor) -> Tensor:
        return _mv(self.A[t], y) - _mv(self.B[t], x)

    def hvp_yy_g(self, t: Tensor, x: Tensor, y: Tensor, v: Tensor) -> Tensor:
        return _mv(self.A[t], v)

    def cross_g(self, t: Tensor, x: Tensor, y: Tensor, v: Tensor) -> Tensor:
        return -_mv(self.B[t].transpose(-1, -2), v)

    def grad_f(self, t: Tensor, x: Tensor, y: Tensor) -> tuple[Tensor, Tensor]:
        return self.rho * x, y - self.c[t]

    def hypergradient(self, t: Tensor, x: Tensor) -> Tensor:
        """Exact ``grad F_t(x) = rho x + M_t'(M_t x - c_t)``: ``n x S x dx``."""
        M = self.M[t]
        return self.rho * x + _mv(M.transpose(-1, -2), _mv(M, x) - self.c[t])

    def variation(self) -> tuple[Tensor, Tensor]:
        """``(V_T, H_{2,T})`` per instance (``S`` each), exactly (module docstring)."""
        M0, M1 = self.M[:-1], self.M[1:]
        c0, c1 = self.c[:-1], self.c[1:]
        # F_{t+1} - F_t = 1/2 x'Hx + g'x + b on the ball (the rho terms cancel)
        H = M1.transpose(-1, -2) @ M1 - M0.transpose(-1, -2) @ M0
        g = -(_mv(M1.transpose(-1, -2), c1) - _mv(M0.transpose(-1, -2), c0))
        b = 0.5 * ((c1 * c1).sum(-1) - (c0 * c0).sum(-1))
        up = -_min_quadratic_on_ball(-H, -g, self.radius) + b
        down = _min_quadratic_on_ball(H, g, self.radius) + b
        v_t = torch.maximum(up.abs(), down.abs()).sum(0)
        h_2 = (torch.linalg.matrix_norm(M1 - M0, ord=2) * self.radius).pow(2).sum(0)
        return v_t, h_2


def _mv(A: Tensor, x: Tensor) -> Tensor:
    return (A @ x.unsqueeze(-1)).squeeze(-1)


def _min_quadratic_on_ball(H: Tensor, g: Tensor, radius: float, iters: int = 100) -> Tensor:
    """``min_{||x|| <= R} 1/2 x'Hx + g'x`` (trust-region subproblem, exact up to bisection
    on the multiplier; hard case included). ``H``: ``... x d x d``, ``g``: ``... x d``."""
    lam_h, Q = torch.linalg.eigh(H)
    gh = _mv(Q.transpose(-1, -2), g)
    lo = torch.clamp(-lam_h[..., 0], min=0.0)
    hi = lo + torch.linalg.vector_norm(g, dim=-1) / radius + 1.0

    def norm2(lam: Tensor) -> Tensor:
        d = (lam_h + lam.unsqueeze(-1)).clamp_min(1e-300)
        return (gh / d).pow(2).sum(-1)

    interior = (lam_h[..., 0] > 0) & (norm2(torch.zeros_like(lo)) <= radius**2)
    a, b = lo, hi
    for _ in range(iters):
        mid = 0.5 * (a + b)
        big = norm2(mid) > radius**2
        a = torch.where(big, mid, a)
        b = torch.where(big, b, mid)
    lam = torch.where(interior, torch.zeros_like(lo), b)
    xh = -gh / (lam_h + lam.unsqueeze(-1)).clamp_min(1e-300)
    val = (0.5 * lam_h * xh * xh + gh * xh).sum(-1)
    # hard case: the rest of the radius along the bottom eigenvector, value - lam/2 deficit
    deficit = (radius**2 - (xh * xh).sum(-1)).clamp_min(0.0)
    return val - 0.5 * lam * deficit


def _random_rotation_step(gen: torch.Generator, S: int, d: int, angle: float) -> Tensor:
    """``S x d x d``: ``exp(K)`` for a random skew ``K`` with ``||K||_F = angle``."""
    K = torch.randn(S, d, d, generator=gen, dtype=torch.float64)
    K = K - K.transpose(-1, -2)
    K = K * (angle / torch.linalg.matrix_norm(K).clamp_min(1e-12)).view(S, 1, 1)
    return torch.linalg.matrix_exp(K)


def drifting_quadratic_stream(
    horizon: int,
    n_instances: int,
    *,
    dim_x: int = 6,
    dim_y: int = 12,
    kappa: float = 20.0,
    drift: float = 0.0,
    switch_every: int = 0,
    switch_size: float = 1.0,
    noise: float = 0.0,
    reversion: float = 0.02,
    rho: float = 0.2,
    radius: float = 5.0,
    seed: int = 0,
) -> QuadraticBilevelStream:
    """A ``QuadraticBilevelStream`` whose problems move by a controllable amount.

    Per round: ``A_t = U_t diag(lam) U_t'`` (``lam`` log-spaced in ``[1, kappa]``) with
    ``U_t`` rotated by angle ``drift``; ``B_t``, ``c_t`` take mean-reverting random-walk
    steps of norm ``drift`` (reversion rate ``reversion`` towards their centres); every
    ``switch_every`` rounds (if > 0) ``A`` gets a fresh rotation and the centres of ``B``,
    ``c`` jump to ``sqrt(1 - s^2) old + s fresh`` (``s = switch_size <= 1``; 1: a fresh
    draw; the centres' distribution stays the same, so every switch is alike), and ``c_t`` gets i.i.d. Gaussian noise of norm ~``noise`` (the
    window experiment's stochasticity). ``V_T`` grows with ``drift`` and the switches.
    """
    gen = torch.Generator().manual_seed(seed)
    T, S, dx, dy = horizon, n_instances, dim_x, dim_y
    f64 = torch.float64
    lam = torch.logspace(0, math.log10(kappa), dy, dtype=f64)

    def draw_B() -> Tensor:
        return torch.randn(S, dy, dx, generator=gen, dtype=f64) / math.sqrt(dx)

    def draw_c() -> Tensor:
        return torch.randn(S, dy, generator=gen, dtype=f64)

    U = torch.linalg.qr(torch.randn(S, dy, dy, generator=gen, dtype=f64))[0]
    Bc, cc = draw_B(), draw_c()
    Bz, cz = torch.zeros_like(Bc), torch.zeros_like(cc)
    As, Bs, cs = [], [], []
    for t in range(T):
        if switch_every > 0 and t > 0 and t % switch_every == 0:
            U = torch.linalg.qr(torch.randn(S, dy, dy, generator=gen, dtype=f64))[0]
            keep = math.sqrt(max(1.0 - switch_size**2, 0.0))  # stationary: sizes do not grow
            Bc = keep * Bc + switch_size * draw_B()
            cc = keep * cc + switch_size * draw_c()
        As.append(U @ torch.diag_embed(lam.expand(S, dy)) @ U.transpose(-1, -2))
        Bs.append(Bc + Bz)
        eps = torch.randn(S, dy, generator=gen, dtype=f64) / math.sqrt(dy)
        cs.append(cc + cz + noise * eps)
        if drift > 0:
            U = U @ _random_rotation_step(gen, S, dy, drift)
            nB = torch.randn(S, dy, dx, generator=gen, dtype=f64)
            nB = nB * (drift / torch.linalg.matrix_norm(nB)).view(S, 1, 1)
            nc = torch.randn(S, dy, generator=gen, dtype=f64)
            nc = nc * (drift / torch.linalg.vector_norm(nc, dim=-1, keepdim=True))
            Bz = (1 - reversion) * Bz + nB
            cz = (1 - reversion) * cz + nc
    A = torch.stack(As)
    B = torch.stack(Bs)
    M = torch.linalg.solve(A, B)
    l_f = rho + float(torch.linalg.matrix_norm(M, ord=2).max()) ** 2
    return QuadraticBilevelStream(
        A=A,
        B=B,
        c=torch.stack(cs),
        rho=rho,
        radius=radius,
        inner_smoothness=float(kappa),
        outer_smoothness=l_f,
    )


def local_regret(stream: QuadraticBilevelStream, xs: Tensor, window: int = 1) -> Tensor:
    """``sum_t ||grad F_{t,W}(x_t)||^2`` per instance (``S``), ``F_j = 0`` for ``j < 0``."""
    T = xs.shape[0]
    total = torch.zeros_like(xs)
    for i in range(window):
        if i >= T:
            break
        t = torch.arange(i, T)
        total[i:] += stream.hypergradient(t - i, xs[i:])
    return (total / window).pow(2).sum(-1).sum(0)
