"""A constructive attention policy for the TSP, trained POMO-style (Kwon et al. 2020) on
CPU: the ``nco`` suite's black-box teacher.

Encoder: a linear embedding of the coordinates and ``layers`` transformer encoder layers.
Decoder (one step per visited city): a context of the graph embedding, the first and the
last city's embeddings attends over the cities (one multi-head glimpse) and scores them
with a single-head compatibility, clipped by ``10 * tanh`` (Kool et al. 2019); visited
cities are masked. POMO: every city is a start, the shared baseline is the mean tour
length over the starts of the same instance. ``benchmarks/train_tsp_teacher.py`` trains
it and writes ``tsp_teacher.pt`` (shipped, about 0.5 MB).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import torch
from torch import Tensor, nn

CHECKPOINT = Path(__file__).with_name("tsp_teacher.pt")


class TSPPolicy(nn.Module):
    def __init__(self, dim: int = 64, heads: int = 4, layers: int = 3) -> None:
        super().__init__()
        self.dim, self.heads = dim, heads
        self.embed = nn.Linear(2, dim)
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.q_graph, self.q_first, self.q_last = (nn.Linear(dim, dim) for _ in range(3))
        self.kv = nn.Linear(dim, 3 * dim)  # glimpse keys, glimpse values, logit keys
        self.out = nn.Linear(dim, dim)

    def encode(self, coords: Tensor) -> dict[str, Tensor]:
        """``B x n x 2`` -> the per-instance tensors every decoding step reuses."""
        h = self.encoder(self.embed(coords))
        B, n, d = h.shape
        kg, vg, kl = self.kv(h).split(d, -1)
        split = (B, n, self.heads, d // self.heads)
        return {"h": h, "graph": self.q_graph(h.mean(1)), "kg": kg.view(split).transpose(1, 2),
                "vg": vg.view(split).transpose(1, 2), "kl": kl}  # fmt: skip

    def logits(
        self, enc: dict[str, Tensor], first: Tensor, last: Tensor, visited: Tensor
    ) -> Tensor:
        """Masked logits ``B x P x n`` for the next city. ``first``, ``last``: ``B x P``
        city indices; ``visited``: ``B x P x n`` booleans."""
        h = enc["h"]
        B, n, d = h.shape
        P = first.shape[1]
        idx = torch.arange(B)[:, None]
        q = enc["graph"][:, None] + self.q_first(h[idx, first]) + self.q_last(h[idx, last])
        dh = d // self.heads
        qh = q.view(B, P, self.heads, dh).transpose(1, 2)  # B H P dh
        s = qh @ enc["kg"].transpose(-1, -2) / math.sqrt(dh)  # B H P n
        s = s.masked_fill(visited[:, None], float("-inf"))
        g = (torch.softmax(s, -1) @ enc["vg"]).transpose(1, 2).reshape(B, P, d)
        u = self.out(g) @ enc["kl"].transpose(1, 2) / math.sqrt(d)  # B P n
        return (10.0 * torch.tanh(u)).masked_fill(visited, float("-inf"))

    def rollout(self, coords: Tensor, greedy: bool = True, starts: int | None = None,
                ) -> tuple[Tensor, Tensor]:  # fmt: skip
        """POMO rollouts from the first ``starts`` cities (default all): ``(tours B x P x n,
        summed log-probabilities B x P)``."""
        B, n, _ = coords.shape
        P = starts or n
        enc = self.encode(coords)
        first = torch.arange(P)[None].expand(B, P)
        last = first
        visited = torch.zeros(B, P, n, dtype=torch.bool).scatter(2, first[..., None], True)
        tours, logp = [first], torch.zeros(B, P)
        for _ in range(n - 1):
            lp = torch.log_softmax(self.logits(enc, first, last, visited), -1)
            nxt = lp.argmax(-1) if greedy else torch.distributions.Categorical(logits=lp).sample()
            logp = logp + lp.gather(2, nxt[..., None]).squeeze(-1)
            visited = visited.scatter(2, nxt[..., None], True)
            last = nxt
            tours.append(nxt)
        return torch.stack(tours, -1), logp


def tour_lengths(coords: Tensor, tours: Tensor) -> Tensor:
    """``B x P`` lengths of ``B x P x n`` tours."""
    B, P, n = tours.shape
    pts = coords[torch.arange(B)[:, None, None], tours]
    return (pts - pts.roll(-1, dims=2)).norm(dim=-1).sum(-1)


def load_teacher(path: Path = CHECKPOINT) -> TSPPolicy:
    """The shipped teacher (``benchmarks/train_tsp_teacher.py`` writes it)."""
    if not path.is_file():
        raise FileNotFoundError(f"{path} is missing: run benchmarks/train_tsp_teacher.py")
    blob = torch.load(path, map_location="cpu", weights_only=True)
    model = TSPPolicy(**blob["config"])
    model.load_state_dict(blob["state"])
    model.eval()
    return model


@torch.no_grad()
def teacher_step_probs(model: TSPPolicy, coords: np.ndarray, tour: list[int]) -> np.ndarray:
    """The teacher's next-city distribution at every step of ``tour`` (``n-1 x n``): what a
    distilled portfolio is trained to match (the teacher is queried as a black box)."""
    c = torch.tensor(coords, dtype=torch.float32)[None]
    enc = model.encode(c)
    n = len(tour)
    out = np.zeros((n - 1, n))
    visited = torch.zeros(1, 1, n, dtype=torch.bool)
    first = torch.tensor([[tour[0]]])
    visited[0, 0, tour[0]] = True
    for t in range(n - 1):
        last = torch.tensor([[tour[t]]])
        out[t] = torch.softmax(model.logits(enc, first, last, visited), -1)[0, 0].numpy()
        visited[0, 0, tour[t + 1]] = True
    return out
