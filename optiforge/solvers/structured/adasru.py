"""AdaSRU: source-free recommendation unlearning from the forgetting data and Adam's state.

Setting. A matrix-factorization recommender (``MFModel``: user factors ``U`` (``n_users x
d``), item factors ``V`` (``n_items x d``), item bias ``b`` (``n_items``), global bias
``c``; score ``s_ui = <U_u, V_i> + b_i + c``) is trained with minibatch Adam on implicit
feedback: the training set is a list of observed entries ``(u, i, y)`` with ``y`` in
``{0, 1}`` (``n`` entries) and the objective is

    J(theta) = (1/n) sum_k bce(s_k, y_k) + (lam/2) ||theta||^2.

A deletion request names ``n_f`` of those entries (the forgetting set ``F``, in practice
positives); the other ``n_r = n - n_f`` entries (``R``) are *not accessible* to the unlearner
(source-free). The gold standard is retraining from scratch on ``R`` (``retrain``).

The estimate (our derivation of the issue's "first-order optimality condition"). With
``L_F`` / ``L_R`` the mean data losses on ``F`` / ``R`` and ``J_R = L_R + reg`` the
retraining objective, ``n J = n_r L_R + n_f L_F + n reg``, so exactly

    grad J_R(theta) = (n / n_r) grad J(theta) - (n_f / n_r) (grad L_F(theta) + lam theta).

At the trained point ``theta*`` Adam has driven ``grad J`` to about 0, and its first moment
``m_hat`` is a (minibatch-averaged) estimate of what is left, so

    g_R* = (n / n_r) m_hat - (n_f / n_r) (grad L_F(theta*) + lam theta*)     (first order)

needs only the forgetting data and the optimizer state (``use_first_moment=False`` drops
the ``m_hat`` term). Away from ``theta*`` the remaining gradient moves with the remaining
curvature: ``g_R(theta) ~ g_R* + H_R (theta - theta*)``. The curvature comes from Adam's
second moment: near an optimum a minibatch gradient of size ``B`` has second moment
``E[g_B^2] ~ diag(F_emp) / B`` (its mean is ~0, its variance is the per-entry empirical
Fisher over ``B``), and for the logistic loss the empirical Fisher matches the Gauss-Newton
Hessian in expectation. So ``diag(H_J) ~ B v_hat + lam`` and, removing the forgetting
entries' own (exactly computable) Fisher diagonal ``f_F``,

    h_R = max((n B v_hat - n_f f_F) / n_r, 0) + lam       (diagonal of ``H_R``)

The update. Each step maximizes the unlearning objective ``L_F`` (ascent) subject to the
linearized remaining loss not increasing, in the geometry of Adam's preconditioner
``P = sqrt(v_hat) + eps``:

    max_delta <grad L_F, delta>  s.t.  <g_R_hat(theta), delta> <= 0,  ||delta||_P <= r

whose solution is ``delta = P^{-1} (grad L_F - mu g_R_hat)`` with
``mu = max(0, <g_R_hat, P^{-1} grad L_F> / <g_R_hat, P^{-1} g_R_hat>)`` (the P-metric
projection of the preconditioned ascent direction onto the half-space); the step is
``theta += lr * delta / rms(delta)`` (a fixed per-coordinate scale like Adam's). At
``theta*`` the constraint is inactive (``g_R*`` is anti-parallel to ``grad L_F``: forgetting
first *lowers* the remaining loss); it becomes active as the curvature term grows, which is
what stops the ascent from wrecking the factors the remaining data depend on.

Stopping (a choice the issue leaves open): the ascent stops when ``L_F`` reaches
``target_forget_loss`` (computable source-free from a held-out-like level; the benchmark
and the claim test set it to the retrained model's ``L_F`` for every method, so that methods
are compared at equal forgetting) or after ``max_steps``.

Baselines here: ``gradient_ascent`` (plain ascent on ``L_F``, normalized steps),
``adasru(..., remaining=...)`` (the same constrained update with the *true* remaining
gradient: a method that sees ``R``), ``finetune_remaining`` (Adam descent on ``J_R`` from
``theta*``) and ``retrain``. Everything is ours (torch autograd for gradients); no library
implements these.

Measured (``benchmarks/adasru_claims.py --seeds 20``; 200 x 150, all training positives of
half the users deleted, every method stopped at the retrained model's membership AUC):
held-out AUC of the remaining users AdaSRU 0.854, gradient ascent 0.844 (paired -0.0105 +-
0.0042), retrain 0.850, the projected update with the true remaining gradient 0.863; the
gain over gradient ascent comes from the Adam preconditioner, the projection keeps the
forgotten scores at retraining's level (gap 0.004 vs 0.018 without it) without adding
utility. At a 20% deletion there is no measurable difference from gradient ascent.
How good the estimate is (seed 0, along AdaSRU's path): at ``theta*`` the cosine between
``g_R*`` and the true remaining gradient is 0.976 (norm ratio 1.01); after 10-35 steps the
curvature-corrected estimate keeps cosine 0.83-0.98 while the uncorrected ``g_R*`` points
the wrong way (cosine -0.75 to -0.95), but its norm is 8-25x too large: ``v_hat`` still
carries early training's large gradients (beta_2 = 0.999 over ~1400 steps). Only the
direction enters the projection, and ``curvature_scale`` (a multiplier on ``h_R``, default
1) of 0.3, 0.1 or 0.03 changed held-out AUC by < 0.002 on 8 seeds while moving the
forgotten scores away from retraining's, so the default is left at 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from optiforge.errors import SolverError

__all__ = [
    "AdamState",
    "ImplicitData",
    "MFModel",
    "UnlearnResult",
    "adasru",
    "constrained_direction",
    "estimate_remaining",
    "finetune_remaining",
    "forget_metrics",
    "gradient_ascent",
    "make_implicit_data",
    "retrain",
    "train_mf",
    "unlearn_to_equal_forgetting",
    "utility_metrics",
]


@dataclass
class ImplicitData:
    """Implicit-feedback data from a latent-factor Bernoulli model.

    ``train``: ``n x 3`` int64 ``(user, item, y)`` observed entries; ``test``: ``m x 3``
    held-out entries (same format, never trained on); ``forget``: indices into ``train``
    of the entries to unlearn (positives); ``prob``: ``n_users x n_items`` true
    interaction probabilities.
    """

    n_users: int
    n_items: int
    train: np.ndarray
    test: np.ndarray
    forget: np.ndarray
    prob: np.ndarray

    @property
    def remaining(self) -> np.ndarray:
        """Indices of ``train`` not in ``forget``."""
        mask = np.ones(len(self.train), dtype=bool)
        mask[self.forget] = False
        return np.flatnonzero(mask)


def make_implicit_data(
    n_users: int = 200,
    n_items: int = 150,
    rank: int = 4,
    density: float = 0.1,
    test_frac: float = 0.2,
    forget_users_frac: float = 0.5,
    forget_frac: float = 1.0,
    signal: float = 3.0,
    seed: int = 0,
) -> ImplicitData:
    """Latent users/items ``P`` (``n_users x rank``), ``Q`` (``n_items x rank``) with
    ``N(0, 1)`` entries; ``y_ui ~ Bernoulli(sigmoid(<P_u, Q_i> * signal / sqrt(rank) + a))``
    with ``a`` set so the mean probability is ``density``. All entries are observed; a
    random ``test_frac`` of them is held out. The forgetting set: ``forget_frac`` of the
    training positives of a random ``forget_users_frac`` of users."""
    rng = np.random.default_rng(seed)
    p = rng.standard_normal((n_users, rank))
    q = rng.standard_normal((n_items, rank))
    logits = p @ q.T * signal / math.sqrt(rank)
    lo, hi = -20.0, 20.0
    for _ in range(60):  # bisection on the offset for the target density
        mid = 0.5 * (lo + hi)
        if (1.0 / (1.0 + np.exp(-(logits + mid)))).mean() > density:
            hi = mid
        else:
            lo = mid
    prob = 1.0 / (1.0 + np.exp(-(logits + 0.5 * (lo + hi))))
    y = (rng.random(prob.shape) < prob).astype(np.int64)
    uu, ii = np.meshgrid(np.arange(n_users), np.arange(n_items), indexing="ij")
    entries = np.stack([uu.ravel(), ii.ravel(), y.ravel()], axis=1)
    is_test = rng.random(len(entries)) < test_frac
    train, test = entries[~is_test], entries[is_test]
    fusers = rng.choice(n_users, size=max(1, int(forget_users_frac * n_users)), replace=False)
    cand = np.flatnonzero(np.isin(train[:, 0], fusers) & (train[:, 2] == 1))
    forget = np.sort(rng.choice(cand, size=max(1, int(forget_frac * len(cand))), replace=False))
    return ImplicitData(n_users, n_items, train, test, forget, prob)


class MFModel(torch.nn.Module):
    """``s_ui = <U_u, V_i> + b_i + c``; ``U``: ``n_users x d``, ``V``: ``n_items x d``."""

    def __init__(self, n_users: int, n_items: int, dim: int, seed: int = 0) -> None:
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.user = torch.nn.Parameter(0.1 * torch.randn(n_users, dim, generator=g))
        self.item = torch.nn.Parameter(0.1 * torch.randn(n_items, dim, generator=g))
        self.item_bias = torch.nn.Parameter(torch.zeros(n_items))
        self.bias = torch.nn.Parameter(torch.zeros(()))

    def forward(self, users: Tensor, items: Tensor) -> Tensor:
        """Scores (logits) for index vectors ``users``, ``items`` (both ``k``) -> ``k``."""
        return (self.user[users] * self.item[items]).sum(-1) + self.item_bias[items] + self.bias

    def flat(self) -> Tensor:
        """All parameters as one vector (``p``), detached copy."""
        return torch.cat([q.detach().reshape(-1) for q in self.parameters()]).clone()

    def load_flat(self, theta: Tensor) -> None:
        """Writes the vector ``theta`` (``p``) into the parameters."""
        k = 0
        with torch.no_grad():
            for q in self.parameters():
                q.copy_(theta[k : k + q.numel()].view_as(q))
                k += q.numel()


@dataclass
class AdamState:
    """The trained optimizer's state as flat vectors (``p``), bias-corrected."""

    m_hat: Tensor
    v_hat: Tensor
    batch_size: int
    lam: float


