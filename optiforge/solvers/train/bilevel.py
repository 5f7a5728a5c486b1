"""Single-loop stochastic bilevel optimization: BROS and its full-space baseline MA-SOBA.

The problem (``api.BilevelProblem``): outer variables ``x = lam`` ``(N,)``, inner variables
``y`` = the parameters of an ``nn.Module`` (``d`` numbers), inner loss ``g(x, y)`` (the
lam-weighted training loss), outer loss ``f(y)`` (clean validation loss). The hypergradient
of ``F(x) = f(y*(x))`` is ``grad_x f - grad2_xy g  v*`` with ``v* = [grad2_yy g]^-1 grad_y f``.

**MA-SOBA** (moving-average SOBA; the baseline), one stochastic inner batch ``xi`` and outer
batch ``zeta`` per step, all at ``(x_t, y_t, v_t)``::

    y <- y - gamma  grad_y g                     (inner SGD step, full space)
    v <- v - beta (H v - grad_y f)               (SGD on 1/2 v'Hv - v' grad_y f, H = grad2_yy g)
    w  = grad_x f - grad2_xy g v                 (stochastic hypergradient)
    h <- (1 - theta) h + theta w                 (moving average)
    x <- x - alpha h

``H v`` and ``grad2_xy g v`` come from one double backward through a ``d``-dimensional
gradient with a graph (``torch.autograd.grad(..., create_graph=True)``).

**BROS** (bias-corrected randomized subspaces): the same recursions, but every derivative is
taken with respect to the coordinates of random low-rank subspaces of the inner parameters,
never as a ``d``-dimensional gradient. Each step draws two independent Rademacher sketches,
``P`` (the step's subspace) and ``Q`` (the probe), one per parameter matrix (below), with
i.i.d. entries ``+-1/sqrt(r)`` so that ``E[P P^T] = E[Q Q^T] = I``, and evaluates the losses at
``y + P B_P + Q B_Q`` with ``B_P = B_Q = 0``::

    y <- y - gamma P (P^T grad_y g)                       = d g / d B_P, lifted
    v <- v - beta P (P^T H Q Q^T v - P^T grad_y f)        bi-probe Hessian action
    w  = grad_x f - grad2_xy g Q Q^T v
    h, x as in MA-SOBA

*The bi-probe correction, derived.* The Hessian action the ``v`` step needs, ``H v``, is
estimated by ``P P^T H Q Q^T v``: ``P^T H Q (Q^T v) = d/dB_P <d g/d B_Q, Q^T v>`` is a mixed
second derivative in the two sketches' coordinates (``r`` per sketched side), so no
``d``-dimensional gradient graph is built. Since ``P`` and ``Q`` are independent and each
has ``E[S S^T] = I``, ``E[P P^T H Q Q^T] = E[P P^T] H E[Q Q^T] = H``: the estimate is
unbiased, and the conditional expectation of every BROS update given the past is MA-SOBA's
update (the property its O(eps^-2) analysis rests on). With one probe (``Q = P``) it is not:
for a Rademacher ``s`` with ``E[s s^T] = I`` and symmetric ``H``,
``E[s s^T H s s^T] = 2H + tr(H) I - 2 diag(H)`` (the fourth moments pair up three ways, the
all-equal index counted once), so for ``P`` with ``r`` columns
``E[P P^T H P P^T] = H + (H + tr(H) I - 2 diag(H)) / r``: the ``v`` iteration then solves a
system inflated by ``~tr(H)/r`` and the hypergradient shrinks. ``hessian_action`` returns both
versions; the tests measure the bias of each against the exact HVP.

*Our choices where the issue is silent* (each tested):

- Sketches act on one side of each >= 2-D parameter viewed as ``(m, n)`` (dims after the
  first flattened): the smaller side ``s = min(m, n)``; the subspace is ``Delta W = P B``
  (rows, ``P`` ``m x r``, ``B`` ``r x n``) or ``Delta W = B P^T`` (columns, ``P`` ``n x r``,
  ``B`` ``m x r``). Where ``r >= s`` the side is not sketched (``P = I``). 1-D parameters
  (biases, norms: ``O(width)``) are updated in full space.
- For ``nn.Linear`` weights the subspace enters the forward as ``x W^T + (x B^T) P^T`` (or
  ``(x P) B^T``), so neither ``W + P B`` nor any ``m x n`` gradient is ever formed; other
  parameters go through ``torch.func.functional_call`` with ``p + Delta p``.
- The subspace is redrawn every step (``P``, ``Q`` fresh each step): there is no persistent
  subspace state. ``v`` is a full-space iterate as in MA-SOBA; it is *updated* only inside
  ``span(P)``. (Keeping ``v`` as ``r``-dimensional coordinates of a subspace redrawn every step
  is not workable: the unbiased carry-over ``z' = P'^T P z`` multiplies ``E|v|^2`` by about
  ``1 + s/r`` per redraw, so it diverges; the biased Galerkin alternative has no unbiased
  hypergradient. The memory BROS saves is the full-space derivative graph and buffers.)
- Both methods use the same inner and outer batches at a step, ``grad_x f = 0`` unless the
  outer loss reads ``lam`` (ours never does; ``allow_unused`` covers it), ``h_0 = 0``,
  ``v_0 = 0``, plain SGD on ``lam`` (the issue names no outer optimizer).

What is torch's: autograd (double backward), ``torch.func.functional_call``, the profiler that
``step_peak_bytes`` reads. What is ours: the subspace forward, the estimators, both loops.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import torch
import torch.nn.functional as F  # noqa: N812
from torch import nn

from optiforge.solvers.train.api import Batch, BilevelProblem, HParam, TrainMethod, TrainResult

Side = Literal["rows", "cols", "full"]


@dataclass
class Sketch:
    """A Rademacher sketch of one parameter: ``side`` says which side of its ``(m, n)``
    view is sketched; ``mat`` is ``P`` (``m x r`` for rows, ``n x r`` for cols; ``None`` for
    full, i.e. ``P = I``). ``coords`` is the shape of the subspace coordinates ``B``."""

    side: Side
    mat: torch.Tensor | None
    shape: torch.Size
    coords: tuple[int, ...]

    def lift(self, b: torch.Tensor) -> torch.Tensor:
        """``P B`` (rows), ``B P^T`` (cols) or ``B`` (full), in the parameter's shape."""
        if self.side == "full" or self.mat is None:
            return b.reshape(self.shape)
        out = self.mat @ b if self.side == "rows" else b @ self.mat.T
        return out.reshape(self.shape)

    def project(self, u: torch.Tensor) -> torch.Tensor:
        """The coordinates ``P^T U`` (rows), ``U P`` (cols) or ``U`` (full) of a
        parameter-shaped ``u``; ``lift(project(u)) = P P^T u`` (sketched side)."""
        if self.side == "full" or self.mat is None:
            return u.reshape(self.coords)
        m = u.reshape(self.shape[0], -1)
        return self.mat.T @ m if self.side == "rows" else m @ self.mat

    def add_lift_(self, target: torch.Tensor, b: torch.Tensor, alpha: float) -> None:
        """``target += alpha * lift(b)`` in place, without forming ``lift(b)``."""
        if self.side == "full" or self.mat is None:
            target.add_(b.reshape(self.shape), alpha=alpha)
            return
        t = target.view(self.shape[0], -1)
        if self.side == "rows":
            t.addmm_(self.mat, b, alpha=alpha)
        else:
            t.addmm_(b, self.mat.T, alpha=alpha)

    def numel(self) -> int:
        return math.prod(self.coords)


