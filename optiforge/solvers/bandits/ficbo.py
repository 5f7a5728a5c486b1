"""FICBO: feedback-informed in-context Bayesian optimization.

The idea (feedback-informed in-context BO): besides the expensive target ``f``, a
problem often offers *cheap auxiliary feedback* -- a low-fidelity simulator, a proxy
metric, a heuristic score, a human rating -- whose sources differ in **access** (which
points they cover), **relevance** (how much they correlate with ``f``) and
**distortion** (monotone warps, scale and offset, even a flipped sign). A small
transformer is pretrained, prior-data-fitted-network style, on functions drawn from a
prior over targets *and* such feedback sources; at run time it reads the history
``(x, y, feedback)`` and candidate points with their cheap feedback, and predicts the
target at the candidates in one forward pass. Because the relation between a source and
the target is inferred in context from the history, an informative source sharpens the
prediction at unevaluated candidates, while a source that the history shows to be
irrelevant or reversed is discounted -- unlike a naive optimizer that trusts the
feedback as if it were the target.

Choices (the issue leaves them open; each is documented here and tested):

- **Prior** (``sample_prior_batch``). Inputs live in ``[0, 1]^d`` with ``d <= 2``
  (``D_MAX``). The target is a zero-mean unit-variance GP sample with an RBF kernel,
  drawn by random Fourier features (``M = 64``) with lengthscale log-uniform in
  ``[0.07, 0.5]``, plus observation noise (none half of the time). Each of
  ``K_MAX = 2`` sources is ``g = s * (warp(rho * f(x + delta) + sqrt(1 - rho^2) * h(x))
  + eps) + c``: ``h`` an independent GP sample (relevance ``|rho|``: informative
  ``[0.8, 1]`` 45 %, partial ``[0.3, 0.8]`` 25 %, irrelevant ``[0, 0.3]`` 30 %; sign
  flipped 30 % of the time: a *misleading* source), ``delta`` a small input shift (30 %),
  ``warp`` one of identity / ``exp(a z)`` / ``tanh(a z) / a`` / ``z + a z^3 / 3`` (all
  increasing), scale ``s`` log-uniform in ``[0.1, 10]``, offset ``c ~ N(0, 2^2)``,
  noise ``eps``. Access: a source is present with probability 0.75 (no feedback at all
  20 % of the time), and each point sees it with a per-source probability (1 for 60 % of
  the sources, else uniform in ``[0.3, 1]``).
- **Encoding** (``encode_tokens``, the same code in training and at run time). One token
  per point: ``x`` zero-padded to ``D_MAX``; the target standardized by the context's
  mean and standard deviation (0 for queries); a context flag; and per source slot its
  z-score over every available value of the set (context and queries; clipped to
  ``+-6``), a rank score in ``[-1, 1]`` (robust to the monotone warps) and an
  availability flag. Sources are told apart by their slot (the slot is the source id).
- **Model** (``FICBONet``). MLP embedding, ``3`` pre-norm transformer encoder layers
  (``d_model = 64``, 4 heads, feed-forward 128); queries attend to the context only,
  the context to itself; a Gaussian head (mean, log-variance) on the query tokens.
  Trained with the PFN objective, the Gaussian negative log-likelihood of query targets
  given the context (contexts of 3 to 40 points, 32 queries; targets clipped to 10
  context standard deviations, as a 3-point context can have a tiny spread), on fresh
  prior samples each step (``train``;
  ``benchmarks/ficbo_pretrain.py`` writes the shipped ``ficbo_weights.pt``: 10,000
  steps of 32 functions, 110k parameters, 0.46 MB, 28 min on one busy CPU core).
- **Optimizer** (``FICBO``). ``n_init`` uniform points (``max(3, d + 2)``), then one
  point per ``ask``: the maximizer of expected improvement under the predicted Gaussian
  over ``n_candidates`` candidates (half uniform, half Gaussian moves around the best
  three points). Feedback at candidates comes from the ``feedback_fn(x) -> {source:
  value}`` option (it must be cheap: it is called on every candidate); feedback at told
  points from ``tell(..., feedback)`` or, when that is absent, from ``feedback_fn``.
  Source names take slots in order of first appearance; a missing name, ``None`` or a
  non-finite value is "no access" at that point. ``gate=True`` adds an explicit guard
  (drop a source when the history's leave-one-out likelihood does not need it); off by
  default, as it measured neutral. ``use_feedback=False`` masks all
  feedback: the same transformer as feedback-free in-context BO (the baseline).
  Histories longer than the 40 points seen in training are read as they are (not
  measured beyond 20 evaluations).
- **Baseline that trusts feedback** (``FeedbackGreedy``, not registered): after the same
  initial design it evaluates the candidate whose feedback is lowest, i.e. it optimizes
  the source as if it were the target.
"""