def _entries(data: np.ndarray) -> tuple[Tensor, Tensor, Tensor]:
    t = torch.as_tensor(data)
    return t[:, 0], t[:, 1], t[:, 2].to(torch.float32)


def _data_loss(model: MFModel, entries: np.ndarray) -> Tensor:
    u, i, y = _entries(entries)
    return torch.nn.functional.binary_cross_entropy_with_logits(model(u, i), y)


def _grad(model: MFModel, entries: np.ndarray) -> Tensor:
    """Flat gradient (``p``) of the mean data loss on ``entries`` (no regularizer)."""
    model.zero_grad()
    loss = _data_loss(model, entries)
    grads = torch.autograd.grad(loss, list(model.parameters()), allow_unused=True)
    return torch.cat(
        [
            (g if g is not None else torch.zeros_like(q)).reshape(-1)
            for g, q in zip(grads, model.parameters(), strict=True)
        ]
    )


def train_mf(
    n_users: int,
    n_items: int,
    entries: np.ndarray,
    dim: int = 8,
    epochs: int = 30,
    batch_size: int = 512,
    lr: float = 0.02,
    lam: float = 1e-4,
    seed: int = 0,
) -> tuple[MFModel, AdamState]:
    """Minibatch Adam on ``J`` (mean BCE + ``lam/2 ||theta||^2``); returns the model and
    Adam's bias-corrected moments (the only state AdaSRU needs besides the forgetting data).
    ``entries``: ``n x 3`` ``(user, item, y)``."""
    if len(entries) == 0:
        raise SolverError("train_mf: no training entries")
    torch.manual_seed(seed)
    model = MFModel(n_users, n_items, dim, seed=seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.999))
    rng = np.random.default_rng(seed)
    for _ in range(epochs):
        perm = rng.permutation(len(entries))
        for s in range(0, len(entries), batch_size):
            batch = entries[perm[s : s + batch_size]]
            opt.zero_grad()
            reg = 0.5 * lam * sum((q**2).sum() for q in model.parameters())
            (_data_loss(model, batch) + reg).backward()
            opt.step()
    ms, vs, step = [], [], 0
    for q in model.parameters():
        st = opt.state[q]
        step = int(st["step"])
        ms.append(st["exp_avg"].reshape(-1))
        vs.append(st["exp_avg_sq"].reshape(-1))
    b1, b2 = 0.9, 0.999
    m_hat = torch.cat(ms) / (1 - b1**step)
    v_hat = torch.cat(vs) / (1 - b2**step)
    return model, AdamState(m_hat.clone(), v_hat.clone(), batch_size, lam)


