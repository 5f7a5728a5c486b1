"""The ``train`` suite's problems, each implementing a Protocol of
``optiforge.solvers.train.api`` (digits from scikit-learn's bundled ``load_digits``; the
rest generated here from a seed).

- ``DigitsMLP`` (``classify``): a one-hidden-layer MLP on 8x8 digits.
- ``MatrixSensing`` (``lowrank``): recover a rank-``r`` matrix ``W* (m, n)`` with condition
  number ``cond`` from Gaussian linear measurements ``y_i = <A_i, W*> + noise``; the model
  holds factors ``L (m, r)``, ``R (n, r)``.
- ``GrammarLM`` (``lm``): next-token prediction on text sampled from a small stochastic
  grammar with number agreement and prepositional recursion; an MLP over the last
  ``context`` tokens.
- ``DigitsCleaning`` (``bilevel``): digits whose training labels are corrupted at
  ``noise``; a linear classifier trained on the ``sigmoid(lam)``-weighted loss (one weight
  per training example, ``lam = 0`` at the start: uniform weights), the outer level scored
  on a small clean set.

Each has three disjoint data parts: what methods train on (``batch``/``inner_batch``,
and the clean outer set of the bilevel problem), a validation part (``held="val"``: what
the ``tuned`` baseline's random search scores on) and the held-out test part
(``held="test"``, the default: what the suite scores). ``for_tuning()`` is the same
problem scored on validation data. Methods are never given the held-out part.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass
from functools import cache
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from optiforge.solvers.train.api import Batch
from optiforge.solvers.train.bilevel_digits import SigmoidWeightedCE

Held = Literal["test", "val"]


# ------------------------------------------------------------------------------ digits


@cache
def _digits(data_seed: int, n_train: int, n_val: int) -> tuple[torch.Tensor, ...]:
    """Digits ``x (N, 64)`` in [0, 1] and labels, split at random by ``data_seed`` into
    train ``n_train``, validation ``n_val`` and test (the rest, about 30%)."""
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.tensor(data.data, dtype=torch.float32) / 16.0
    y = torch.tensor(data.target, dtype=torch.long)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(data_seed))
    x, y = x[perm], y[perm]
    a, b = n_train, n_train + n_val
    return x[:a], y[:a], x[a:b], y[a:b], x[b:], y[b:]


@dataclass(frozen=True)
class DigitsMLP:
    """Classify 8x8 digits with an MLP ``64 -> hidden -> 10``; held-out cross-entropy."""

    name: str = "digits-mlp"
    hidden: int = 64
    batch_size: int = 32
    data_seed: int = 0
    held: Held = "test"
    kind: Literal["classify"] = "classify"
    n_train: int = 1000
    n_val: int = 250

    @property
    def description(self) -> str:
        return (f"Classify 8x8 grey-scale handwritten digits (10 classes, 64 pixel features "
                f"in [0, 1], {self.n_train} training images) with a small fully connected "
                f"network 64 -> {self.hidden} (ReLU) -> 10, trained on cross-entropy with "
                f"mini-batches of {self.batch_size}. Scored by cross-entropy on held-out "
                f"images (lower is better).")  # fmt: skip

    def _data(self) -> tuple[torch.Tensor, ...]:
        return _digits(self.data_seed, self.n_train, self.n_val)

    def make_model(self, seed: int) -> nn.Module:
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(64, self.hidden), nn.ReLU(), nn.Linear(self.hidden, 10))

    def batch(self, step: int, gen: torch.Generator) -> Batch:
        x, y = self._data()[:2]
        idx = torch.randint(0, len(y), (self.batch_size,), generator=gen)
        return x[idx], y[idx]

    def losses(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        x, y = batch
        return F.cross_entropy(model(x), y, reduction="none")

    def _held(self) -> tuple[torch.Tensor, torch.Tensor]:
        d = self._data()
        return (d[2], d[3]) if self.held == "val" else (d[4], d[5])

    def evaluate(self, model: nn.Module) -> float:
        x, y = self._held()
        with torch.no_grad():
            return float(F.cross_entropy(model(x), y))

    def accuracy(self, model: nn.Module) -> float:
        x, y = self._held()
        with torch.no_grad():
            return float((model(x).argmax(1) == y).float().mean())

    def for_tuning(self) -> DigitsMLP:
        return dataclasses.replace(self, held="val")


# ------------------------------------------------------------------------ matrix sensing


class Factors(nn.Module):
    """``W = L @ R.T`` with ``L (m, r)``, ``R (n, r)``."""

    def __init__(self, left: torch.Tensor, right: torch.Tensor) -> None:
        super().__init__()
        self.L = nn.Parameter(left)
        self.R = nn.Parameter(right)

    def matrix(self) -> torch.Tensor:
        return self.L @ self.R.T


def factors_matrix(model: nn.Module) -> torch.Tensor:
    """``W = L @ R.T`` of any model holding factors ``L`` and ``R`` (the api's contract for
    a low-rank model; a method may return its own module, e.g. one on a manifold)."""
    left, right = model.L, model.R
    if not isinstance(left, torch.Tensor) or not isinstance(right, torch.Tensor):
        raise TypeError(f"a low-rank model holds tensors L and R, got {type(model).__name__}")
    return left @ right.T


@cache
def _sensing(
    m: int, n: int, rank: int, cond: float, n_meas: int, noise: float, data_seed: int
) -> tuple[torch.Tensor, ...]:
    """``W* (m, n)`` with singular values from 1 down to ``1/cond`` (geometric) scaled to
    unit Frobenius norm; train and validation measurements ``A (N, m, n)``, ``y (N,)``."""
    g = torch.Generator().manual_seed(data_seed)
    u, _ = torch.linalg.qr(torch.randn(m, rank, generator=g))
    v, _ = torch.linalg.qr(torch.randn(n, rank, generator=g))
    s = torch.tensor([cond ** (-k / max(rank - 1, 1)) for k in range(rank)])
    w = u @ torch.diag(s / s.norm()) @ v.T
    a = torch.randn(n_meas, m, n, generator=g)
    y = torch.einsum("kij,ij->k", a, w) + noise * torch.randn(n_meas, generator=g)
    a_val = torch.randn(n_meas // 2, m, n, generator=g)
    y_val = torch.einsum("kij,ij->k", a_val, w) + noise * torch.randn(n_meas // 2, generator=g)
    return w, a, y, a_val, y_val


@dataclass(frozen=True)
class MatrixSensing:
    """Low-rank matrix sensing; the test score is the relative recovery error
    ``||W - W*||_F / ||W*||_F`` (validation: held-out measurements' mean squared error)."""

    name: str = "lowrank-sensing"
    m: int = 30
    n: int = 30
    rank: int = 3
    cond: float = 10.0
    n_meas: int = 600
    noise: float = 0.01
    batch_size: int = 100
    init_scale: float = 0.1
    data_seed: int = 0
    held: Held = "test"
    kind: Literal["lowrank"] = "lowrank"

    @property
    def shape(self) -> tuple[int, int]:
        return (self.m, self.n)

    @property
    def description(self) -> str:
        return (f"Matrix sensing: recover an unknown rank-{self.rank} matrix of shape "
                f"{self.m}x{self.n} (condition number {self.cond:g} on its nonzero singular "
                f"values) from {self.n_meas} noisy random linear measurements <A_i, W>; the "
                f"model holds two factors L ({self.m}x{self.rank}) and R ({self.n}x{self.rank}), "
                f"W = L R^T, initialized small, trained on squared residuals with mini-batches "
                f"of {self.batch_size} measurements. Scored by the relative Frobenius error to "
                f"the true matrix (lower is better).")  # fmt: skip

    def _data(self) -> tuple[torch.Tensor, ...]:
        return _sensing(self.m, self.n, self.rank, self.cond, self.n_meas, self.noise,
                        self.data_seed)  # fmt: skip

    def make_model(self, seed: int) -> nn.Module:
        g = torch.Generator().manual_seed(seed)
        return Factors(self.init_scale * torch.randn(self.m, self.rank, generator=g),
                       self.init_scale * torch.randn(self.n, self.rank, generator=g))  # fmt: skip

    def batch(self, step: int, gen: torch.Generator) -> Batch:
        _, a, y, _, _ = self._data()
        idx = torch.randint(0, len(y), (self.batch_size,), generator=gen)
        return a[idx], y[idx]

    def matrix_losses(self, w: torch.Tensor, batch: Batch) -> torch.Tensor:
        a, y = batch
        return 0.5 * (torch.einsum("kij,ij->k", a, w) - y) ** 2

    def losses(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        return self.matrix_losses(factors_matrix(model), batch)

    def evaluate_matrix(self, w: torch.Tensor) -> float:
        w_star, _, _, a_val, y_val = self._data()
        with torch.no_grad():
            if self.held == "val":
                return float(((torch.einsum("kij,ij->k", a_val, w) - y_val) ** 2).mean())
            return float((w - w_star).norm() / w_star.norm())

    def evaluate(self, model: nn.Module) -> float:
        return self.evaluate_matrix(factors_matrix(model).detach())

    def for_tuning(self) -> MatrixSensing:
        return dataclasses.replace(self, held="val")


# ---------------------------------------------------------------------------- grammar LM

_NOUNS = {"s": ["cat", "dog", "bird", "child", "robot", "teacher"],
          "p": ["cats", "dogs", "birds", "children", "robots", "teachers"]}  # fmt: skip
_VERBS = {"s": ["sees", "likes", "follows", "finds"], "p": ["see", "like", "follow", "find"]}
_INTRANS = {"s": ["sleeps", "runs", "sings"], "p": ["sleep", "run", "sing"]}
_ADJS = ["small", "old", "happy", "red", "quiet"]
_PREPS = ["with", "near", "behind"]
_DETS = {"s": ["the", "a", "this"], "p": ["the", "some", "these"]}
VOCAB: tuple[str, ...] = tuple(sorted(
    {w for d in (_NOUNS, _VERBS, _INTRANS, _DETS) for ws in d.values() for w in ws}
    | set(_ADJS) | set(_PREPS) | {"and", "that", "."}
))  # fmt: skip


def _np(rng: random.Random, num: str, depth: int) -> list[str]:
    out = [rng.choice(_DETS[num])]
    if rng.random() < 0.4:
        out.append(rng.choice(_ADJS))
    out.append(rng.choice(_NOUNS[num]))
    if depth < 2 and rng.random() < 0.25:  # a prepositional phrase (recursion)
        out += [rng.choice(_PREPS), *_np(rng, rng.choice("sp"), depth + 1)]
    return out


def _sentence(rng: random.Random, depth: int = 0) -> list[str]:
    num = rng.choice("sp")
    words = _np(rng, num, depth)
    if rng.random() < 0.35:
        words.append(rng.choice(_INTRANS[num]))
    else:
        words += [rng.choice(_VERBS[num]), *_np(rng, rng.choice("sp"), depth)]
    if depth < 1 and rng.random() < 0.2:
        words += ["and", *_sentence(rng, depth + 1)[:-1]]
    return [*words, "."]


@cache
def grammar_text(seed: int, n_tokens: int) -> torch.Tensor:
    """``n_tokens`` token ids (into ``VOCAB``) of sentences sampled from the grammar."""
    rng = random.Random(seed)
    index = {w: i for i, w in enumerate(VOCAB)}
    out: list[int] = []
    while len(out) < n_tokens:
        out += [index[w] for w in _sentence(rng)]
    return torch.tensor(out[:n_tokens], dtype=torch.long)


class ContextMLP(nn.Module):
    """Next-token logits from the last ``context`` tokens: embed, concatenate, MLP."""

    def __init__(self, vocab: int, context: int, dim: int, hidden: int) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.mlp = nn.Sequential(nn.Linear(context * dim, hidden), nn.Tanh(),
                                 nn.Linear(hidden, vocab))  # fmt: skip

    def forward(self, ctx: torch.Tensor) -> torch.Tensor:
        """``ctx (B, context)`` token ids -> logits ``(B, vocab)``."""
        return self.mlp(self.embed(ctx).flatten(1))  # type: ignore[no-any-return]


@dataclass(frozen=True)
class GrammarLM:
    """A tiny language model on generated text; held-out per-token cross-entropy (nats)."""

    name: str = "grammar-lm"
    context: int = 5
    dim: int = 16
    hidden: int = 96
    batch_size: int = 64
    n_train: int = 20000
    data_seed: int = 0
    held: Held = "test"
    kind: Literal["lm"] = "lm"

    @property
    def description(self) -> str:
        return (f"Language modelling: predict the next word of English-like text generated by a "
                f"small stochastic grammar (vocabulary of {len(VOCAB)} words, subject-verb number "
                f"agreement, nested prepositional phrases; {self.n_train} training tokens). The "
                f"model embeds the last {self.context} words ({self.dim} dims each) and applies an "
                f"MLP with {self.hidden} tanh units; mini-batches of {self.batch_size} positions. "
                f"Scored by held-out per-token cross-entropy in nats (lower is better).")  # fmt: skip

    def _stream(self, part: str) -> torch.Tensor:
        seed, n = {"train": (3 * self.data_seed, self.n_train),
                   "val": (3 * self.data_seed + 1, 4000),
                   "test": (3 * self.data_seed + 2, 6000)}[part]  # fmt: skip
        return grammar_text(10_000 + seed, n)

    def make_model(self, seed: int) -> nn.Module:
        torch.manual_seed(seed)
        return ContextMLP(len(VOCAB), self.context, self.dim, self.hidden)

    def _windows(self, text: torch.Tensor, pos: torch.Tensor) -> Batch:
        offs = torch.arange(self.context)
        return text[pos[:, None] + offs], text[pos + self.context]

    def batch(self, step: int, gen: torch.Generator) -> Batch:
        text = self._stream("train")
        pos = torch.randint(0, len(text) - self.context, (self.batch_size,), generator=gen)
        return self._windows(text, pos)

    def losses(self, model: nn.Module, batch: Batch) -> torch.Tensor:
        ctx, nxt = batch
        return F.cross_entropy(model(ctx), nxt, reduction="none")

    def evaluate(self, model: nn.Module) -> float:
        text = self._stream(self.held)
        ctx, nxt = self._windows(text, torch.arange(len(text) - self.context))
        with torch.no_grad():
            return float(F.cross_entropy(model(ctx), nxt))

    def for_tuning(self) -> GrammarLM:
        return dataclasses.replace(self, held="val")


# --------------------------------------------------------------------- bilevel cleaning


@cache
def _cleaning(data_seed: int, n_train: int, n_clean: int, n_val: int, noise: float) -> tuple[torch.Tensor, ...]:  # fmt: skip
    """Digits split into a training part whose labels are replaced, at rate ``noise``, by
    another class drawn uniformly (``y_noisy``, and which ones were flipped), a small clean
    outer set, a validation part and the test part (the rest)."""
    x, y, xv, yv, xt, yt = _digits(data_seed, n_train + n_clean, n_val)
    g = torch.Generator().manual_seed(data_seed + 7)
    xtr, ytr = x[:n_train], y[:n_train].clone()
    flip = torch.rand(n_train, generator=g) < noise
    shift = torch.randint(1, 10, (n_train,), generator=g)
    ytr[flip] = (ytr[flip] + shift[flip]) % 10
    return xtr, ytr, flip, x[n_train:], y[n_train:], xv, yv, xt, yt


@dataclass(frozen=True)
class DigitsCleaning(SigmoidWeightedCE):
    """Hyper-data cleaning: per-example weights ``sigmoid(lam)`` on a label-corrupted
    training set, chosen so the inner classifier does well on a clean set; held-out
    cross-entropy of the inner classifier."""

    name: str = "digits-cleaning"
    noise: float = 0.4
    n_train: int = 700
    n_clean: int = 100
    n_val: int = 250
    batch_size: int = 64
    data_seed: int = 0
    held: Held = "test"
    kind: Literal["bilevel"] = "bilevel"

    @property
    def description(self) -> str:
        return (f"Data cleaning as a bilevel problem: {self.n_train} training digits (8x8, 10 "
                f"classes) of which about {self.noise:.0%} carry a wrong label, and {self.n_clean} "
                f"clean labelled digits. Inner level: a linear classifier trained on the "
                f"training set's cross-entropy weighted per example by sigmoid(lam_i) (lam = 0 "
                f"at the start: uniform weights); outer level: choose lam so the classifier's "
                f"cross-entropy on the clean set is low. Mini-batches of {self.batch_size}. Scored "
                f"by the classifier's cross-entropy on held-out images (lower is better).")  # fmt: skip

    def _data(self) -> tuple[torch.Tensor, ...]:
        return _cleaning(self.data_seed, self.n_train, self.n_clean, self.n_val, self.noise)

    def make(self, seed: int) -> tuple[nn.Module, torch.Tensor]:
        torch.manual_seed(seed)
        return nn.Linear(64, 10), torch.zeros(self.n_train)

    def inner_batch(self, step: int, gen: torch.Generator) -> Batch:
        x, y = self._data()[:2]
        idx = torch.randint(0, len(y), (self.batch_size,), generator=gen)
        return x[idx], y[idx], idx

    def outer_batch(self, step: int, gen: torch.Generator) -> Batch:
        xc, yc = self._data()[3:5]
        idx = torch.randint(0, len(yc), (self.batch_size,), generator=gen)
        return xc[idx], yc[idx]

    def _held(self) -> tuple[torch.Tensor, torch.Tensor]:
        d = self._data()
        return (d[5], d[6]) if self.held == "val" else (d[7], d[8])

    def evaluate(self, model: nn.Module, lam: torch.Tensor) -> float:
        x, y = self._held()
        with torch.no_grad():
            return float(F.cross_entropy(model(x), y))

    def accuracy(self, model: nn.Module) -> float:
        x, y = self._held()
        with torch.no_grad():
            return float((model(x).argmax(1) == y).float().mean())

    def for_tuning(self) -> DigitsCleaning:
        return dataclasses.replace(self, held="val")