from __future__ import annotations

import math
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from optiforge.errors import ConfigError
from optiforge.solvers.asktell import Array, AskTellOptimizer, Bounds, Feedback, register

D_MAX = 2
"""Largest input dimension of the prior (and so of the optimizer)."""
K_MAX = 2
"""Number of feedback-source slots the model reads."""
N_FEATURES = 64
"""Random Fourier features per prior function."""
TOKEN_DIM = D_MAX + 2 + 3 * K_MAX
"""Per token: ``x`` (``D_MAX``), standardized ``y``, context flag, per source (z, rank, avail)."""
WEIGHTS = Path(__file__).with_name("ficbo_weights.pt")

FeedbackFn = Callable[[Array], Mapping[str, Any]]


# -- the prior ----------------------------------------------------------------------------
@dataclass
class RFFunctions:
    """``B`` GP samples (RBF kernel, unit variance) as random Fourier features."""

    omega: Tensor  # B x M x d
    phase: Tensor  # B x M
    weight: Tensor  # B x M

    @staticmethod
    def sample(B: int, dim: int, gen: torch.Generator, ls_range: tuple[float, float] = (0.07, 0.5)
               ) -> RFFunctions:  # fmt: skip
        lo, hi = math.log(ls_range[0]), math.log(ls_range[1])
        ls = torch.exp(lo + (hi - lo) * torch.rand(B, 1, 1, generator=gen))
        omega = torch.randn(B, N_FEATURES, dim, generator=gen) / ls
        phase = 2 * math.pi * torch.rand(B, N_FEATURES, generator=gen)
        weight = torch.randn(B, N_FEATURES, generator=gen)
        return RFFunctions(omega, phase, weight)

    def __call__(self, x: Tensor) -> Tensor:
        """``B x N x d`` -> ``B x N``."""
        feats = torch.cos(x @ self.omega.transpose(1, 2) + self.phase[:, None, :])
        return math.sqrt(2.0 / N_FEATURES) * (feats @ self.weight[:, :, None]).squeeze(-1)


@dataclass
class FeedbackSources:
    """``K`` feedback sources for each of ``B`` targets (each field ``B x K`` unless noted)."""

    noise_funcs: list[RFFunctions]  # K independent functions (the irrelevant part)
    rho: Tensor  # signed relevance
    shift: Tensor  # B x K x d input shift
    warp_kind: Tensor  # 0 identity, 1 exp, 2 tanh, 3 cubic
    warp_a: Tensor
    scale: Tensor
    offset: Tensor
    noise_sd: Tensor
    present: Tensor  # bool
    access: Tensor  # probability a point sees the source

    def __call__(self, target: RFFunctions, x: Tensor, gen: torch.Generator | None = None
                 ) -> tuple[Tensor, Tensor]:  # fmt: skip
        """Values and availability at ``x`` (``B x N x d``): two ``B x N x K`` tensors."""
        vals, avail = [], []
        B, N, _ = x.shape
        for k, h in enumerate(self.noise_funcs):
            rho = self.rho[:, k, None]
            z = rho * target(x + self.shift[:, k, None, :]) + torch.sqrt(1 - rho**2) * h(x)
            a = self.warp_a[:, k, None]
            kind = self.warp_kind[:, k, None]
            w = torch.where(kind == 1, torch.exp(a * z), z)
            w = torch.where(kind == 2, torch.tanh(a * z) / a, w)
            w = torch.where(kind == 3, z + a * z**3 / 3, w)
            eps = torch.randn(B, N, generator=gen) if gen is not None else torch.zeros(B, N)
            w = w + self.noise_sd[:, k, None] * eps
            vals.append(self.scale[:, k, None] * w + self.offset[:, k, None])
            u = torch.rand(B, N, generator=gen) if gen is not None else torch.zeros(B, N)
            avail.append(self.present[:, k, None] & (u < self.access[:, k, None]))
        return torch.stack(vals, -1), torch.stack(avail, -1)

    @staticmethod
    def sample(B: int, dim: int, gen: torch.Generator) -> FeedbackSources:
        K = K_MAX

        def u(lo: float, hi: float) -> Tensor:
            return lo + (hi - lo) * torch.rand(B, K, generator=gen)

        kind = torch.rand(B, K, generator=gen)
        mag = torch.where(
            kind < 0.45, u(0.8, 1.0), torch.where(kind < 0.7, u(0.3, 0.8), u(0.0, 0.3))
        )
        sign = torch.where(torch.rand(B, K, generator=gen) < 0.3, -1.0, 1.0)
        shift = torch.randn(B, K, dim, generator=gen) * 0.05
        shift = shift * (torch.rand(B, K, 1, generator=gen) < 0.3)
        warp_kind = torch.randint(0, 4, (B, K), generator=gen)
        warp_a = torch.where(
            warp_kind == 1, u(0.3, 1.0), torch.where(warp_kind == 2, u(0.3, 1.5), u(0.0, 0.5))
        )
        scale = torch.exp(u(math.log(0.1), math.log(10.0)))
        offset = 2.0 * torch.randn(B, K, generator=gen)
        noise_sd = u(0.0, 0.1) * (torch.rand(B, K, generator=gen) < 0.5)
        none = torch.rand(B, 1, generator=gen) < 0.2
        present = (torch.rand(B, K, generator=gen) < 0.75) & ~none
        access = torch.where(torch.rand(B, K, generator=gen) < 0.6, torch.ones(B, K), u(0.3, 1.0))
        funcs = [RFFunctions.sample(B, dim, gen) for _ in range(K)]
        return FeedbackSources(funcs, mag * sign, shift, warp_kind, warp_a, scale, offset,
                               noise_sd, present, access)  # fmt: skip