def retrain(data: ImplicitData, **kw: object) -> MFModel:
    """Gold standard: train from scratch on the remaining entries only."""
    model, _ = train_mf(data.n_users, data.n_items, data.train[data.remaining], **kw)  # type: ignore[arg-type]
    return model


@dataclass
class RemainingEstimate:
    """``g_R* + h_R (theta - theta*)``: ``g0``, ``h``, ``theta0`` are ``p`` vectors."""

    g0: Tensor
    h: Tensor
    theta0: Tensor

    def at(self, theta: Tensor) -> Tensor:
        """Estimated remaining gradient at ``theta`` (``p``)."""
        return self.g0 + self.h * (theta - self.theta0)


def _fisher_diag(model: MFModel, entries: np.ndarray) -> Tensor:
    """Per-entry empirical Fisher diagonal (mean of squared per-entry gradients), ``p``.

    For the MF model each entry touches one user row, one item row, one item bias and the
    global bias, so the per-entry squared gradients are assembled in closed form."""
    u, i, y = _entries(entries)
    with torch.no_grad():
        r = torch.sigmoid(model(u, i)) - y  # d bce / d s
        k = len(entries)
        fu = torch.zeros_like(model.user).index_add_(0, u, (r[:, None] * model.item[i]) ** 2)
        fv = torch.zeros_like(model.item).index_add_(0, i, (r[:, None] * model.user[u]) ** 2)
        fb = torch.zeros_like(model.item_bias).index_add_(0, i, r**2)
        fc = (r**2).sum().reshape(1)
    return torch.cat([fu.reshape(-1), fv.reshape(-1), fb, fc]) / k


