"""LOCU: multi-constraint trust-region policy optimization for CMDPs with a symmetric
(Löwdin) Fisher-orthonormal reduced space.

Problem (``ControlProblem.kind == "cmdp"``): maximize ``J_r(theta)`` subject to
``J_ci(theta) <= l_i`` for ``i = 1..m``. Each iteration linearizes reward and costs at the
current policy (surrogate gradients ``g (n,)`` and ``b_i (n,)``, margins
``h_i = l_i - J_ci``) and looks for a step ``x (n,)`` inside the Fisher trust region
``(1/2) x^T F x <= delta``:

1. **Natural directions.** ``d_0 = F^-1 g`` and ``d_i = F^-1 b_i`` by conjugate gradient on
   ``core.fisher_vector_product`` (``natural_directions``).
2. **Fisher-geometric screening** (``screen``). Within the trust region the linearized
   change of cost ``i`` is at most ``sqrt(2 delta) ||d_i||_F`` (``||d||_F^2 = d^T F d``;
   Cauchy-Schwarz in the Fisher metric, attained along ``d_i``). A satisfied constraint
   whose margin exceeds ``screen_factor`` times that bound cannot reach its limit by any
   trust-region step, so it is dropped from the step computation (together with its
   direction). ``screen_factor = 2`` leaves room for the nonlinearity of the true cost.
   A constraint with a zero gradient (it never incurred cost in the batch) is screened if
   satisfied and set aside if violated (no step can change it to first order).
3. **Symmetric Löwdin orthogonalization with near-collinear compression**
   (``lowdin``). The surviving directions are normalized in the Fisher norm
   (``dhat_i = d_i / ||d_i||_F``), their Fisher Gram matrix ``S_ij = dhat_i^T F dhat_j``
   (the matrix of Fisher cosines) is diagonalized, ``S = V diag(lam) V^T``, and
   eigenvalues below ``collinear_tol`` are dropped: that merges directions with a Fisher
   cosine near +-1 (a pair with cosine ``c`` has eigenvalues ``1 +- c``; the kept
   eigenvector of a merged pair is their normalized sum) and any near-degenerate
   combination, with no order among the directions. The reduced basis is
   ``Q = Dhat V_r diag(lam_r)^-1/2`` (``r`` columns, ``Q^T F Q = I_r``); the symmetric
   Löwdin set is ``W = Q V_r^T = Dhat S^-1/2`` (pseudo-inverse square root; when nothing
   is dropped the F-orthonormal set closest to ``Dhat``, column by column, and permuting
   the constraints permutes ``W``'s columns and leaves ``span(Q)`` unchanged). In ``Q``'s
   coordinates ``x = Q z`` the trust region is the Euclidean ball ``||z||^2 <= 2 delta``.
   Why the span suffices: the exact trust-region/linearized-constraint problem's KKT
   point ``x = F^-1 (g - sum nu_i b_i) / lambda`` lies in ``span(d_0, d_i)``, so without
   compression the reduced problem is exact; the solution depends on the retained
   subspace only, and Löwdin's job is to choose that subspace symmetrically (Gram-Schmidt
   with a drop threshold keeps whichever of two collinear constraints comes first and
   turns the noise in their difference into a full-length basis vector; ``gram_schmidt``
   is kept as the comparison variant).
4. **Active-set solve** (``solve_active_set``): maximize ``ghat^T z`` subject to
   ``||z||^2 <= 2 delta`` and ``Ahat z <= h`` (``ghat = Q^T g``, ``Ahat = B Q``) by exact
   enumeration of the active sets (``p`` kept constraints, at most ``2^p`` sets; every set
   is solved in closed form and checked for feasibility and KKT signs, so all constraints
   are treated alike). The enumeration is exact for problems in general position; in a
   degenerate case with no KKT candidate the best feasible candidate is returned.
5. **Pareto recovery** (``pareto_direction``) when some constraint is violated and the
   reduced problem is infeasible: ``min (1/2)||z||^2`` s.t. ``ahat_j^T z <= -1`` for the
   violated ``j`` and ``ahat_s^T z <= 0`` for the satisfied kept ``s`` (again exact
   active-set enumeration). Its solution is the (scaled) min-norm element of the violated
   constraints' gradient hull restricted to the cone that does not increase a satisfied
   constraint: every violated cost decreases to first order, no satisfied kept cost
   increases. If that cone leaves no such direction, the satisfied constraints are
   released (plain min-norm hull of the violated ones; the line search then refuses a
   step that pushes a satisfied cost past its limit). The step length is just enough to
   bring every violated constraint to its limit to first order, capped by the trust
   region (no deliberate overshoot).
6. **Backtracking line search**: the shared loop's (``baselines.backtracking_line_search``):
   the step is shrunk (ratio 0.8) until the sampled mean KL is within ``kl_slack * delta``,
   no surrogate cost rises past its limit (a violated one may not rise at all), and in
   optimize mode (not while recovering) the reward surrogate does not drop.

The run (``LOCU.run``) is ``baselines.OnPolicyLoop`` (rollouts, reward and cost critics of
any ``core.make_critic`` kind, GAE, curve) with ``locu_update``: margins are the loop's
``h = -c = (d - J_c) / L`` (budgets in the surrogates' per-step units), gradients its
``g`` and ``B``, the metric its damped ``fvp``.

What is the library's: torch (autograd, the Fisher-vector products of ``core``), numpy
for the small dense linear algebra. Ours: everything above; cvxpy only checks the
active-set solves in the tests.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np
import torch

from optiforge.solvers.rl.api import ControlProblem, HParam, RLMethod, RLResult
from optiforge.solvers.rl.baselines import (
    HPARAMS,
    IterContext,
    LoopConfig,
    OnPolicyLoop,
    cpo_direction,
    pcpo_direction,
    ppo_lag_update,
    trpo_direction,
    trust_region_update,
)
from optiforge.solvers.rl.core import conjugate_gradient, flat_params, set_flat_params

Fvp = Callable[[torch.Tensor], torch.Tensor]
Mode = Literal["optimize", "recover", "stuck"]


def natural_directions(fvp: Fvp, grads: torch.Tensor, cg_iters: int = 10) -> torch.Tensor:
    """``grads (k, n)`` -> ``F^-1 grads`` row by row, ``(k, n)``, by conjugate gradient."""
    return torch.stack([conjugate_gradient(fvp, g, iters=cg_iters) for g in grads])


def fisher_gram(fvp: Fvp, dirs: torch.Tensor) -> np.ndarray:
    """``S_ij = d_i^T F d_j`` for ``dirs (k, n)``, symmetrized, ``(k, k)`` float64."""
    fd = torch.stack([fvp(d) for d in dirs])
    s = (dirs.double() @ fd.double().T).numpy()
    return 0.5 * (s + s.T)


def screen(margins: np.ndarray, fisher_norms: np.ndarray, delta: float,
           screen_factor: float = 2.0) -> np.ndarray:  # fmt: skip
    """Which constraints stay in the step computation, ``(m,)`` bool: a satisfied
    constraint (``margin >= 0``) is dropped when ``margin > screen_factor * sqrt(2 delta)
    * ||d_i||_F`` (no trust-region step can reach its limit, to first order)."""
    reach = np.sqrt(2.0 * delta) * np.asarray(fisher_norms, dtype=np.float64)
    h = np.asarray(margins, dtype=np.float64)
    return ~((h >= 0) & (h > screen_factor * reach))


@dataclass
class Basis:
    """``q (n, r)``: F-orthonormal reduced basis; ``w (n, k)``: the symmetric Löwdin set of
    the ``k`` input directions (``Dhat S^-1/2``); ``eigvals (k,)`` of the Fisher-cosine
    Gram matrix; ``kept_eig (k,)`` which eigen-directions survived compression."""

    q: torch.Tensor
    w: torch.Tensor
    eigvals: np.ndarray
    kept_eig: np.ndarray


def lowdin(dirs: torch.Tensor, gram: np.ndarray, collinear_tol: float = 0.02) -> Basis:
    """Symmetric Löwdin orthogonalization of ``dirs (k, n)`` under the metric whose Gram
    matrix is ``gram (k, k)`` (``d_i^T F d_j``), with compression: directions are first
    normalized, eigenvalues of the cosine matrix below ``collinear_tol`` dropped."""
    norms = np.sqrt(np.clip(np.diag(gram), 1e-300, None))
    cos = gram / np.outer(norms, norms)
    lam, v = np.linalg.eigh(cos)
    keep = lam > collinear_tol
    dhat = dirs.double() / torch.as_tensor(norms)[:, None]
    vr = torch.as_tensor(v[:, keep])
    q = dhat.T @ vr / torch.as_tensor(np.sqrt(lam[keep]))[None, :]
    w = q @ vr.T
    return Basis(q=q, w=w, eigvals=lam, kept_eig=keep)


def gram_schmidt(dirs: torch.Tensor, gram: np.ndarray, drop_tol: float = 0.02) -> torch.Tensor:
    """The comparison variant: modified Gram-Schmidt under ``gram`` in the given order,
    dropping a direction whose normalized residual has squared norm below ``drop_tol``.
    Returns an F-orthonormal ``(n, r)``; which directions survive depends on the order."""
    k = dirs.shape[0]
    norms = np.sqrt(np.clip(np.diag(gram), 1e-300, None))
    g = gram / np.outer(norms, norms)
    coef: list[np.ndarray] = []  # each basis vector as coefficients over dhat
    for i in range(k):
        c = np.zeros(k)
        c[i] = 1.0
        for e in coef:
            c = c - (e @ g @ c) * e
        nrm2 = float(c @ g @ c)
        if nrm2 > drop_tol:
            coef.append(c / np.sqrt(nrm2))
    dhat = dirs.double() / torch.as_tensor(norms)[:, None]
    if not coef:
        return torch.zeros(dirs.shape[1], 0, dtype=torch.float64)
    return dhat.T @ torch.as_tensor(np.stack(coef, axis=1))


def _subsets(p: int, max_size: int) -> list[tuple[int, ...]]:
    return [s for size in range(max_size + 1) for s in itertools.combinations(range(p), size)]


def solve_active_set(g: np.ndarray, a: np.ndarray, h: np.ndarray, radius2: float,
                     tol: float = 1e-9) -> np.ndarray | None:  # fmt: skip
    """``argmax g^T z`` s.t. ``||z||^2 <= radius2``, ``a z <= h`` (``g (r,)``, ``a (p, r)``,
    ``h (p,)``) by enumerating active sets; ``None`` when infeasible."""
    g, a, h = (np.asarray(x, dtype=np.float64) for x in (g, a, h))
    r = g.shape[0]
    scale = max(1.0, float(np.abs(h).max(initial=0.0)), float(np.sqrt(radius2)))
    best, best_val = None, -np.inf
    for s in _subsets(a.shape[0], min(a.shape[0], r)):
        idx = list(s)
        if idx:
            ga = a[idx]
            m = ga @ ga.T
            if np.linalg.eigvalsh(m).min() <= 1e-12 * max(1.0, float(np.trace(m))):
                continue
            minv = np.linalg.inv(m)
            z0 = ga.T @ (minv @ h[idx])
            nu_t = minv @ (ga @ g)
            p = g - ga.T @ nu_t
        else:
            minv, z0, nu_t, p = np.zeros((0, 0)), np.zeros(r), np.zeros(0), g.copy()
        rem = radius2 - float(z0 @ z0)
        if rem < -tol * scale:
            continue
        pn = float(np.linalg.norm(p))
        if pn > 1e-12 * max(1.0, float(np.linalg.norm(g))) and rem > 1e-14 * radius2:
            t = np.sqrt(rem)
            z = z0 + t * p / pn
            mu = pn / (2.0 * t)
            nu = nu_t - 2.0 * mu * (minv @ h[idx]) if idx else nu_t
        else:
            z, nu = z0, nu_t
        if np.any(a @ z > h + tol * scale):
            continue
        if np.all(nu >= -1e-9 * max(1.0, float(np.linalg.norm(g)))):
            return z
        val = float(g @ z)
        if val > best_val:
            best, best_val = z, val
    return best


def min_norm_polyhedron(a: np.ndarray, e: np.ndarray, tol: float = 1e-9) -> np.ndarray | None:
    """``argmin (1/2)||z||^2`` s.t. ``a z <= e`` (``a (p, r)``) by active-set enumeration;
    ``None`` when the polyhedron is empty."""
    a, e = np.asarray(a, dtype=np.float64), np.asarray(e, dtype=np.float64)
    r = a.shape[1]
    for s in _subsets(a.shape[0], min(a.shape[0], r)):
        idx = list(s)
        if idx:
            ga = a[idx]
            m = ga @ ga.T
            if np.linalg.eigvalsh(m).min() <= 1e-12 * max(1.0, float(np.trace(m))):
                continue
            nu = -np.linalg.solve(m, e[idx])
            z = -ga.T @ nu
        else:
            nu, z = np.zeros(0), np.zeros(r)
        if np.all(nu >= -tol) and np.all(a @ z <= e + tol * max(1.0, float(np.abs(e).max()))):
            return z
    return None


def pareto_direction(a: np.ndarray, h: np.ndarray, radius2: float
                     ) -> tuple[np.ndarray | None, bool]:  # fmt: skip
    """Recovery step in reduced coordinates for ``a (p, r)``, margins ``h (p,)`` (some
    negative): the min-norm direction with ``a_j^T z <= -1`` (violated ``j``) and
    ``a_s^T z <= 0`` (satisfied ``s``), scaled to bring the violated constraints to their
    limits to first order, capped at ``||z||^2 <= radius2``. Returns ``(z, kept_satisfied)``
    (``kept_satisfied`` False when the satisfied constraints had to be released); ``z`` is
    ``None`` when no direction decreases every violated constraint."""
    a, h = np.asarray(a, dtype=np.float64), np.asarray(h, dtype=np.float64)
    viol = h < 0
    e = np.where(viol, -1.0, 0.0)
    z = min_norm_polyhedron(a, e)
    kept = True
    if z is None:
        kept = False
        z = min_norm_polyhedron(a[viol], e[viol])
        if z is None:
            return None, False
    nz = float(np.linalg.norm(z))
    if nz == 0.0:
        return None, kept
    slope = a[viol] @ z  # all <= -1
    tau_needed = float(np.max(h[viol] / slope))
    tau = min(np.sqrt(radius2) / nz, tau_needed)
    return tau * z, kept


@dataclass
class Direction:
    """One LOCU step proposal: ``x (n,)`` in parameter space, its ``mode``, the kept
    constraints (indices into the ``m`` constraints), the reduced dimension ``r``, the
    linearized changes ``pred_reward`` and ``pred_costs (m,)``, and diagnostics."""

    x: torch.Tensor
    mode: Mode
    kept: list[int]
    r: int
    pred_reward: float
    pred_costs: np.ndarray
    eigvals: np.ndarray = field(default_factory=lambda: np.zeros(0))
    released: bool = False


@dataclass(frozen=True)
class LocuConfig:
    """The choices the issue leaves open (see the module docstring)."""

    delta: float = 0.01
    """Trust region ``(1/2) x^T F x <= delta`` (in the sampled mean KL's quadratic model)."""
    cg_iters: int = 10
    screen_factor: float = 2.0
    collinear_tol: float = 0.02
    """Eigenvalue floor of the Fisher-cosine Gram matrix (a pair with cosine above
    ``1 - collinear_tol`` is merged)."""
    orthogonalization: Literal["lowdin", "gram-schmidt"] = "lowdin"
    pareto: bool = True
    """False: the ablation that, like CPO, recovers along the steepest natural descent of
    the summed violated costs over the whole trust region."""


def locu_direction(g: torch.Tensor, b: torch.Tensor, margins: np.ndarray, fvp: Fvp,
                   cfg: LocuConfig = LocuConfig()) -> Direction:  # fmt: skip
    """The LOCU step for reward gradient ``g (n,)``, cost gradients ``b (m, n)`` and
    margins ``h_i = l_i - J_ci`` ``(m,)`` under the Fisher product ``fvp``."""
    n = g.shape[0]
    m = b.shape[0]
    h = np.asarray(margins, dtype=np.float64)
    radius2 = 2.0 * cfg.delta
    grads = torch.cat([g[None], b], dim=0)
    dirs = natural_directions(fvp, grads, cfg.cg_iters)
    gram = fisher_gram(fvp, dirs)
    fnorm = np.sqrt(np.clip(np.diag(gram), 0.0, None))
    nz = fnorm > 1e-10 * max(1.0, float(fnorm.max()))
    kept_mask = screen(h, fnorm[1:], cfg.delta, cfg.screen_factor) & nz[1:]
    kept = [i for i in range(m) if kept_mask[i]]
    use = ([0] if nz[0] else []) + [1 + i for i in kept]
    gd, bd = g.double(), b.double()
    zero = Direction(torch.zeros(n, dtype=g.dtype), "stuck", kept, 0, 0.0, np.zeros(m))
    if not use:
        return zero
    sub_gram = gram[np.ix_(use, use)]
    if cfg.orthogonalization == "lowdin":
        basis = lowdin(dirs[use], sub_gram, cfg.collinear_tol)
        q, eig = basis.q, basis.eigvals
    else:
        q, eig = gram_schmidt(dirs[use], sub_gram, cfg.collinear_tol), np.zeros(0)
    r = q.shape[1]
    ghat = (q.T @ gd).numpy()
    ahat = (bd[kept] @ q).numpy()
    hk = h[kept]
    mode: Mode = "optimize"
    released = False
    z = solve_active_set(ghat, ahat, hk, radius2)
    if z is None:
        mode = "recover"
        if cfg.pareto:
            z, kept_sat = pareto_direction(ahat, hk, radius2)
            released = not kept_sat
        else:
            viol = hk < 0
            sdir = -ahat[viol].sum(axis=0)
            ns = float(np.linalg.norm(sdir))
            z = sdir * np.sqrt(radius2) / ns if ns > 0 else None
        if z is None:
            zero.kept, zero.r, zero.eigvals = kept, r, eig
            return zero
    x = q @ torch.as_tensor(z)
    return Direction(
        x=x.to(g.dtype), mode=mode, kept=kept, r=r, pred_reward=float(gd @ x),
        pred_costs=(bd @ x).numpy(), eigvals=eig, released=released,
    )  # fmt: skip


_MODE_CODE = {"optimize": 0.0, "recover": 1.0, "stuck": 2.0}


def locu_step_direction(cfg: LocuConfig = LocuConfig()
                        ) -> Callable[[IterContext], tuple[torch.Tensor, dict[str, Any]]]:  # fmt: skip
    """The shared loop's ``step_direction`` for LOCU (``delta`` and ``cg_iters`` from the
    loop's config). ``info``: ``mode`` (0 optimize, 1 recover, 2 stuck), ``r`` (reduced
    dimension), ``kept`` (constraints after screening), ``released``,
    ``pred_viol_max`` / ``pred_sat_rise`` (largest first-order change of a kept violated /
    satisfied cost; NaN if none) and the line search's ``check_reward`` (off while
    recovering)."""

    def direction(ctx: IterContext) -> tuple[torch.Tensor, dict[str, Any]]:
        c = replace(cfg, delta=ctx.delta, cg_iters=ctx.config.cg_iters)
        h = -ctx.c
        d = locu_direction(ctx.g, ctx.B, h, ctx.fvp, c)
        viol = [i for i in d.kept if h[i] < 0]
        sat = [i for i in d.kept if h[i] >= 0]
        info: dict[str, Any] = {
            "check_reward": d.mode == "optimize", "mode": _MODE_CODE[d.mode], "r": d.r,
            "kept": len(d.kept), "released": float(d.released), "pred_reward": d.pred_reward,
            # first-order changes (per-step units) of the kept violated / satisfied costs
            "pred_viol_max": float(d.pred_costs[viol].max()) if viol else float("nan"),
            "pred_sat_rise": float(d.pred_costs[sat].max()) if sat else float("nan"),
        }  # fmt: skip
        return d.x, info

    return direction


LOCU_HPARAMS: dict[str, HParam] = {
    **HPARAMS,
    "screen_factor": HParam(1.0, 10.0, 2.0),
    "collinear_tol": HParam(1e-4, 0.2, 0.02),
}
_LOCU_KEYS = ("screen_factor", "collinear_tol", "orthogonalization", "pareto")


def run_locu(problem: ControlProblem, seed: int = 0, init: torch.Tensor | None = None,
             **hp: Any) -> RLResult:  # fmt: skip
    """Train LOCU on a ``cmdp`` problem with the shared on-policy loop. ``hp``: the loop's
    (``HPARAMS``: ``delta``, ``gamma``, ``lam``, ``steps_per_iter``, ``critic``, ...) and
    LOCU's (``screen_factor``, ``collinear_tol``, ``orthogonalization``, ``pareto``);
    ``init``: flat policy parameters to start from (e.g. an unconstrained policy: an
    infeasible start)."""
    lk = {k: hp.pop(k) for k in _LOCU_KEYS if k in hp}
    cfg = LoopConfig.from_hparams(**hp)
    loop = OnPolicyLoop(problem, seed, cfg)
    if init is not None:
        set_flat_params(loop.policy, init)
    res = loop.run(trust_region_update(locu_step_direction(LocuConfig(**lk))))
    res.extra["locu"] = lk
    return res


LOCU = RLMethod(
    name="locu",
    kinds=frozenset({"cmdp"}),
    description="LOCU: multi-constraint trust-region policy optimization; natural gradients "
    "of reward and costs orthogonalized symmetrically (Löwdin) in the Fisher metric, "
    "far constraints screened and near-collinear ones merged, an exact active-set solve in "
    "the reduced ball, and a Pareto-descent recovery that lowers every violated cost "
    "without raising a satisfied one",
    hparams=LOCU_HPARAMS,
    run=run_locu,
)


# the comparison variants (claim test and benchmark): every method on the same loop, from
# the same initial parameters
VARIANTS = ("locu", "locu-gs", "locu-nopareto", "cpo", "pcpo", "ppo-lag", "trpo")


def run_variant(name: str, problem: ControlProblem, seed: int = 0,
                init: torch.Tensor | None = None, **hp: Any) -> RLResult:  # fmt: skip
    """Train ``name`` (``VARIANTS``: LOCU, its Gram-Schmidt and no-Pareto ablations, the
    baselines and unconstrained TRPO) on the shared loop from ``init`` (flat parameters;
    ``None``: the loop's seeded initialization)."""
    ppo_keys = ("lr", "lambda_lr", "epochs", "minibatch", "clip")
    ppo_kw = {k: hp.pop(k) for k in ppo_keys if k in hp}
    update: Callable[[IterContext], Any]
    if name.startswith("locu"):
        lk = {k: hp.pop(k) for k in _LOCU_KEYS if k in hp}
        if name == "locu-gs":
            lk["orthogonalization"] = "gram-schmidt"
        elif name == "locu-nopareto":
            lk["pareto"] = False
        elif name != "locu":
            raise KeyError(name)
        update = trust_region_update(locu_step_direction(LocuConfig(**lk)))
    elif name in ("cpo", "pcpo", "trpo"):
        update = trust_region_update(
            {"cpo": cpo_direction, "pcpo": pcpo_direction, "trpo": trpo_direction}[name]
        )
    elif name == "ppo-lag":
        update = ppo_lag_update(**ppo_kw)
    else:
        raise KeyError(f"unknown variant {name!r} (known: {', '.join(VARIANTS)})")
    cfg = LoopConfig.from_hparams(constrained=name != "trpo", **hp)
    loop = OnPolicyLoop(problem, seed, cfg)
    if init is not None:
        set_flat_params(loop.policy, init)
    return loop.run(update)


def pretrain_unconstrained(problem: ControlProblem, seed: int, budget: int, **hp: Any
                           ) -> torch.Tensor:  # fmt: skip
    """Flat parameters of a policy trained by TRPO ignoring the constraints for ``budget``
    steps (an infeasible start for the constrained methods)."""
    res = run_variant("trpo", replace(problem, budget=budget), seed, **hp)
    return flat_params(res.policy).clone()
