"""The model and the two asynchronous rules, as plain tensor code (no communication):
weight look-ahead for a pipeline stage and the sparse averaging with its EMA correction
for a data-parallel replica. ``worker.py`` runs them across processes.

**Model.** A fixed-context MLP language model (Bengio-style) cut into two pipeline stages:
``Stage0`` embeds the ``context`` previous tokens (``(B, context)`` ids ->
``(B, context * d)``) and applies ``Linear + GELU`` -> activations ``(B, hidden)`` (the
tensor that crosses the pipeline); ``Stage1`` applies ``Linear + GELU`` and the output
``Linear`` -> logits ``(B, V)``.

**Weight look-ahead (our rule).** A stage with staleness ``tau`` (its gradient for the
minibatch it forwards now is applied ``tau`` optimizer steps later: ``tau = in_flight - 1``
for stage 0 of the 1F1B schedule, 0 for the last stage) runs its forward on predicted
weights ``w_hat = w_t + tau * (w_t - w_{t-1})``: the last optimizer displacement (Adam's
step, which is already momentum-smoothed; data-parallel corrections are not counted in it)
extrapolated over the staleness, i.e. the weights the gradient will be applied to if the
next ``tau`` steps look like the last one (SpecTrain's prediction with the optimizer's own
step instead of ``lr * momentum``). Backward runs on the same stashed ``w_hat`` (weight
stashing, so forward and backward agree); the gradient is applied to the live ``w``.
``lookahead=False`` is PipeDream's plain weight stashing (``w_hat = w_t``).

**Sparse averaging with an EMA correction (our rule).** Each replica keeps an offset
``o`` (flat, zeros at start): ``z = x + o`` is its running estimate of the consensus
weights, kept in the frame that moves with its own training (a local step moves ``x`` and
``z`` alike). Every ``avg_every`` steps (round ``j``) the two replicas of a stage pick the
same random coordinates ``idx`` (a fraction ``fraction`` of the stage's flattened
parameters, from a generator both seed with ``(seed, stage, j)``, so no index is sent);
each sends its estimate ``z[idx]`` to the other with ``isend``/``irecv`` and goes on
training. The exchange is folded in one round later (``avg_every`` steps after the send: a
fixed delay, so the run is deterministic), just before the next round's send:
``c = (recv - sent) / 2`` is how far the sent estimate was from the pair's average, and
``z[idx] <- beta * z[idx] + (1 - beta) * (z[idx] + c)``, i.e. ``o[idx] += (1 - beta) c``:
the EMA (weight ``beta`` on the old estimate) toward the received average, compensated for
staleness by the replica's own progress since the send (``z_now + c = average at send +
(z_now - z_sent)``). After every optimizer step the weights are corrected toward the
estimate: ``x <- x + gamma * o``, ``o <- (1 - gamma) * o`` (``z`` unchanged). Sending ``z``
rather than ``x`` keeps a correction not yet applied from being counted twice.
``beta = 0, gamma = 1`` is plain (stale-compensated) sparse averaging applied at once.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Stage0(nn.Module):
    """Token contexts ``(B, context)`` -> activations ``(B, hidden)``."""

    def __init__(self, vocab: int, context: int, d: int, hidden: int) -> None:
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.fc = nn.Linear(context * d, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.gelu(self.fc(self.emb(x).flatten(1)))


class Stage1(nn.Module):
    """Activations ``(B, hidden)`` -> logits ``(B, V)``."""

    def __init__(self, vocab: int, hidden: int) -> None:
        super().__init__()
        self.fc = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.out(F.gelu(self.fc(h)))


def make_stages(seed: int, vocab: int, context: int, d: int, hidden: int) -> tuple[Stage0, Stage1]:
    """Both stages, initialized from ``seed`` (every replica builds the same ones)."""
    gen_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    stages = Stage0(vocab, context, d, hidden), Stage1(vocab, hidden)
    torch.random.set_rng_state(gen_state)
    return stages


def flatten_params(module: nn.Module) -> torch.Tensor:
    """Move ``module``'s parameters into one flat buffer ``(n,)`` and make each parameter a
    view of it (so averaging and corrections act on the buffer, optimizers on the views)."""
    params = list(module.parameters())
    flat = torch.cat([p.detach().reshape(-1) for p in params])
    off = 0
    for p in params:
        n = p.numel()
        p.data = flat[off : off + n].view_as(p)
        off += n
    return flat


def lookahead_horizon(staleness: int, decay: float = 1.0) -> float:
    """How many last steps the look-ahead adds: ``staleness`` for ``decay = 1``, else
    ``sum_{k<staleness} decay**k`` (the step shrinking like a momentum buffer fed zero-mean
    gradients)."""
    if decay == 1.0:
        return float(staleness)
    return (1.0 - decay**staleness) / (1.0 - decay)


def lookahead(
    weights: list[torch.Tensor], last_delta: list[torch.Tensor], staleness: int, decay: float = 1.0
) -> list[torch.Tensor]:
    """Predicted weights ``w + h * delta`` with ``h = lookahead_horizon(staleness, decay)``
    (new tensors; ``w`` is not changed)."""
    h = lookahead_horizon(staleness, decay)
    return [w + h * d for w, d in zip(weights, last_delta, strict=True)]


def sparse_indices(n: int, fraction: float, seed: int, stage: int, round_: int) -> torch.Tensor:
    """The coordinates both replicas of ``stage`` exchange in round ``round_``: ``max(1,
    round(fraction * n))`` distinct indices of ``range(n)``, sorted, ``(k,)`` int64."""
    k = max(1, round(fraction * n))
    gen = torch.Generator().manual_seed(7_919 * seed + 104_729 * stage + round_)
    return torch.randperm(n, generator=gen)[:k].sort().values


class EMACorrection:
    """The offset ``o`` toward the replica's consensus estimate (see the module docstring).

    ``flat`` ``(n,)`` is the replica's parameter buffer (changed in place by ``apply``)."""

    def __init__(self, flat: torch.Tensor, beta: float, gamma: float) -> None:
        if not (0.0 <= beta < 1.0 and 0.0 < gamma <= 1.0):
            raise ValueError(f"need 0 <= beta < 1 and 0 < gamma <= 1, got {beta}, {gamma}")
        self.flat = flat
        self.beta = beta
        self.gamma = gamma
        self.offset = torch.zeros_like(flat)

    def estimate(self, idx: torch.Tensor) -> torch.Tensor:
        """The consensus estimate ``z[idx] = x[idx] + o[idx]`` (what a replica sends)."""
        return self.flat[idx] + self.offset[idx]

    def receive(self, idx: torch.Tensor, sent: torch.Tensor, recv: torch.Tensor) -> None:
        """Fold a completed exchange in: ``o[idx] += (1 - beta)(recv - sent) / 2``."""
        self.offset[idx] += (1.0 - self.beta) * 0.5 * (recv - sent)

    @torch.no_grad()
    def apply(self) -> None:
        """One step of correction: ``x += gamma o``, ``o *= 1 - gamma``."""
        self.flat.add_(self.offset, alpha=self.gamma)
        self.offset.mul_(1.0 - self.gamma)