def estimate_remaining(
    model: MFModel,
    state: AdamState,
    n_total: int,
    forget: np.ndarray,
    use_first_moment: bool = True,
    curvature_scale: float = 1.0,
) -> RemainingEstimate:
    """Source-free estimate of the remaining gradient and its diagonal curvature (see the
    module docstring). ``forget``: ``n_f x 3`` entries; ``n_total``: ``n``;
    ``curvature_scale`` multiplies the Adam-derived part of ``h_R``."""
    n_f = len(forget)
    n_r = n_total - n_f
    if n_f == 0 or n_r <= 0:
        raise SolverError("estimate_remaining: need 0 < n_f < n")
    theta0 = model.flat()
    g_f = _grad(model, forget)
    g0 = -(n_f / n_r) * (g_f + state.lam * theta0)
    if use_first_moment:
        g0 = g0 + (n_total / n_r) * state.m_hat
    f_f = _fisher_diag(model, forget)
    h = (
        torch.clamp((n_total * state.batch_size * state.v_hat - n_f * f_f) / n_r, min=0.0)
        + state.lam
    )
    return RemainingEstimate(g0, curvature_scale * h + state.lam, theta0)


@dataclass
class UnlearnResult:
    """The unlearned model and its path: ``forget_loss[t]`` is ``L_F`` after ``t`` steps."""

    model: MFModel
    steps: int
    forget_loss: list[float] = field(default_factory=list)
    active: int = 0  # steps at which the remaining-gradient constraint was active


def _copy(model: MFModel) -> MFModel:
    new = MFModel(model.user.shape[0], model.item.shape[0], model.user.shape[1])
    new.load_flat(model.flat())
    return new