@dataclass
class PriorBatch:
    """One training batch: ``n_ctx`` context points then queries, per function."""

    x: Tensor  # B x N x d
    y: Tensor  # B x N (noisy target)
    fb: Tensor  # B x N x K feedback values
    avail: Tensor  # B x N x K bool
    n_ctx: int


def sample_prior_batch(
    B: int, n_ctx: int, n_qry: int, dim: int, gen: torch.Generator
) -> PriorBatch:
    """Draw ``B`` targets with their sources and evaluate them at uniform points."""
    N = n_ctx + n_qry
    target = RFFunctions.sample(B, dim, gen)
    sources = FeedbackSources.sample(B, dim, gen)
    x = torch.rand(B, N, dim, generator=gen)
    f = target(x)
    lo, hi = math.log(1e-3), math.log(0.1)
    sd = torch.exp(lo + (hi - lo) * torch.rand(B, 1, generator=gen))
    sd = sd * (torch.rand(B, 1, generator=gen) < 0.5)
    y = f + sd * torch.randn(B, N, generator=gen)
    fb, avail = sources(target, x, gen)
    return PriorBatch(x, y, fb, avail, n_ctx)


@dataclass
class FeedbackTask:
    """A test problem on ``[0, 1]^dim``: target ``f``, one cheap source, and the target's range.

    ``f_min`` / ``f_max`` come from a dense grid (``2001`` points in 1-D, ``201^2`` in 2-D)
    and normalize the simple regret: ``regret(best) = max(best - f_min, 0) / (f_max - f_min)``.
    """

    name: str
    dim: int
    f: Callable[[Array], float]
    feedback: FeedbackFn
    f_min: float
    f_max: float

    def regret(self, best: float) -> float:
        return max(best - self.f_min, 0.0) / (self.f_max - self.f_min)


def _grid(dim: int) -> Array:
    if dim == 1:
        return np.linspace(0, 1, 2001)[:, None]
    g = np.linspace(0, 1, 201)
    return np.stack(np.meshgrid(g, g), -1).reshape(-1, 2)


def prior_task(seed: int, dim: int, rho: float, *, source: str = "aux") -> FeedbackTask:
    """A target drawn from the prior with one always-available source of relevance ``rho``.

    The target and the source's independent part, warp, scale and offset are drawn as in
    training (from a generator seeded ``10**6 + seed``: a stream training never used);
    ``rho`` is fixed (``-0.95`` is a sign-flipped, misleading source; ``0`` an
    irrelevant one), with no input shift and no noise. Evaluation is numpy, float64.
    """
    gen = torch.Generator().manual_seed(10**6 + seed)
    tgt = RFFunctions.sample(1, dim, gen)
    src = FeedbackSources.sample(1, dim, gen)
    om, ph, w = (t[0].double().numpy() for t in (tgt.omega, tgt.phase, tgt.weight))
    h = src.noise_funcs[0]
    hom, hph, hw = (t[0].double().numpy() for t in (h.omega, h.phase, h.weight))
    kind, a = int(src.warp_kind[0, 0]), float(src.warp_a[0, 0])
    scale, offset = float(src.scale[0, 0]), float(src.offset[0, 0])
    c = math.sqrt(2.0 / N_FEATURES)

    def fv(X: Array) -> Array:
        return np.asarray(c * np.cos(X @ om.T + ph) @ w)

    def g(x: Array) -> dict[str, float]:
        X = np.asarray(x, dtype=np.float64).reshape(1, dim)
        z = rho * fv(X)[0] + math.sqrt(max(1 - rho**2, 0.0)) * float(
            (c * np.cos(X @ hom.T + hph) @ hw)[0]
        )
        if kind == 1:
            z = math.exp(a * z)
        elif kind == 2:
            z = math.tanh(a * z) / a
        elif kind == 3:
            z = z + a * z**3 / 3
        return {source: float(scale * z + offset)}

    vals = fv(_grid(dim))
    return FeedbackTask(f"prior-{dim}d-{seed}", dim, lambda x: float(fv(np.reshape(x, (1, dim)))[0]),
                        g, float(vals.min()), float(vals.max()))  # fmt: skip


