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

**Sparse averaging with an EMA correction (our rule).** Every ``avg_every`` steps (round
``j``) the two replicas of a stage pick the same random coordinates ``idx`` (a fraction
``fraction`` of the stage's flattened parameters, drawn from a generator both seed with
``(seed, stage, j)``, so no index is sent), each sends its values ``x[idx]`` to the other
with ``isend``/``irecv`` and goes on training. The exchange is completed one round later
(``avg_every`` steps after the send: a fixed delay, so the run is deterministic); then
``c = (recv - sent) / 2`` is how far the sent coordinates were from the pair's average.
Each replica keeps an offset ``o`` (flat, zeros at start): ``z = x + o`` is its running
estimate of the consensus weights, kept in the frame that moves with its own training (the
local steps move ``x`` and ``z`` alike, so a stale average is compensated by the replica's
own progress since the send). On completion ``o[idx] <- beta * o[idx] + (1 - beta) * c``
(the EMA over rounds of the received averages, as offsets), and after every optimizer step
the weights are corrected toward ``z``: ``x <- x + gamma * o``, ``o <- (1 - gamma) * o``.
``beta = 0, gamma = 1`` is plain (stale-compensated) sparse averaging, applied at once.
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


def lookahead(weights: list[torch.Tensor], last_delta: list[torch.Tensor], staleness: int) -> list[torch.Tensor]:  # fmt: skip
    """Predicted weights ``w + staleness * delta`` (new tensors; ``w`` is not changed)."""
    return [w + staleness * d for w, d in zip(weights, last_delta, strict=True)]


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

    def receive(self, idx: torch.Tensor, sent: torch.Tensor, recv: torch.Tensor) -> None:
        """Fold a completed exchange in: ``o[idx] <- beta o[idx] + (1 - beta)(recv - sent)/2``."""
        c = 0.5 * (recv - sent)
        self.offset[idx] = self.beta * self.offset[idx] + (1.0 - self.beta) * c

    @torch.no_grad()
    def apply(self) -> None:
        """One step of correction: ``x += gamma o``, ``o *= 1 - gamma``."""
        self.flat.add_(self.offset, alpha=self.gamma)
        self.offset.mul_(1.0 - self.gamma)