def constrained_direction(g_f: Tensor, g_r: Tensor, p: Tensor) -> tuple[Tensor, bool]:
    """``argmax <g_f, delta>`` s.t. ``<g_r, delta> <= 0`` in the metric ``diag(p)``, up to
    scale: ``delta = (g_f - mu g_r) / p`` with ``mu = max(0, <g_r, g_f/p> / <g_r, g_r/p>)``.
    All ``p`` vectors; returns ``delta`` and whether the constraint was active."""
    d = g_f / p
    num = float(g_r @ d)
    if num <= 0:
        return d, False
    return d - (num / max(float(g_r @ (g_r / p)), 1e-30)) * (g_r / p), True


def adasru(
    model: MFModel,
    state: AdamState,
    data: ImplicitData,
    target_forget_loss: float = math.inf,
    lr: float = 0.01,
    max_steps: int = 300,
    eps: float = 1e-8,
    use_first_moment: bool = True,
    precondition: bool = True,
    constrain: bool = True,
    remaining: bool = False,
    callback: Callable[[int, MFModel], bool] | None = None,
    curvature_scale: float = 1.0,
) -> UnlearnResult:
    """Gradient-constrained, Adam-preconditioned ascent on ``L_F`` (module docstring).

    ``remaining=True`` replaces the estimate with the true remaining gradient (a method that
    sees ``R``; a baseline); ``callback(step, model)`` is called before each step and stops
    the run by returning True (the benchmark records paths with it); ``constrain=False`` drops the projection (preconditioned
    gradient ascent, the broken variant); ``precondition=False`` uses ``P = 1``. Only
    ``data.train[data.forget]`` is read unless ``remaining=True``."""
    forget = data.train[data.forget]
    out = _copy(model)
    est = estimate_remaining(
        model, state, len(data.train), forget, use_first_moment, curvature_scale
    )
    rest = data.train[data.remaining] if remaining else None
    p = (state.v_hat.sqrt() + eps) if precondition else torch.ones_like(state.v_hat)
    theta = out.flat()
    res = UnlearnResult(out, 0, [float(_data_loss(out, forget).detach())])
    for _ in range(max_steps):
        if res.forget_loss[-1] >= target_forget_loss:
            break
        if callback is not None and callback(res.steps, out):
            break
        g_f = _grad(out, forget)
        if constrain:
            g_r = _grad(out, rest) + state.lam * theta if rest is not None else est.at(theta)
            d, active = constrained_direction(g_f, g_r, p)
            res.active += int(active)
        else:
            d = g_f / p
        rms = float(d.pow(2).mean().sqrt())
        if rms == 0.0:
            break
        theta = theta + lr * d / rms
        out.load_flat(theta)
        res.steps += 1
        res.forget_loss.append(float(_data_loss(out, forget).detach()))
    return res


def gradient_ascent(
    model: MFModel,
    data: ImplicitData,
    target_forget_loss: float = math.inf,
    lr: float = 0.01,
    max_steps: int = 300,
    callback: Callable[[int, MFModel], bool] | None = None,
) -> UnlearnResult:
    """Plain gradient ascent on ``L_F`` with normalized steps (``lr * g / rms(g)``)."""
    forget = data.train[data.forget]
    out = _copy(model)
    theta = out.flat()
    res = UnlearnResult(out, 0, [float(_data_loss(out, forget).detach())])
    for _ in range(max_steps):
        if res.forget_loss[-1] >= target_forget_loss:
            break
        if callback is not None and callback(res.steps, out):
            break
        g = _grad(out, forget)
        theta = theta + lr * g / max(float(g.pow(2).mean().sqrt()), 1e-30)
        out.load_flat(theta)
        res.steps += 1
        res.forget_loss.append(float(_data_loss(out, forget).detach()))
    return res