def forrester_task(*, flipped: bool = False, source: str = "low_fidelity") -> FeedbackTask:
    """Forrester et al. (2007): ``f(x) = (6x - 2)^2 sin(12x - 4)`` on ``[0, 1]`` with its
    classic low-fidelity model ``0.5 f(x) + 10 (x - 0.5) - 5`` as the cheap source.

    The low-fidelity model correlates with ``f`` but its minimizer (``x ~ 0.09``) is not
    ``f``'s (``x ~ 0.757``): trusting it lands at normalized regret ~0.25. ``flipped``
    negates it (a misleading source whose minimizer is ``f``'s maximizer).
    """

    def f(x: Array) -> float:
        t = float(np.reshape(x, -1)[0])
        return (6 * t - 2) ** 2 * math.sin(12 * t - 4)

    def g(x: Array) -> dict[str, float]:
        lo = 0.5 * f(x) + 10 * (float(np.reshape(x, -1)[0]) - 0.5) - 5
        return {source: -lo if flipped else lo}

    vals = np.array([f(x) for x in _grid(1)])
    name = "forrester-flipped" if flipped else "forrester"
    return FeedbackTask(name, 1, f, g, float(vals.min()), float(vals.max()))


# -- encoding and model -------------------------------------------------------------------
def encode_tokens(
    x: Tensor, y_ctx: Tensor, fb: Tensor, avail: Tensor
) -> tuple[Tensor, Tensor, Tensor]:
    """Tokens for a set of ``n`` context points followed by ``m`` queries.

    Args:
        x: ``B x (n + m) x d`` inputs in the unit cube, ``d <= D_MAX``.
        y_ctx: ``B x n`` target values of the context.
        fb: ``B x (n + m) x K`` feedback values (anything where unavailable), ``K <= K_MAX``.
        avail: ``B x (n + m) x K`` availability.

    Returns:
        ``(tokens B x (n+m) x TOKEN_DIM, y_mean B x 1, y_std B x 1)``: the context's
        statistics, to standardize query targets or to undo it on predictions.
    """
    B, N, d = x.shape
    n = y_ctx.shape[1]
    K = fb.shape[-1]
    mean = y_ctx.mean(1, keepdim=True)
    std = y_ctx.std(1, keepdim=True) if n > 1 else torch.ones(B, 1)
    std = torch.where(std > 1e-8, std, torch.ones_like(std))
    tok = torch.zeros(B, N, TOKEN_DIM)
    tok[:, :, :d] = x
    tok[:, :n, D_MAX] = (y_ctx - mean) / std
    tok[:, :n, D_MAX + 1] = 1.0
    av = avail.to(x.dtype)
    cnt = av.sum(1, keepdim=True)  # B x 1 x K
    v = torch.where(avail, fb, torch.zeros_like(fb))
    m = v.sum(1, keepdim=True) / cnt.clamp(min=1)
    var = (torch.where(avail, fb - m, torch.zeros_like(fb)) ** 2).sum(1, keepdim=True) / (
        cnt - 1
    ).clamp(min=1)
    s = torch.sqrt(var)
    s = torch.where(s > 1e-8, s, torch.ones_like(s))
    z = ((fb - m) / s).clamp(-6, 6) * av
    ranks = (
        torch.where(avail, fb, torch.full_like(fb, float("inf"))).argsort(1).argsort(1).to(x.dtype)
    )
    r = (2 * (ranks + 0.5) / cnt.clamp(min=1) - 1) * av
    base = D_MAX + 2
    for k in range(K):
        tok[:, :, base + 3 * k] = z[..., k]
        tok[:, :, base + 3 * k + 1] = r[..., k]
        tok[:, :, base + 3 * k + 2] = av[..., k]
    return tok, mean, std