def draw_sketch(p: torch.Tensor, rank: int, gen: torch.Generator) -> Sketch:
    """A Rademacher sketch of ``p`` with ``rank`` columns, entries ``+-1/sqrt(rank)``
    (``E[P P^T] = I``), on the smaller side of ``p`` viewed as ``(m, n)``; 1-D parameters and
    sides no larger than ``rank`` are left full."""
    if p.ndim < 2:
        return Sketch("full", None, p.shape, tuple(p.shape))
    m, n = p.shape[0], p[0].numel()
    s = min(m, n)
    if rank >= s:
        return Sketch("full", None, p.shape, tuple(p.shape))
    signs = torch.randint(0, 2, (s, rank), generator=gen, dtype=torch.int8)
    mat = (signs.to(p.dtype) * 2 - 1) / math.sqrt(rank)
    if m <= n:
        return Sketch("rows", mat, p.shape, (rank, n))
    return Sketch("cols", mat, p.shape, (m, rank))


def draw_sketches(params: list[nn.Parameter], rank: int, gen: torch.Generator) -> list[Sketch]:
    return [draw_sketch(p, rank, gen) for p in params]


def trainable(model: nn.Module) -> list[tuple[str, nn.Parameter]]:
    """The inner variables ``y``: the model's parameters that require grad (frozen ones are
    part of the problem, not of ``y``)."""
    return [(k, p) for k, p in model.named_parameters() if p.requires_grad]


