"""SGD and stochastic mirror descent (SMD) under heavy-tailed gradient noise, clipped SGD,
and noise generators with an exactly known p-th moment.

The setting: unbiased stochastic gradients ``g = grad f(x) + xi`` whose noise has a finite
p-th moment only, ``E|xi|^p <= sigma^p`` with ``p`` in ``(1, 2]`` (for ``p < 2`` the
variance may be infinite). The update rules are the textbook ones, unchanged; what the
heavy tail changes is the step-size schedule and the rate. Everything here is ours (torch
supplies tensors and the ``Optimizer`` base class); written from the issue's description.

Mirror maps (``MirrorDescent(map=...)``; a parameter of shape ``(..., d)`` is a batch of
independent ``d``-vectors, the map acts along the last dimension, so ``R`` independent
runs of a ``d``-dimensional problem are one ``(R, d)`` parameter):

- ``euclidean``: ``psi = 1/2 ||x||_2^2``, i.e. plain SGD.
- ``entropic``: negative entropy on the probability simplex (exponentiated gradient);
  the parameter must lie on the simplex along its last dimension and stays there.
- ``pnorm``: ``psi = 1/2 ||x||_q^2`` on R^d (the classical p-norm algorithm), unconstrained.
- ``power``: ``psi = 1/q sum_i |x_i|^q`` on R^d, unconstrained; with ``q = p/(p-1)`` it is
  q-uniformly convex, and its conjugate ``1/p sum |theta_i|^p`` has a (p-1)-Hoelder
  gradient. This is the map the heavy-tail analysis needs on an unbounded domain (below).

Every map is run in the dual: the optimizer keeps ``theta = grad psi(x)`` as state (the
source of truth), does ``theta <- theta - eta_t g`` and writes ``x = grad psi*(theta)``
into the parameter (on the simplex ``x = softmax(theta)``, which is exponentiated
gradient exactly, without renormalisation drift). It also keeps the eta-weighted average
``xbar = sum_t eta_t x_t / sum_t eta_t`` of the points where gradients were taken
(``averaged(param)``), the iterate the convex guarantees are about.

Step sizes (``schedule``): ``"horizon"``: ``eta = lr * T^(-1/p)`` for a known horizon
``T`` (constant, tuned to T); ``"decreasing"``: ``eta_t = lr * t^(-1/p)`` (anytime);
``"constant"``: ``eta = lr`` (not scaled with T: the broken variant the claim test
rejects). ``p`` here is the tail exponent the schedule is tuned for.

Derivations (ours; they fix the schedules and the exponents the benchmark fits):

Convex, G-Lipschitz ``f``, mirror map ``psi`` with ``D = D_psi(x*, x_1)``. The one-step
mirror-descent identity gives ``eta_t <g_t, x_t - x*> = D_psi(x*,x_t) - D_psi(x*,x_t+1) +
D_psi*(theta_t - eta_t g_t, theta_t)``. Summing, taking expectations (the noise is
unbiased) and using convexity: ``E f(xbar_T) - f* <= (D + sum_t E D_psi*(...)) /
sum_t eta_t``. The remainder ``D_psi*`` is where the heavy tail enters:

- ``power`` map with ``q = p/(p-1)``: ``D_psi*(theta + delta, theta) <= 2^(2-p)/p *
  sum_i |delta_i|^p`` (the derivative of ``|u|^p/p`` is (p-1)-Hoelder with constant
  ``2^(2-p)``), so the remainder is ``<= C eta^p E||g||_p^p``, finite, on all of R^d.
  With a constant ``eta``: ``E f(xbar) - f* <= D/(eta T) + C eta^(p-1) E||g||_p^p``,
  minimised at ``eta ~ T^(-1/p)``, giving ``O(T^(-(p-1)/p))`` (the minimax rate for
  p-th-moment noise). With ``eta_t = lr t^(-1/p)``: ``sum eta_t ~ T^(1-1/p)``,
  ``sum eta_t^p ~ log T``, the same rate up to ``log T``.
- ``entropic`` on the simplex (bounded): the remainder is also ``<= eta_t <g_t, x_t -
  x_t+1> <= 2 eta_t ||g_t||_inf``, so it is ``<= min(eta^2 ||g||_inf^2 / 2, 2 eta
  ||g||_inf) <= 2^(2-p) eta^p ||g||_inf^p``: same schedule, same ``T^(-(p-1)/p)``.
- ``euclidean`` (or ``pnorm``) on an UNBOUNDED domain: the remainder is ``eta^2
  ||g||^2 / 2`` (2-homogeneous conjugate), whose mean is infinite when ``p < 2``; the
  bounded-domain trick (the projection caps a jump at the diameter) is not available.
  A heuristic we checked numerically: on ``f = G|x|`` a noise jump of size ``J = eta |xi|``
  costs ``~ J^2 / (2 eta G)`` in ``sum_t f(x_t)``; with jumps of tail index ``alpha``
  and the horizon capping ``J <= eta G T`` the mean error is ``~ 1/(eta T) + eta
  T^(2-alpha)``, i.e. ``T^(2-alpha-1/p)`` under the ``T^(-1/p)`` schedule: slower than
  ``T^(-(p-1)/p)`` whenever ``alpha < 3 - 2/p``. The median (typical run) still decays at
  ``T^(-(p-1)/p)``. Measured (``benchmarks/heavy_tail_claims.py``, p = 1.25, T = 4096,
  4000 runs): mean error 1.40 for SGD vs 0.26 for the power map, and the 99.9% quantile /
  median of the runs' errors 559 vs 28 (1000 runs); the fitted slope of SGD's mean is
  too noisy at this size to separate from ``-(p-1)/p``. Clipping (``ClippedSGD``,
  threshold ``~ T^(1/p)``) caps the jumps at ``eta * tau = O(1)`` and restores the rate
  in expectation.

Nonconvex, L-smooth and G-Lipschitz ``f`` (``F* = inf f``), plain SGD: the descent lemma's
remainder is ``f(x - eta g) - f(x) - <grad f(x), -eta g> <= min(L eta^2 ||g||^2 / 2,
2 G eta ||g||) <= c eta^p ||g||^p``, so ``(1/T) sum_t E||grad f(x_t)||^2 <= (f(x_1) - F*)
/ (eta T) + c' eta^(p-1)``; ``eta ~ T^(-1/p)`` gives ``E||grad f||^2 = O(T^(-(p-1)/p))``,
i.e. a gradient-norm rate ``T^(-(p-1)/(2p))``. This is NOT the ``T^(-(p-1)/(3p-2))`` of
the issue's brief: that exponent is the minimax rate, which our derivation reaches only
with clipping: clipped SGD with threshold ``tau`` has bias ``<= sigma^p / tau^(p-1)`` and
second moment ``<= sigma^p tau^(2-p)``; balancing ``eta ~ T^(-p/(3p-2))`` and ``tau ~
T^(1/(3p-2))`` gives ``||grad f|| ~ T^(-(p-1)/(3p-2))``. Our plain-SGD exponent agrees with
the rate and the SGD-specific lower bound (polynomial step sizes) in Huebler, Lan and
Fatkhullin, "Can SGD handle heavy-tailed noise?" (2025). Both coincide at ``p = 2``
(``T^(-1/4)``). ``predicted_exponent`` and ``schedule_exponents`` hold these numbers.

Noise (``heavy_noise``): i.i.d. coordinates, either a symmetrised Lomax (Pareto II)
``s * scale * (U^(-1/alpha) - 1)`` with a random sign ``s``, ``P(|xi| > u) = (1 + u /
scale)^(-alpha)``, or a Student-t with ``alpha`` degrees of freedom. Both have tail index
``alpha``: ``E|xi|^r`` is finite iff ``r < alpha``. ``noise_for(p)`` picks ``alpha = p +
0.1`` (the p-th moment finite, the variance infinite for ``p < 1.9``) and scales the noise
so that ``E|xi_i|^p`` equals ``sigma^p`` exactly (closed forms in ``abs_moment``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, Literal

import torch
from torch import nn

from optiforge.solvers.train.api import HParam, ModelProblem, TrainMethod, TrainResult

MapName = Literal["euclidean", "entropic", "pnorm", "power"]
Schedule = Literal["horizon", "decreasing", "constant"]
Setting = Literal["convex", "nonconvex"]
NoiseKind = Literal["pareto", "student"]

# -- rates and schedules ------------------------------------------------------------------


def predicted_exponent(p: float, setting: Setting, clipped: bool = False) -> float:
    """The exponent ``e`` of the rate ``T^e`` our derivation gives (module docstring):
    convex: ``E f(xbar_T) - f*``; nonconvex: ``sqrt((1/T) sum_t E||grad f(x_t)||^2)``."""
    _check_p(p)
    if setting == "convex":
        return -(p - 1) / p
    return -(p - 1) / (3 * p - 2) if clipped else -(p - 1) / (2 * p)


def schedule_exponents(p: float, setting: Setting, clipped: bool = False) -> tuple[float, float]:
    """``(a, b)`` with step ``eta = lr T^(-a)`` and clipping threshold ``tau = clip T^b``
    (``b = 0`` without clipping) for horizon ``T``."""
    _check_p(p)
    if setting == "nonconvex" and clipped:
        return p / (3 * p - 2), 1 / (3 * p - 2)
    return 1 / p, (1 / p if clipped else 0.0)


def step_size(lr: float, p: float, schedule: Schedule, t: int, horizon: int | None) -> float:
    """``eta_t`` of the schedules in the module docstring (``t`` counts from 1)."""
    if schedule == "constant":
        return lr
    if schedule == "decreasing":
        return lr * t ** (-1.0 / p)
    if horizon is None:
        raise ValueError("schedule 'horizon' needs horizon=T")
    return lr * horizon ** (-1.0 / p)


def _check_p(p: float) -> None:
    if not 1.0 < p <= 2.0:
        raise ValueError(f"p must be in (1, 2], got {p}")


# -- mirror maps (act along the last dimension) ---------------------------------------------


def _grad_half_norm_sq(x: torch.Tensor, q: float) -> torch.Tensor:
    """``grad (1/2 ||x||_q^2) = sign(x) |x|^(q-1) / ||x||_q^(q-2)``, rows along the last dim."""
    a = x.abs()
    norm = a.pow(q).sum(-1, keepdim=True).pow(1.0 / q)
    safe = torch.where(norm > 0, norm, torch.ones_like(norm))
    return torch.sign(x) * a.pow(q - 1) * safe.pow(2.0 - q)


def to_dual(x: torch.Tensor, map: MapName, q: float) -> torch.Tensor:
    """``theta = grad psi(x)``."""
    if map == "euclidean":
        return x.clone()
    if map == "entropic":
        return x.clamp_min(torch.finfo(x.dtype).tiny).log()
    if map == "pnorm":
        return _grad_half_norm_sq(x, q)
    return torch.sign(x) * x.abs().pow(q - 1)


def to_primal(theta: torch.Tensor, map: MapName, q: float) -> torch.Tensor:
    """``x = grad psi*(theta)`` (the inverse of ``to_dual``)."""
    if map == "euclidean":
        return theta.clone()
    if map == "entropic":
        return torch.softmax(theta, dim=-1)
    if map == "pnorm":
        return _grad_half_norm_sq(theta, q / (q - 1))
    return torch.sign(theta) * theta.abs().pow(1.0 / (q - 1))


class MirrorDescent(torch.optim.Optimizer):
    """Stochastic mirror descent ``theta <- theta - eta_t g``, ``x = grad psi*(theta)``.

    Args: ``map`` (see module docstring), ``q`` the norm of ``pnorm``/``power`` (default
    ``p/(p-1)``, the heavy-tail choice; must be > 1), ``lr`` the base step, ``p`` the tail
    exponent the schedule is tuned for, ``schedule`` and ``horizon`` as in ``step_size``.
    Parameters of any shape ``(..., d)``; for ``entropic`` each row along the last
    dimension must be a probability vector.
    """

    def __init__(
        self,
        params: Iterable[torch.Tensor] | Iterable[dict[str, Any]],
        lr: float,
        *,
        map: MapName = "euclidean",
        p: float = 2.0,
        q: float | None = None,
        schedule: Schedule = "horizon",
        horizon: int | None = None,
    ) -> None:
        _check_p(p)
        q = (p / (p - 1) if p < 2 else 2.0) if q is None else q
        if map not in ("euclidean", "entropic", "pnorm", "power"):
            raise ValueError(f"unknown mirror map {map!r}")
        if q <= 1:
            raise ValueError(f"q must be > 1, got {q}")
        if schedule == "horizon" and horizon is None:
            raise ValueError("schedule 'horizon' needs horizon=T")
        defaults = {"lr": lr, "map": map, "p": p, "q": q, "schedule": schedule, "horizon": horizon}
        super().__init__(params, defaults)
        for group in self.param_groups:
            if group["map"] == "entropic":
                for x in group["params"]:
                    s = x.detach().sum(-1)
                    if (x.detach() < 0).any() or not torch.allclose(
                        s, torch.ones_like(s), atol=1e-5
                    ):
                        raise ValueError(
                            "entropic map: each row (last dim) must lie on the simplex"
                        )

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for x in group["params"]:
                if x.grad is None:
                    continue
                state = self.state[x]
                if not state:
                    state["t"] = 0
                    state["theta"] = to_dual(x.detach(), group["map"], group["q"])
                    state["avg"] = torch.zeros_like(x)
                    state["weight"] = 0.0
                state["t"] += 1
                eta = step_size(
                    group["lr"], group["p"], group["schedule"], state["t"], group["horizon"]
                )
                # the averaged iterate weighs the point where the gradient was taken
                state["weight"] += eta
                state["avg"].add_(x.detach() - state["avg"], alpha=eta / state["weight"])
                state["theta"].add_(x.grad, alpha=-eta)
                x.copy_(to_primal(state["theta"], group["map"], group["q"]))
        return loss

    def averaged(self, x: torch.Tensor) -> torch.Tensor:
        """``xbar = sum_t eta_t x_t / sum_t eta_t`` of ``x`` (``x`` itself before any step)."""
        state = self.state.get(x)
        return x.detach().clone() if not state else state["avg"].clone()


class ClippedSGD(torch.optim.Optimizer):
    """SGD on the norm-clipped gradient ``g * min(1, tau / ||g||)``.

    ``lr`` and ``clip`` are the step and threshold at the horizon: ``eta = lr T^(-a)``,
    ``tau = clip T^b`` with ``(a, b) = schedule_exponents(p, setting, clipped=True)`` when
    ``horizon=T`` is given, else ``eta = lr``, ``tau = clip`` (a tuned constant pair).
    ``per_row``: the norm is taken along the last dimension of each parameter (a batch of
    independent runs); otherwise over all parameters of the group together (the usual
    global-norm clipping of a model). Keeps the eta-weighted average like ``MirrorDescent``.
    """

    def __init__(
        self,
        params: Iterable[torch.Tensor] | Iterable[dict[str, Any]],
        lr: float,
        clip: float,
        *,
        p: float = 2.0,
        setting: Setting = "nonconvex",
        horizon: int | None = None,
        per_row: bool = False,
    ) -> None:
        _check_p(p)
        if clip <= 0:
            raise ValueError(f"clip must be > 0, got {clip}")
        a, b = schedule_exponents(p, setting, clipped=True)
        eta, tau = (lr, clip) if horizon is None else (lr * horizon ** (-a), clip * horizon**b)
        super().__init__(params, {"lr": eta, "clip": tau, "per_row": per_row})

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            ps = [x for x in group["params"] if x.grad is not None]
            if not ps:
                continue
            eta, tau = group["lr"], group["clip"]
            if group["per_row"]:
                scales = [
                    (tau / x.grad.norm(dim=-1, keepdim=True).clamp_min(1e-30)).clamp(max=1.0)
                    for x in ps
                ]
            else:
                total = torch.sqrt(sum((x.grad.double() ** 2).sum() for x in ps))  # type: ignore[arg-type]
                s = float(min(1.0, tau / max(float(total), 1e-30)))
                scales = [torch.full((), s, dtype=x.dtype) for x in ps]
            for x, s in zip(ps, scales, strict=True):
                state = self.state[x]
                if not state:
                    state["avg"], state["weight"] = torch.zeros_like(x), 0.0
                state["weight"] += eta
                state["avg"].add_(x.detach() - state["avg"], alpha=eta / state["weight"])
                x.add_(x.grad * s, alpha=-eta)
        return loss

    def averaged(self, x: torch.Tensor) -> torch.Tensor:
        state = self.state.get(x)
        return x.detach().clone() if not state else state["avg"].clone()


# -- heavy-tailed noise ---------------------------------------------------------------------


def abs_moment(kind: NoiseKind, alpha: float, r: float) -> float:
    """``E|xi|^r`` of the unit-scale noise (``inf`` when ``r >= alpha``).

    pareto (symmetrised Lomax): ``Gamma(r+1) Gamma(alpha-r) / Gamma(alpha)``;
    student (t, ``alpha`` d.o.f.): ``alpha^(r/2) Gamma((r+1)/2) Gamma((alpha-r)/2) /
    (sqrt(pi) Gamma(alpha/2))``.
    """
    if r >= alpha:
        return math.inf
    if kind == "pareto":
        return math.exp(math.lgamma(r + 1) + math.lgamma(alpha - r) - math.lgamma(alpha))
    return math.exp(
        (r / 2) * math.log(alpha)
        + math.lgamma((r + 1) / 2)
        + math.lgamma((alpha - r) / 2)
        - 0.5 * math.log(math.pi)
        - math.lgamma(alpha / 2)
    )


def heavy_noise(
    shape: tuple[int, ...],
    *,
    p: float,
    sigma: float = 1.0,
    alpha: float | None = None,
    kind: NoiseKind = "pareto",
    gen: torch.Generator | None = None,
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    """Centred symmetric noise of ``shape``, i.i.d. coordinates with tail index ``alpha``
    (default ``p + 0.1``) scaled so that ``E|xi_i|^p = sigma^p`` exactly."""
    alpha = p + 0.1 if alpha is None else alpha
    if alpha <= p:
        raise ValueError(f"alpha={alpha} <= p={p}: the p-th moment would be infinite")
    scale = sigma / abs_moment(kind, alpha, p) ** (1.0 / p)
    if kind == "pareto":
        u = torch.rand(shape, generator=gen, dtype=dtype).clamp_min(torch.finfo(dtype).tiny)
        mag = u.pow(-1.0 / alpha) - 1.0
        sign = torch.randint(0, 2, shape, generator=gen).to(dtype) * 2 - 1
        return scale * sign * mag
    z = torch.randn(shape, generator=gen, dtype=dtype)
    # chi-square with alpha d.o.f. as 2 * Gamma(alpha/2), by torch's Gamma sampler
    g = torch._standard_gamma(torch.full(shape, alpha / 2, dtype=dtype), generator=gen)
    return scale * z / torch.sqrt(2 * g / alpha)


# -- catalogue entry ------------------------------------------------------------------------


def _clipped_sgd(problem: ModelProblem, hp: dict[str, float], steps: int, seed: int) -> TrainResult:
    torch.manual_seed(seed)
    model: nn.Module = problem.make_model(seed)
    params = [q for q in model.parameters() if q.requires_grad]
    opt = ClippedSGD(params, lr=hp["lr"], clip=hp["clip"])
    gen = torch.Generator().manual_seed(seed + 1)
    curve: list[float] = []
    clipped = 0
    for step in range(steps):
        loss = problem.losses(model, problem.batch(step, gen)).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        norm = math.sqrt(
            sum(float((q.grad.double() ** 2).sum()) for q in params if q.grad is not None)
        )
        clipped += norm > hp["clip"]
        opt.step()
        curve.append(float(loss.detach()))
    return TrainResult(
        model=model, curve=curve, extra={"clipped_fraction": clipped / max(steps, 1)}
    )


CLIPPED_SGD = TrainMethod(
    name="clipped-sgd",
    description="SGD on the globally norm-clipped gradient g*min(1, clip/||g||), no momentum: "
    "the standard remedy for heavy-tailed gradient noise (lr and clip tuned to the step budget)",
    kinds=frozenset({"classify", "lm"}),
    hparams={"lr": HParam(1e-3, 1.0, 0.05), "clip": HParam(0.01, 100.0, 1.0)},
    run=_clipped_sgd,
)