class FICBONet(nn.Module):
    """PFN-style transformer: context and query tokens in, a Gaussian per query out."""

    def __init__(self, d_model: int = 64, heads: int = 4, layers: int = 3, ff: int = 128) -> None:
        super().__init__()
        self.config = {"d_model": d_model, "heads": heads, "layers": layers, "ff": ff}
        self.embed = nn.Sequential(
            nn.Linear(TOKEN_DIM, d_model), nn.GELU(), nn.Linear(d_model, d_model)
        )
        layer = nn.TransformerEncoderLayer(
            d_model, heads, ff, dropout=0.0, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Sequential(nn.LayerNorm(d_model), nn.Linear(d_model, d_model), nn.GELU(),
                                  nn.Linear(d_model, 2))  # fmt: skip

    def forward(self, tokens: Tensor, n_ctx: int) -> tuple[Tensor, Tensor]:
        """``tokens B x N x TOKEN_DIM`` (the first ``n_ctx`` are the context) -> mean and
        log-variance ``B x (N - n_ctx)`` of the standardized target at the queries."""
        N = tokens.shape[1]
        mask = torch.ones(N, N, dtype=torch.bool)
        mask[:, :n_ctx] = False  # everyone attends to the context, nobody to a query
        h = self.encoder(self.embed(tokens), mask=mask)
        out = self.head(h[:, n_ctx:])
        return out[..., 0], out[..., 1].clamp(-12.0, 8.0)


def prior_nll(net: FICBONet, batch: PriorBatch) -> Tensor:
    """The PFN loss: mean Gaussian NLL of the standardized query targets."""
    n = batch.n_ctx
    tok, mean, std = encode_tokens(batch.x, batch.y[:, :n], batch.fb, batch.avail)
    mu, logvar = net(tok, n)
    # Clipped: a 3-point context can have a tiny spread, and targets hundreds of its standard
    # deviations away would dominate the loss; the tails beyond 10 carry no useful signal.
    target = ((batch.y[:, n:] - mean) / std).clamp(-10.0, 10.0)
    return (0.5 * (logvar + (target - mu) ** 2 * torch.exp(-logvar))).mean()


def train(steps: int, *, seed: int = 0, batch: int = 32, lr: float = 1e-3, n_qry: int = 32,
          max_ctx: int = 40, net: FICBONet | None = None, log_every: int = 0) -> tuple[FICBONet, list[float]]:  # fmt: skip
    """Pretrain on fresh prior batches (AdamW, linear warm-up, cosine decay).

    Each step draws ``d`` in ``{1, 2}`` (probability 0.4 / 0.6) and a context size in
    ``[3, max_ctx]``. Returns the network and the mean loss of each 100-step window.
    """
    gen = torch.Generator().manual_seed(seed)
    net = net or FICBONet()
    opt = torch.optim.AdamW(net.parameters(), lr=lr, weight_decay=1e-4)
    warm = max(1, min(200, steps // 10))

    def lr_at(i: int) -> float:
        if i < warm:
            return (i + 1) / warm
        return 0.5 * (1 + math.cos(math.pi * (i - warm) / max(1, steps - warm)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    losses: list[float] = []
    window: list[float] = []
    t0 = time.perf_counter()
    net.train()
    for i in range(steps):
        dim = 1 if torch.rand(1, generator=gen).item() < 0.4 else 2
        n_ctx = int(torch.randint(3, max_ctx + 1, (1,), generator=gen))
        loss = prior_nll(net, sample_prior_batch(batch, n_ctx, n_qry, dim, gen))
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), 1.0)
        opt.step()
        sched.step()
        window.append(float(loss.detach()))
        if len(window) == 100 or i == steps - 1:
            losses.append(float(np.mean(window)))
            window = []
            if log_every and len(losses) % log_every == 0:
                print(
                    f"step {i + 1}/{steps} loss {losses[-1]:.4f} ({time.perf_counter() - t0:.0f} s)",
                    flush=True,
                )
    net.eval()
    return net, losses


def save_weights(net: FICBONet, path: Path, **meta: Any) -> None:
    """Write the state dict, the architecture and ``meta`` (plain values) to ``path``."""
    torch.save({"config": dict(net.config), "state_dict": net.state_dict(), "meta": meta}, path)


_CACHE: dict[str, FICBONet] = {}


def load_weights(path: Path | str = WEIGHTS) -> FICBONet:
    """The pretrained network (cached per path)."""
    key = str(path)
    if key not in _CACHE:
        if not Path(path).exists():
            raise FileNotFoundError(f"{path} is missing: run benchmarks/ficbo_pretrain.py")
        blob = torch.load(path, map_location="cpu", weights_only=True)
        net = FICBONet(**blob["config"])
        net.load_state_dict(blob["state_dict"])
        net.eval()
        _CACHE[key] = net
    return _CACHE[key]


# -- the optimizers -----------------------------------------------------------------------
class _FeedbackBook:
    """Maps source names to slots and turns feedback mappings into ``n x K_MAX`` arrays."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._warned = False

    def rows(self, feedback: list[Mapping[str, Any]]) -> tuple[Array, Array]:
        vals = np.zeros((len(feedback), K_MAX))
        avail = np.zeros((len(feedback), K_MAX), dtype=bool)
        for i, fb in enumerate(feedback):
            for name, v in fb.items():
                if name not in self.names:
                    if len(self.names) >= K_MAX:
                        if not self._warned:
                            warnings.warn(f"ficbo: reads {K_MAX} feedback sources; ignoring {name!r}",
                                          stacklevel=3)  # fmt: skip
                            self._warned = True
                        continue
                    self.names.append(name)
                try:
                    fv = float(v) if v is not None else math.nan
                except (TypeError, ValueError):
                    fv = math.nan
                if math.isfinite(fv):
                    k = self.names.index(name)
                    vals[i, k], avail[i, k] = fv, True
        return vals, avail


class _CandidateMixin(AskTellOptimizer):
    """Shared by FICBO and the feedback-trusting baseline: unit-cube scaling, candidates."""

    n_init: int
    n_candidates: int
    feedback_fn: FeedbackFn | None

    def _unit(self, X: Array) -> Array:
        assert self.lower is not None and self.upper is not None
        return (X - self.lower) / (self.upper - self.lower)

    def _from_unit(self, U: Array) -> Array:
        assert self.lower is not None and self.upper is not None
        return self.lower + U * (self.upper - self.lower)

    def _candidates(self, centers: Array) -> Array:
        """``n_candidates x d`` unit-cube points: half uniform, half moves around ``centers``."""
        n_u = self.n_candidates // 2
        n_l = self.n_candidates - n_u
        U = self.rng.random((n_u, self.dim))
        c = centers[self.rng.integers(0, len(centers), n_l)]
        scale = np.where(self.rng.random((n_l, 1)) < 0.5, 0.02, 0.1)
        L = np.clip(c + scale * self.rng.standard_normal((n_l, self.dim)), 0.0, 1.0)
        return np.vstack([U, L])

    def _feedback_at(self, U: Array) -> list[Mapping[str, Any]]:
        assert self.feedback_fn is not None
        return [self.feedback_fn(x) for x in self._from_unit(U)]


@register
class FICBO(_CandidateMixin):
    """Feedback-informed in-context BO with the shipped pretrained transformer.

    Args:
        feedback_fn: ``x (d,) -> {source: value}``, the cheap feedback at a point; called
            on every candidate of every ``ask`` (and on told points when ``tell`` carries
            no feedback). Without it, only feedback told with ``tell`` is used.
        use_feedback: False masks all feedback (the same model as feedback-free BO).
        gate: before each model-based ``ask``, drop the sources whose removal does not
            raise the model's leave-one-out NLL of the history (``source_gate``). Off by
            default: it tells relevant from irrelevant sources (kept 21/24 runs vs 6/12)
            but did not change the regret measurably (2-D, irrelevant source, 24
            functions: 0.057 with, 0.062 without, 0.062 without feedback).
        n_init: uniform points before the model is used (default ``d + 2``, at least 3).
        n_candidates: candidates scored per ``ask``.
        weights: a weights file other than the shipped one.
    """

    name = "ficbo"
    max_dim = D_MAX
    summary = ("FICBO: feedback-informed in-context BO; a pretrained transformer conditions on the "
               "history and cheap auxiliary feedback (sources of varying access, relevance, distortion)")  # fmt: skip

    def __init__(self, dim: int, *, bounds: Bounds | None = None, seed: int = 0,
                 feedback_fn: FeedbackFn | None = None, use_feedback: bool = True,
                 n_init: int | None = None, n_candidates: int = 256, gate: bool = False,
                 weights: str | Path | None = None) -> None:  # fmt: skip
        super().__init__(dim, bounds=bounds, seed=seed)
        self.gate = bool(gate)
        self.last_gate: Array | None = None
        """The sources the last ``ask`` read (``(K_MAX,)`` booleans, slots as ``book.names``)."""
        if dim > D_MAX:
            raise ConfigError(f"ficbo: the pretrained prior covers dim <= {D_MAX}, got {dim}")
        if n_candidates < 2:
            raise ConfigError("ficbo: n_candidates must be >= 2")
        self.feedback_fn = feedback_fn
        self.use_feedback = bool(use_feedback)
        self.n_init = int(n_init) if n_init is not None else max(3, dim + 2)
        if self.n_init < 3:
            raise ConfigError("ficbo: n_init must be >= 3 (the model standardizes by the context)")
        self.n_candidates = int(n_candidates)
        self.net = load_weights(weights or WEIGHTS)
        self.book = _FeedbackBook()
        self._fb_vals = np.zeros((0, K_MAX))
        self._fb_avail = np.zeros((0, K_MAX), dtype=bool)
        self.last_prediction: tuple[Array, Array] | None = None
        """Predicted mean and standard deviation (original units) at the last candidates."""

    def _ask(self) -> Array:
        if len(self.y) < self.n_init:
            return self._uniform(1)
        U_ctx = self._unit(self.X)
        order = np.argsort(self.y)[:3]
        U_c = self._candidates(U_ctx[order])
        if self.use_feedback and self.feedback_fn is not None:
            c_vals, c_avail = self.book.rows(self._feedback_at(U_c))
        else:
            c_vals, c_avail = np.zeros((len(U_c), K_MAX)), np.zeros((len(U_c), K_MAX), dtype=bool)
        keep = self.source_gate(U_ctx) if self.gate and self.use_feedback else np.ones(K_MAX, bool)
        self.last_gate = keep
        a_ctx, c_avail = self._fb_avail & keep, c_avail & keep
        mu, sd = self.predict_unit(U_ctx, self.y, self._fb_vals, a_ctx, U_c, c_vals, c_avail)
        best = float(self.y.min())
        z = (best - mu) / sd
        ei = (best - mu) * _norm_cdf(z) + sd * _norm_pdf(z)
        self.last_prediction = (mu, sd)
        return self._from_unit(U_c[int(np.argmax(ei))])[None, :]

    def loo_nll(self, U_ctx: Array, keep: Array) -> float:
        """Mean leave-one-out NLL of the told values (standardized, clipped as in training)
        when the model reads the sources in ``keep`` (``(K_MAX,)`` booleans): ``n``
        sequences, each the other ``n - 1`` points as context and one point as query."""
        n = len(self.y)
        idx = np.array([[j for j in range(n) if j != i] + [i] for i in range(n)])  # n x n
        x = torch.as_tensor(U_ctx[idx], dtype=torch.float32)
        y = torch.as_tensor(self.y[idx], dtype=torch.float32)
        fb = torch.as_tensor(self._fb_vals[idx], dtype=torch.float32)
        av = torch.as_tensor((self._fb_avail & keep)[idx])
        with torch.no_grad():
            return float(prior_nll(self.net, PriorBatch(x, y, fb, av, n - 1)))

    def source_gate(self, U_ctx: Array) -> Array:
        """Which sources to read: starting from all, drop each source whose removal does not
        raise the leave-one-out NLL of the history (a tie drops it). ``(K_MAX,)`` booleans."""
        keep: Array = np.asarray(self._fb_avail.any(0), dtype=bool)
        if len(self.y) < 4 or not keep.any():
            return keep
        current = self.loo_nll(U_ctx, keep)
        for k in np.flatnonzero(keep):
            trial = keep.copy()
            trial[k] = False
            nll = self.loo_nll(U_ctx, trial)
            if nll <= current:
                keep, current = trial, nll
        return keep

    def predict_unit(self, U_ctx: Array, y_ctx: Array, v_ctx: Array, a_ctx: Array,
                     U_q: Array, v_q: Array, a_q: Array) -> tuple[Array, Array]:  # fmt: skip
        """Predicted mean and standard deviation ``(m,)`` of the target at queries ``U_q``
        (``m x d``, unit cube) given the context (``n x d``, ``(n,)``, ``n x K_MAX`` twice)."""
        if not self.use_feedback:
            a_ctx = np.zeros_like(a_ctx)
            a_q = np.zeros_like(a_q)
        x = torch.tensor(np.vstack([U_ctx, U_q]), dtype=torch.float32)[None]
        fb = torch.as_tensor(np.vstack([v_ctx, v_q]), dtype=torch.float32)[None]
        av = torch.as_tensor(np.vstack([a_ctx, a_q]))[None]
        y = torch.tensor(np.asarray(y_ctx), dtype=torch.float32)[None]  # a copy: y may be read-only
        with torch.no_grad():
            tok, mean, std = encode_tokens(x, y, fb, av)
            mu, logvar = self.net(tok, len(y_ctx))
        m = (mu[0] * std[0] + mean[0]).double().numpy()
        s = (torch.exp(0.5 * logvar[0]) * std[0]).double().numpy()
        return m, np.maximum(s, 1e-9)

    def _tell(self, X: Array, y: Array, feedback: Feedback) -> None:
        if feedback is not None:
            fb = list(feedback)
        elif self.feedback_fn is not None:
            fb = [self.feedback_fn(x) for x in X]
        else:
            fb = [{} for _ in X]
        vals, avail = self.book.rows(fb)
        self._fb_vals = np.vstack([self._fb_vals, vals])
        self._fb_avail = np.vstack([self._fb_avail, avail])


class FeedbackGreedy(_CandidateMixin):
    """The naive baseline that trusts the feedback: it minimizes a source as if it were ``f``.

    After ``n_init`` uniform points, each ``ask`` returns the candidate (half uniform,
    half moves around the three points of lowest feedback seen) with the lowest value of
    ``source`` (default: the first name ``feedback_fn`` returns). Not registered: it is a
    reference for FICBO's claim, not a method to use.
    """

    name = "feedback_greedy"
    summary = "minimizes the cheap feedback as if it were the target (FICBO's naive baseline)"

    def __init__(self, dim: int, *, bounds: Bounds | None = None, seed: int = 0,
                 feedback_fn: FeedbackFn | None = None, source: str | None = None,
                 n_init: int | None = None, n_candidates: int = 256) -> None:  # fmt: skip
        super().__init__(dim, bounds=bounds, seed=seed)
        if feedback_fn is None:
            raise ConfigError("feedback_greedy needs feedback_fn")
        self.feedback_fn = feedback_fn
        self.source = source
        self.n_init = int(n_init) if n_init is not None else dim + 2
        self.n_candidates = int(n_candidates)
        self._best_u = np.zeros((0, dim))
        self._best_v = np.zeros(0)

    def _value(self, fb: Mapping[str, Any]) -> float:
        if self.source is None:
            self.source = next(iter(fb))
        v = fb.get(self.source)
        return float(v) if v is not None and math.isfinite(float(v)) else math.inf

    def _ask(self) -> Array:
        if len(self.y) < self.n_init:
            return self._uniform(1)
        centers = (
            self._best_u[np.argsort(self._best_v)[:3]] if len(self._best_v) else self._unit(self.X)
        )
        U_c = self._candidates(centers)
        v = np.array([self._value(fb) for fb in self._feedback_at(U_c)])
        i = int(np.argmin(v))
        self._best_u = np.vstack([self._best_u, U_c[i]])
        self._best_v = np.append(self._best_v, v[i])
        return self._from_unit(U_c[i])[None, :]

    def _tell(self, X: Array, y: Array, feedback: Feedback) -> None:
        pass


CLAIM_METHODS = ("ficbo", "ficbo_no_feedback", "feedback_greedy", "random")
"""The arms of the claim: FICBO, the same model without feedback, the trusting baseline."""


def regret_after(task: FeedbackTask, method: str, budget: int, *, seed: int = 0,
                 n_candidates: int = 256, weights: str | Path | None = None,
                 gate: bool = False) -> float:  # fmt: skip
    """Normalized simple regret of ``method`` (one of ``CLAIM_METHODS``) after ``budget``
    evaluations of ``task.f`` (all methods share the seed, hence the initial design)."""
    return regrets_after(task, method, budget, seed=seed, n_candidates=n_candidates,
                         weights=weights, gate=gate)[0]  # fmt: skip


def regrets_after(task: FeedbackTask, method: str, budget: int, *, seed: int = 0,
                  n_candidates: int = 256, weights: str | Path | None = None,
                  gate: bool = False) -> tuple[float, float]:  # fmt: skip
    """Normalized simple regret over all ``budget`` evaluations and over the ones after the
    initial uniform design (``max(3, d + 2)`` points, the same for every arm of a seed).

    The second number is what the arm itself chose: with a short budget the best of the
    shared random design can hide a misled arm (the trusting baseline scored the same
    regret on Forrester with and without the flipped source, both set by the design).
    """
    from optiforge.solvers.asktell import minimize

    n_design = max(3, task.dim + 2)
    if budget <= n_design:
        raise ConfigError(f"regrets_after: budget must exceed the {n_design}-point design")
    bounds = (np.zeros(task.dim), np.ones(task.dim))
    opt: AskTellOptimizer
    if method in ("ficbo", "ficbo_no_feedback"):
        opt = FICBO(task.dim, bounds=bounds, seed=seed, feedback_fn=task.feedback,
                    use_feedback=method == "ficbo", n_candidates=n_candidates, weights=weights,
                    gate=gate, n_init=n_design)  # fmt: skip
    elif method == "feedback_greedy":
        opt = FeedbackGreedy(task.dim, bounds=bounds, seed=seed, feedback_fn=task.feedback,
                             n_candidates=n_candidates, n_init=n_design)  # fmt: skip
    elif method == "random":
        rng = np.random.default_rng(seed)
        ys = np.array([task.f(rng.random(task.dim)) for _ in range(budget)])
        return task.regret(float(ys.min())), task.regret(float(ys[n_design:].min()))
    else:
        raise ConfigError(f"unknown claim method {method!r}")
    y = minimize(task.f, opt, budget).y
    return task.regret(float(y.min())), task.regret(float(y[n_design:].min()))


def _norm_cdf(z: Array) -> Array:
    return 0.5 * (1.0 + np.vectorize(math.erf)(z / math.sqrt(2.0)))


def _norm_pdf(z: Array) -> Array:
    return np.exp(-0.5 * z**2) / math.sqrt(2 * math.pi)


__all__ = [
    "D_MAX",
    "FICBO",
    "K_MAX",
    "WEIGHTS",
    "FICBONet",
    "FeedbackGreedy",
    "FeedbackSources",
    "PriorBatch",
    "RFFunctions",
    "encode_tokens",
    "load_weights",
    "prior_nll",
    "regret_after",
    "regrets_after",
    "sample_prior_batch",
    "save_weights",
    "train",
]