@contextlib.contextmanager
def subspace_forward(
    model: nn.Module, terms: list[list[tuple[Sketch, torch.Tensor]]]
) -> Iterator[Callable[..., Any]]:
    """Inside, the returned callable runs ``model`` at ``y + sum_j lift_j(B_j)``: ``terms[i]``
    lists the ``(sketch, B)`` pairs added to the ``i``-th trainable parameter (``trainable``
    order). ``nn.Linear`` weights take the low-rank path in the forward (no ``m x n``
    tensor); every other parameter is replaced by ``p + sum lift`` via ``functional_call``."""
    names = [k for k, _ in trainable(model)]
    index = {k: i for i, k in enumerate(names)}
    patched: list[nn.Linear] = []
    low_rank: set[int] = set()
    for mod_name, mod in model.named_modules():
        if type(mod) is not nn.Linear:
            continue
        key = f"{mod_name}.weight" if mod_name else "weight"
        i = index.get(key)
        if i is None or not terms[i] or any(sk.side == "full" for sk, _ in terms[i]):
            continue
        low_rank.add(i)
        mod_terms = terms[i]

        def fwd(x: torch.Tensor, _mod: nn.Linear = mod, _t: list[tuple[Sketch, torch.Tensor]] = mod_terms) -> torch.Tensor:  # fmt: skip
            # x Delta W^T = U V for every term at once: rows (Delta W = P B): U = x B^T,
            # V = P^T; cols (Delta W = B P^T): U = x P, V = B^T. One addmm, one output.
            us, vs = [], []
            for sk, b in _t:
                assert sk.mat is not None
                us.append(F.linear(x, b) if sk.side == "rows" else x @ sk.mat)
                vs.append(sk.mat.T if sk.side == "rows" else b.T)
            base = F.linear(x, _mod.weight, _mod.bias)
            flat = base.reshape(-1, base.shape[-1])
            u = torch.cat(us, -1).reshape(flat.shape[0], -1)
            return torch.addmm(flat, u, torch.cat(vs, 0)).reshape(base.shape)

        mod.forward = fwd  # type: ignore[method-assign,assignment]
        patched.append(mod)
    params = dict(trainable(model))
    replaced: dict[str, torch.Tensor] = {}
    for i, k in enumerate(names):
        if i in low_rank or not terms[i]:
            continue
        t: torch.Tensor = params[k]
        for sk, b in terms[i]:
            t = t + sk.lift(b)
        replaced[k] = t

    def call(*args: Any) -> Any:
        return torch.func.functional_call(model, replaced, args)

    try:
        yield call
    finally:
        for mod in patched:
            del mod.forward


class _ModelView(nn.Module):
    """Wraps a callable as a module so problems' losses (which call ``model(x)``) see the
    subspace-perturbed model."""

    def __init__(self, fn: Callable[..., Any], base: nn.Module) -> None:
        super().__init__()
        self._fn = fn
        self._base = [base]

    def forward(self, *args: Any) -> Any:
        return self._fn(*args)


def _zeros(sketches: list[Sketch]) -> list[torch.Tensor]:
    return [torch.zeros(sk.coords, requires_grad=True) for sk in sketches]


