"""AMORTIX: an amortized graph transformer that decorates a scaffold in one forward pass.

Given a scaffold's atom graph (attachment points ``[*:k]`` are nodes too), the model returns,
for every attachment point, a categorical distribution over ``FRAGMENTS``. At inference the
decoration is the per-point argmax: one forward pass, **no oracle call**. Training is
reinforcement learning on the shipped training scaffolds with an RDKit oracle
(``molecules.Oracle``); the held-out scaffolds are never trained on.

Model (``GraphTransformerPolicy``), all ours in torch:

- node features: element (C N O S F Cl Br other, attachment point), aromatic, degree,
  implicit+explicit H count, ring membership, formal charge sign; one embedding table per
  feature, summed (``d_model``).
- ``n_layers`` pre-LayerNorm transformer blocks whose attention logits carry a learned
  bias per head and per shortest-path distance (RDKit's topological distance matrix,
  clipped at ``max_distance``; a Graphormer-style spatial encoding), so attention sees the
  bond graph; padding is masked.
- head: an MLP on each attachment node's final state -> ``K = len(FRAGMENTS)`` logits.
  Points are decoded independently given the shared graph context (one pass).

Training (``train``), the issue's comparison:

- ``"grpo"``: for each of ``batch_scaffolds`` scaffolds sample ``group`` decorations;
  advantage ``(r - mean_group) / (std_group + 1e-6)`` within the group (0 when a group's
  rewards are all equal); loss ``-mean(A * log pi(decoration))`` plus
  ``kl_coef * KL(pi || pi_init)`` (exact, per point; ``pi_init`` the frozen initial
  policy). Default ``kl_coef = 0``: measured not needed at this scale (a knob, tested).
- ``"reinforce"``: plain policy gradient with the raw reward as the weight.
- ``"reinforce_baseline"``: raw reward minus the mean over the whole batch (all
  scaffolds together), a global baseline.

Every method sees the same samples per step (``batch_scaffolds * group``), the same Adam
optimizer and learning rate, so the only difference is the advantage. Training oracle calls
are counted (the amortization's up-front cost); inference makes none.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

import numpy as np
import torch
from torch import nn

from optiforge.errors import InvalidTask
from optiforge.solvers.chem.molecules import FRAGMENTS, Oracle, Scaffold

Method = Literal["grpo", "reinforce", "reinforce_baseline"]
METHODS: tuple[Method, ...] = ("grpo", "reinforce", "reinforce_baseline")

ELEMENTS = ("C", "N", "O", "S", "F", "Cl", "Br")
N_ELEMENT = len(ELEMENTS) + 2  # + other, + attachment point
ATTACH = len(ELEMENTS) + 1


@dataclass(frozen=True)
class ScaffoldGraph:
    """A scaffold as tensors.

    ``features``: ``n x 6`` long (element, aromatic, degree, H count, in ring, charge sign);
    ``distance``: ``n x n`` long shortest-path distances clipped at ``max_distance``;
    ``points``: ``n_points`` node indices of the attachment points ``[*:1] ..``.
    """

    features: torch.Tensor
    distance: torch.Tensor
    points: torch.Tensor


@cache
def featurize(scaf: Scaffold, max_distance: int = 8) -> ScaffoldGraph:
    """The graph tensors of ``scaf`` (RDKit parses and computes distances)."""
    from rdkit import Chem

    mol = Chem.MolFromSmiles(scaf.smiles)
    rows = []
    points = {}
    for a in mol.GetAtoms():
        if a.GetAtomicNum() == 0:
            element = ATTACH
            points[a.GetAtomMapNum()] = a.GetIdx()
        else:
            sym = a.GetSymbol()
            element = ELEMENTS.index(sym) if sym in ELEMENTS else len(ELEMENTS)
        charge = int(np.sign(a.GetFormalCharge())) + 1
        rows.append(
            [
                element,
                int(a.GetIsAromatic()),
                min(a.GetDegree(), 4),
                min(a.GetTotalNumHs(), 3),
                int(a.IsInRing()),
                charge,
            ]
        )
    dist = np.asarray(Chem.GetDistanceMatrix(mol))
    dist = np.minimum(dist, max_distance).astype(np.int64)
    return ScaffoldGraph(
        features=torch.tensor(rows, dtype=torch.long),
        distance=torch.from_numpy(dist),
        points=torch.tensor([points[k] for k in range(1, scaf.n_points + 1)], dtype=torch.long),
    )


FEATURE_SIZES = (N_ELEMENT, 2, 5, 4, 2, 3)


@dataclass
class Batch:
    """Padded graphs: ``features`` ``B x n x 6``, ``distance`` ``B x n x n``, ``mask``
    ``B x n`` (True = real atom), ``points`` ``P x 2`` (graph index, node index) of every
    attachment point of the batch in order, ``owner`` ``P`` (graph index of each point)."""

    features: torch.Tensor
    distance: torch.Tensor
    mask: torch.Tensor
    points: torch.Tensor
    owner: torch.Tensor


def make_batch(scaffolds: Sequence[Scaffold], max_distance: int = 8) -> Batch:
    """Pad the graphs of ``scaffolds`` into one ``Batch``."""
    graphs = [featurize(s, max_distance) for s in scaffolds]
    n = max(g.features.shape[0] for g in graphs)
    b = len(graphs)
    feats = torch.zeros(b, n, len(FEATURE_SIZES), dtype=torch.long)
    dist = torch.full((b, n, n), max_distance, dtype=torch.long)
    mask = torch.zeros(b, n, dtype=torch.bool)
    pts = []
    for i, g in enumerate(graphs):
        m = g.features.shape[0]
        feats[i, :m] = g.features
        dist[i, :m, :m] = g.distance
        mask[i, :m] = True
        pts += [(i, int(p)) for p in g.points]
    points = torch.tensor(pts, dtype=torch.long)
    return Batch(feats, dist, mask, points, points[:, 0].clone())


class _Block(nn.Module):
    def __init__(self, d: int, heads: int, n_dist: int) -> None:
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.out = nn.Linear(d, d)
        self.dist_bias = nn.Embedding(n_dist, heads)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x: torch.Tensor, dist: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        h = self.heads
        q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, h, d // h).permute(2, 0, 3, 1, 4)
        logits = q @ k.transpose(-1, -2) / math.sqrt(d // h)  # B x h x n x n
        logits = logits + self.dist_bias(dist).permute(0, 3, 1, 2)
        logits = logits.masked_fill(~mask[:, None, None, :], float("-inf"))
        att = torch.softmax(logits, dim=-1)
        y = (att @ v).transpose(1, 2).reshape(b, n, d)
        x = x + self.out(y)
        return x + self.mlp(self.ln2(x))


class GraphTransformerPolicy(nn.Module):
    """Scaffold graph -> ``P x K`` fragment logits, one row per attachment point."""

    def __init__(
        self, d_model: int = 64, n_layers: int = 3, heads: int = 4, max_distance: int = 8
    ) -> None:
        super().__init__()
        if d_model % heads:
            raise InvalidTask("d_model must be a multiple of heads")
        self.max_distance = max_distance
        self.embed = nn.ModuleList(nn.Embedding(s, d_model) for s in FEATURE_SIZES)
        self.blocks = nn.ModuleList(
            _Block(d_model, heads, max_distance + 1) for _ in range(n_layers)
        )
        self.ln = nn.LayerNorm(d_model)
        self.head = nn.Sequential(
            nn.Linear(d_model, d_model), nn.GELU(), nn.Linear(d_model, len(FRAGMENTS))
        )

    def forward(self, batch: Batch) -> torch.Tensor:
        x = sum(e(batch.features[..., i]) for i, e in enumerate(self.embed))
        assert isinstance(x, torch.Tensor)
        for blk in self.blocks:
            x = blk(x, batch.distance, batch.mask)
        x = self.ln(x)
        return self.head(x[batch.points[:, 0], batch.points[:, 1]])  # P x K

    def logits(self, scaffolds: Sequence[Scaffold]) -> tuple[torch.Tensor, torch.Tensor]:
        """``(P x K logits, P owner index)`` for ``scaffolds``."""
        batch = make_batch(scaffolds, self.max_distance)
        return self(batch), batch.owner


def split_points(values: torch.Tensor, owner: torch.Tensor, n: int) -> list[list[int]]:
    """Group per-point values (``P``) into one list per scaffold (``n`` lists)."""
    out: list[list[int]] = [[] for _ in range(n)]
    for v, o in zip(values.tolist(), owner.tolist(), strict=True):
        out[o].append(int(v))
    return out


@torch.no_grad()
def decode(policy: GraphTransformerPolicy, scaffolds: Sequence[Scaffold]) -> list[list[int]]:
    """Greedy decorations (argmax per point) in one forward pass; no oracle call."""
    policy.eval()
    logits, owner = policy.logits(scaffolds)
    return split_points(logits.argmax(-1), owner, len(scaffolds))


@dataclass
class TrainHistory:
    """Per-step curves of one training run (``steps`` entries each, except ``eval_*``)."""

    reward: list[float] = field(default_factory=list)
    """mean sampled reward"""
    validity: list[float] = field(default_factory=list)
    """fraction of sampled decorations RDKit sanitizes"""
    entropy: list[float] = field(default_factory=list)
    """mean per-point policy entropy (nats) on the step's scaffolds"""
    eval_steps: list[int] = field(default_factory=list)
    eval_reward: list[float] = field(default_factory=list)
    """mean greedy reward on ``eval_scaffolds`` at ``eval_steps``"""
    oracle_calls: int = 0
    """distinct training oracle calls"""