def finetune_remaining(
    model: MFModel,
    data: ImplicitData,
    epochs: int = 5,
    batch_size: int = 512,
    lr: float = 0.02,
    lam: float = 1e-4,
) -> MFModel:
    """Adam descent on ``J_R`` from ``theta*`` (sees the remaining data; no ascent)."""
    out = _copy(model)
    opt = torch.optim.Adam(out.parameters(), lr=lr)
    rest = data.train[data.remaining]
    rng = np.random.default_rng(0)
    for _ in range(epochs):
        perm = rng.permutation(len(rest))
        for s in range(0, len(rest), batch_size):
            opt.zero_grad()
            reg = 0.5 * lam * sum((q**2).sum() for q in out.parameters())
            (_data_loss(out, rest[perm[s : s + batch_size]]) + reg).backward()
            opt.step()
    return out


def _auc(pos: np.ndarray, neg: np.ndarray) -> float:
    """P(score_pos > score_neg) + 0.5 P(tie), by ranks."""
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    allv = np.concatenate([pos, neg])
    order = allv.argsort(kind="mergesort")
    ranks = np.empty(len(allv))
    ranks[order] = np.arange(1, len(allv) + 1)
    # average ranks over ties
    _, inv, cnt = np.unique(allv, return_inverse=True, return_counts=True)
    sums = np.bincount(inv, weights=ranks)
    ranks = (sums / cnt)[inv]
    return float((ranks[: len(pos)].sum() - len(pos) * (len(pos) + 1) / 2) / (len(pos) * len(neg)))


def forget_metrics(model: MFModel, data: ImplicitData) -> dict[str, float]:
    """``forget_loss`` (``L_F``), ``forget_score`` (mean sigmoid on ``F``) and the
    membership AUC: forgotten positives vs held-out test positives of the same users
    (0.5 = indistinguishable from never-seen interactions)."""
    forget = data.train[data.forget]
    fusers = np.unique(forget[:, 0])
    test_pos = data.test[np.isin(data.test[:, 0], fusers) & (data.test[:, 2] == 1)]
    with torch.no_grad():
        sf_t = model(*_entries(forget)[:2])
        sf, st = sf_t.numpy(), model(*_entries(test_pos)[:2]).numpy()
        lf = float(_data_loss(model, forget))
        score = float(torch.sigmoid(sf_t).mean())
    return {"forget_loss": lf, "forget_score": score, "mia_auc": _auc(sf, st)}


def utility_metrics(model: MFModel, data: ImplicitData, k: int = 10) -> dict[str, float]:
    """Held-out ``auc`` (test positives vs test negatives, per user, averaged) and
    ``recall@k`` (held-out positives among a user's top-k test entries), over users with
    no forgotten entry (the remaining users)."""
    fusers = set(np.unique(data.train[data.forget][:, 0]).tolist())
    with torch.no_grad():
        s = model(*_entries(data.test)[:2]).numpy()
    aucs, recs = [], []
    for u in range(data.n_users):
        if u in fusers:
            continue
        m = data.test[:, 0] == u
        y, su = data.test[m, 2], s[m]
        if y.sum() == 0 or y.sum() == len(y):
            continue
        aucs.append(_auc(su[y == 1], su[y == 0]))
        top = np.argsort(-su)[:k]
        recs.append(y[top].sum() / min(k, y.sum()))
    return {"auc": float(np.mean(aucs)), "recall": float(np.mean(recs))}


def unlearn_to_equal_forgetting(
    run: Callable[[Callable[[int, MFModel], bool]], UnlearnResult],
    data: ImplicitData,
    target_mia: float,
) -> dict[str, float]:
    """Runs an unlearning method (``run(callback) -> UnlearnResult``) until its membership
    AUC falls to ``target_mia`` (the retrained model's: equal forgetting, an evaluation
    protocol that reads the held-out positives, applied alike to every method) and returns
    the forgetting and utility metrics there, with ``steps`` and ``reached`` (1.0 / 0.0)."""
    reached = [False]

    def cb(step: int, m: MFModel) -> bool:
        if forget_metrics(m, data)["mia_auc"] <= target_mia:
            reached[0] = True
            return True
        return False

    res = run(cb)
    if not reached[0]:
        reached[0] = forget_metrics(res.model, data)["mia_auc"] <= target_mia
    return {
        **forget_metrics(res.model, data),
        **utility_metrics(res.model, data),
        "steps": float(res.steps),
        "reached": float(reached[0]),
        "active": float(res.active),
    }