def hessian_action(
    loss_at: Callable[[nn.Module], torch.Tensor],
    model: nn.Module,
    v: list[torch.Tensor],
    p_sk: list[Sketch],
    q_sk: list[Sketch],
    extra: list[torch.Tensor] | None = None,
) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.Tensor | None]]:
    """The sketched Hessian action of ``g = loss_at(model)`` at the model's parameters.

    Returns ``(P^T H Q Q^T v`` coordinates, ``P^T grad g`` coordinates, ``grad_extra <grad g,
    Q Q^T v>``) (the last: e.g. ``grad2_{lam y} g Q Q^T v``, one per ``extra`` tensor, ``None``
    where unused). ``q_sk is p_sk`` gives the single-probe (biased) version: then the same
    coordinates serve both sides."""
    extra = list(extra or [])
    single = q_sk is p_sk
    bp = _zeros(p_sk)
    bq = bp if single else _zeros(q_sk)
    terms = [[(sp, a)] if single else [(sp, a), (sq, c)] for sp, sq, a, c in zip(p_sk, q_sk, bp, bq, strict=True)]  # fmt: skip
    with subspace_forward(model, terms) as call:
        g = loss_at(_ModelView(call, model))
        grads = torch.autograd.grad(g, bp if single else bp + bq, create_graph=True)
    gp = list(grads[: len(bp)])
    gq = gp if single else list(grads[len(bp) :])
    inner = sum(((gi * sq.project(vi)).sum() for gi, sq, vi in zip(gq, q_sk, v, strict=True)), torch.zeros(()))  # fmt: skip
    outs = torch.autograd.grad(inner, bp + extra, allow_unused=True)
    hp = [o if o is not None else torch.zeros_like(b) for o, b in zip(outs[: len(bp)], bp, strict=True)]  # fmt: skip
    return [h.detach() for h in hp], [x.detach() for x in gp], [o.detach() if o is not None else None for o in outs[len(bp) :]]  # fmt: skip


def hvp_exact(
    loss_at: Callable[[nn.Module], torch.Tensor], model: nn.Module, v: list[torch.Tensor]
) -> list[torch.Tensor]:
    """``H v`` by double backward through the full-space gradient (MA-SOBA's way)."""
    ps = [p for _, p in trainable(model)]
    g = loss_at(model)
    grads = torch.autograd.grad(g, ps, create_graph=True)
    s = sum(((gi * vi).sum() for gi, vi in zip(grads, v, strict=True)), torch.zeros(()))
    return [h.detach() for h in torch.autograd.grad(s, ps)]


@dataclass
class ProbeBias:
    """Many draws of a Hessian-action estimate against the exact ``H v``: ``ratios`` ``(n,)``
    are ``<est_i, v> / <H v, v>`` (1 in expectation iff unbiased along ``v``); ``rel_err`` is
    ``|mean_i est_i - H v| / |H v|`` and ``noise_floor`` what an unbiased estimate with the
    same per-coordinate variance would show (``sqrt(sum_j var_j / n) / |H v|``)."""

    ratios: torch.Tensor
    rel_err: float
    noise_floor: float


def probe_bias(
    loss_at: Callable[[nn.Module], torch.Tensor],
    model: nn.Module,
    v: list[torch.Tensor],
    rank: int,
    n: int,
    gen: torch.Generator,
    probes: Literal["bi", "single"] = "bi",
) -> ProbeBias:
    """The empirical bias of BROS's Hessian-action estimate ``P P^T H Q Q^T v`` (``bi``) or
    of the uncorrected ``P P^T H P P^T v`` (``single``) over ``n`` fresh draws."""
    ps = [p for _, p in trainable(model)]
    hv = torch.cat([h.reshape(-1) for h in hvp_exact(loss_at, model, v)])
    vf = torch.cat([x.reshape(-1) for x in v])
    draws = torch.empty(n, hv.numel())
    for i in range(n):
        p_sk = draw_sketches(ps, rank, gen)
        q_sk = p_sk if probes == "single" else draw_sketches(ps, rank, gen)
        hq, _, _ = hessian_action(loss_at, model, v, p_sk, q_sk)
        draws[i] = torch.cat([sk.lift(h).reshape(-1) for sk, h in zip(p_sk, hq, strict=True)])
    ratios = draws @ vf / float(hv @ vf)
    rel = float((draws.mean(0) - hv).norm() / hv.norm())
    floor = float((draws.var(0).sum() / n).sqrt() / hv.norm())
    return ProbeBias(ratios=ratios, rel_err=rel, noise_floor=floor)


# ----------------------------------------------------------------------------- the loops


@dataclass
class BilevelState:
    """What a single-loop method carries between steps (besides the model ``y`` and
    ``lam``): the auxiliary ``v`` (parameter-shaped) and the moving-average hypergradient
    ``h`` ``(N,)``."""

    v: list[torch.Tensor]
    h: torch.Tensor

    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in [*self.v, self.h])