def group_advantages(rewards: torch.Tensor, method: Method) -> torch.Tensor:
    """Advantages for ``rewards`` ``S x G`` (S scaffolds, G samples each) under ``method``."""
    if method == "grpo":
        mean = rewards.mean(dim=1, keepdim=True)
        std = rewards.std(dim=1, keepdim=True, unbiased=False)
        return (rewards - mean) / (std + 1e-6)
    if method == "reinforce":
        return rewards.clone()
    if method == "reinforce_baseline":
        return rewards - rewards.mean()
    raise InvalidTask(f"unknown method {method!r}; one of {METHODS}")


def greedy_reward(
    policy: GraphTransformerPolicy, scaffolds: Sequence[Scaffold], oracle: Oracle
) -> list[float]:
    """Reward of the greedy decoration of each scaffold (scored by ``oracle``)."""
    return [oracle(s, c) for s, c in zip(scaffolds, decode(policy, scaffolds), strict=True)]


def train(
    policy: GraphTransformerPolicy,
    scaffolds: Sequence[Scaffold],
    oracle: Oracle,
    *,
    method: Method = "grpo",
    steps: int = 200,
    batch_scaffolds: int = 8,
    group: int = 16,
    lr: float = 3e-3,
    kl_coef: float = 0.0,
    seed: int = 0,
    eval_scaffolds: Sequence[Scaffold] = (),
    eval_oracle: Oracle | None = None,
    eval_every: int = 20,
) -> TrainHistory:
    """Train ``policy`` in place by RL on ``scaffolds``; see the module docstring.

    ``oracle`` scores the training samples (its ``calls`` grow); ``eval_oracle`` (default a
    fresh one with the same objective) scores the greedy decorations of ``eval_scaffolds``
    every ``eval_every`` steps, for the curves only.
    """
    if method not in METHODS:
        raise InvalidTask(f"unknown method {method!r}; one of {METHODS}")
    if group < 2:
        raise InvalidTask("group must be >= 2")
    gen = torch.Generator().manual_seed(seed)
    rng = np.random.default_rng(seed)
    opt = torch.optim.Adam(policy.parameters(), lr=lr)
    init = None
    if kl_coef > 0:
        import copy

        init = copy.deepcopy(policy).eval()
        for p in init.parameters():
            p.requires_grad_(False)
    eval_oracle = eval_oracle or Oracle(oracle.objective)
    hist = TrainHistory()
    calls0 = oracle.calls
    pool = list(scaffolds)
    for step in range(steps + 1):
        if eval_scaffolds and step % eval_every == 0:
            hist.eval_steps.append(step)
            hist.eval_reward.append(
                float(np.mean(greedy_reward(policy, eval_scaffolds, eval_oracle)))
            )
        if step == steps:
            break
        policy.train()
        chosen = [pool[i] for i in rng.choice(len(pool), size=batch_scaffolds, replace=False)]
        logits, owner = policy.logits(chosen)  # P x K
        logp_all = torch.log_softmax(logits, dim=-1)
        probs = logp_all.exp()
        samples = torch.multinomial(probs.detach(), group, replacement=True, generator=gen)  # P x G
        logp = logp_all.gather(1, samples)  # P x G
        # log pi(decoration) = sum over a scaffold's points: S x G
        seq_logp = torch.zeros(len(chosen), group).index_add(0, owner, logp)
        rewards = torch.zeros(len(chosen), group)
        valid = 0
        for i, s in enumerate(chosen):
            rows = samples[owner == i]  # points x G
            for g in range(group):
                choice = rows[:, g].tolist()
                r = oracle(s, choice)
                rewards[i, g] = r
                valid += int(oracle.is_valid(s, choice))
        adv = group_advantages(rewards, method)
        loss = -(adv * seq_logp).mean()
        if init is not None:
            with torch.no_grad():
                ref = torch.log_softmax(init(make_batch(chosen, policy.max_distance)), dim=-1)
            kl = (probs * (logp_all - ref)).sum(-1).mean()
            loss = loss + kl_coef * kl
        opt.zero_grad()
        loss.backward()
        opt.step()
        hist.reward.append(float(rewards.mean()))
        hist.validity.append(valid / (len(chosen) * group))
        hist.entropy.append(float(-(probs * logp_all).sum(-1).mean().detach()))
    hist.oracle_calls = oracle.calls - calls0
    return hist