def _outer_grad_y(problem: BilevelProblem, model: nn.Module, batch: Batch) -> list[torch.Tensor]:
    ps = [p for _, p in trainable(model)]
    f = problem.outer_loss(model, batch)
    return [g.detach() if g is not None else torch.zeros_like(p) for g, p in zip(torch.autograd.grad(f, ps, allow_unused=True), ps, strict=True)]  # fmt: skip


def ma_soba_step(
    problem: BilevelProblem,
    model: nn.Module,
    lam: torch.Tensor,
    state: BilevelState,
    ib: Batch,
    ob: Batch,
    hp: dict[str, float],
) -> float:
    """One MA-SOBA step in place (module docstring); returns the inner loss."""
    ps = [p for _, p in trainable(model)]
    lam_ = lam.detach().requires_grad_(True)
    g = problem.inner_loss(model, lam_, ib)
    gy = torch.autograd.grad(g, ps, create_graph=True)
    s = sum(((gi * vi).sum() for gi, vi in zip(gy, state.v, strict=True)), torch.zeros(()))
    outs = torch.autograd.grad(s, [*ps, lam_], allow_unused=True)
    hv = [o if o is not None else torch.zeros_like(p) for o, p in zip(outs[:-1], ps, strict=True)]
    cross = outs[-1] if outs[-1] is not None else torch.zeros_like(lam)
    fy = _outer_grad_y(problem, model, ob)
    with torch.no_grad():
        for p, gi in zip(ps, gy, strict=True):
            p.add_(gi.detach(), alpha=-hp["lr_inner"])
        for vi, hvi, fi in zip(state.v, hv, fy, strict=True):
            vi.add_(hvi, alpha=-hp["lr_aux"]).add_(fi, alpha=hp["lr_aux"])
        state.h.mul_(1 - hp["avg"]).add_(-cross.detach(), alpha=hp["avg"])
        lam.sub_(hp["lr_outer"] * state.h)
    return float(g.detach())


def bros_step(
    problem: BilevelProblem,
    model: nn.Module,
    lam: torch.Tensor,
    state: BilevelState,
    ib: Batch,
    ob: Batch,
    hp: dict[str, float],
    gen: torch.Generator,
    probes: Literal["bi", "single"] = "bi",
) -> float:
    """One BROS step in place (module docstring); ``probes="single"`` is the uncorrected
    ablation (``Q = P``). Returns the inner loss."""
    ps = [p for _, p in trainable(model)]
    rank = int(hp["rank"])
    p_sk = draw_sketches(ps, rank, gen)
    q_sk = p_sk if probes == "single" else draw_sketches(ps, rank, gen)
    lam_ = lam.detach().requires_grad_(True)
    loss_box: list[float] = []

    def inner(m: nn.Module) -> torch.Tensor:
        g = problem.inner_loss(m, lam_, ib)
        loss_box.append(float(g.detach()))
        return g

    hq, gp, (cross,) = hessian_action(inner, model, state.v, p_sk, q_sk, [lam_])
    bf = _zeros(p_sk)
    with subspace_forward(model, [[(sk, b)] for sk, b in zip(p_sk, bf, strict=True)]) as call:
        f = problem.outer_loss(_ModelView(call, model), ob)
        fp = torch.autograd.grad(f, bf, allow_unused=True)
    with torch.no_grad():
        for p, sk, gi in zip(ps, p_sk, gp, strict=True):
            sk.add_lift_(p, gi, -hp["lr_inner"])
        for vi, sk, hi, fi in zip(state.v, p_sk, hq, fp, strict=True):
            sk.add_lift_(vi, hi if fi is None else hi - fi, -hp["lr_aux"])
        c = cross if cross is not None else torch.zeros_like(lam)
        state.h.mul_(1 - hp["avg"]).add_(-c, alpha=hp["avg"])
        lam.sub_(hp["lr_outer"] * state.h)
    return loss_box[0]


StepFn = Callable[[BilevelProblem, nn.Module, torch.Tensor, BilevelState, Batch, Batch, dict[str, float], torch.Generator], float]  # fmt: skip


def step_fn(method: Literal["bros", "bros-single", "ma-soba"]) -> StepFn:
    """The step of ``method`` (``bros-single``: BROS without the bi-probe correction), with
    one signature (MA-SOBA draws no subspace, so it ignores the generator)."""
    if method == "ma-soba":
        return lambda pr, model, lam, st, ib, ob, hp, gen: ma_soba_step(pr, model, lam, st, ib, ob, hp)  # fmt: skip
    probe: Literal["single", "bi"] = "single" if method == "bros-single" else "bi"
    return lambda pr, model, lam, st, ib, ob, hp, gen: bros_step(pr, model, lam, st, ib, ob, hp, gen, probe)  # fmt: skip


def fresh_state(model: nn.Module, lam: torch.Tensor) -> BilevelState:
    return BilevelState(
        v=[torch.zeros_like(p) for _, p in trainable(model)], h=torch.zeros_like(lam)
    )


def run_bilevel(
    problem: BilevelProblem,
    method: Literal["bros", "bros-single", "ma-soba"],
    hp: dict[str, float],
    steps: int,
    seed: int,
) -> TrainResult:
    """Train ``problem`` for ``steps`` single-loop steps from ``problem.make(seed)``;
    ``curve`` is the inner loss per step, ``extra["state_bytes"]`` the persistent state's
    bytes (``v``, ``h``). Peak memory of a step: ``step_peak_bytes`` around one step."""
    torch.manual_seed(seed)
    model, lam = problem.make(seed)
    lam = lam.detach().clone()
    state = fresh_state(model, lam)
    gen = torch.Generator().manual_seed(seed + 1)
    sk_gen = torch.Generator().manual_seed(seed + 2)
    fn = step_fn(method)
    curve: list[float] = []
    for step in range(steps):
        ib, ob = problem.inner_batch(step, gen), problem.outer_batch(step, gen)
        curve.append(fn(problem, model, lam, state, ib, ob, hp, sk_gen))
    return TrainResult(model=model, curve=curve, lam=lam, extra={"state_bytes": state.nbytes()})


def step_peak_bytes(fn: Callable[[], Any]) -> int:
    """Peak bytes live at once among the tensors allocated while ``fn()`` runs (CPU,
    torch.profiler's memory events: each op's self allocation and the frees, summed in time
    order). Tensors alive before the call (model, data, state) are not counted. Deterministic
    on CPU for a deterministic ``fn`` (tested)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted(prof.events(), key=lambda e: (e.time_range.start, e.id))
    live = peak = 0
    for e in events:
        live += int(e.self_cpu_memory_usage)
        peak = max(peak, live)
    return peak


# ----------------------------------------------------------------------------- catalogue


def _hparams(lr_aux: float) -> dict[str, HParam]:
    return {
        "lr_inner": HParam(1e-3, 1.0, 0.3),
        "lr_aux": HParam(1e-4, 1.0, lr_aux),
        "lr_outer": HParam(1.0, 1e4, 300.0),
        "avg": HParam(0.01, 1.0, 0.1),
    }


def _run_bros(problem: Any, hp: dict[str, float], steps: int, seed: int) -> TrainResult:
    return run_bilevel(problem, "bros", hp, steps, seed)


def _run_ma_soba(problem: Any, hp: dict[str, float], steps: int, seed: int) -> TrainResult:
    return run_bilevel(problem, "ma-soba", hp, steps, seed)


BROS = TrainMethod(
    name="bros",
    description=(
        "BROS: single-loop stochastic bilevel optimization whose inner and auxiliary updates run "
        "in random low-rank (Rademacher) subspaces of the inner parameters, with a two-probe "
        "unbiased Hessian-action estimate; same hypergradient in expectation as MA-SOBA, "
        "lower peak memory (no full-space derivative graph)"
    ),
    kinds=frozenset({"bilevel"}),
    hparams={**_hparams(0.01), "rank": HParam(1, 64, 16, kind="int")},
    run=_run_bros,
)
MA_SOBA = TrainMethod(
    name="ma-soba",
    description=(
        "MA-SOBA: single-loop stochastic bilevel optimization, full-space inner SGD step, SGD "
        "step on the linear system for the auxiliary variable, moving-average hypergradient"
    ),
    kinds=frozenset({"bilevel"}),
    hparams=_hparams(0.03),
    run=_run_ma_soba,
)
