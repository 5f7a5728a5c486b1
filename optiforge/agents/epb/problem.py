"""The distillation problem: the student's mixture of program distributions, its
divergence from the teacher, the router fit (torch), and the offline program edits.

For one state with teacher distribution ``p`` over cities, program ``k``'s standardized
scores ``z_k`` (unvisited cities only), router features ``f``: the student is
``q = sum_k softmax(W f)_k * softmax(beta_k z_k)`` and the loss is the cross-entropy
``-sum_j p_j log q_j`` (the KL divergence up to the teacher's entropy), averaged over
states. ``W`` (programs x features) and ``log beta`` are fitted by Adam.
"""

from __future__ import annotations

import textwrap
from typing import Any

import numpy as np
import torch

Data = dict[str, Any]
"""Stacked states: ``z`` (K x S x n, NaN where visited), ``features`` (S x F), ``teacher``
(S x n), ``names`` (K), ``stage`` (S, 0..1 tour progress)."""


def stack(names: list[str], runs: list[dict[str, Any]], trajectories: list[dict[str, Any]]) -> Data:
    """Program scores along the teacher's tours (``task.program_scores``) as arrays."""
    zs, feats, teach, stage = [], [], [], []
    for run, traj in zip(runs, trajectories, strict=True):
        n = len(traj["tour"])
        for t in range(n - 1):
            zs.append([[np.nan if v is None else v for v in run["z"][k][t]] for k in names])
            feats.append(run["features"][t])
            teach.append(traj["probs"][t])
            stage.append(t / (n - 1))
    return {"z": np.asarray(zs).transpose(1, 0, 2), "features": np.asarray(feats),
            "teacher": np.asarray(teach), "names": list(names), "stage": np.asarray(stage)}  # fmt: skip


def _mixture(
    data: Data, W: torch.Tensor, log_beta: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    z = torch.tensor(np.nan_to_num(data["z"], nan=0.0), dtype=torch.float32)  # K S n
    mask = torch.tensor(np.isnan(data["z"][0]))  # S n
    f = torch.tensor(data["features"], dtype=torch.float32)
    w = torch.softmax(f @ W.T, -1)  # S K
    logits = (log_beta.exp()[:, None, None] * z).masked_fill(mask[None], float("-inf"))
    dists = torch.softmax(logits, -1)  # K S n
    q = (w.T[..., None] * dists).sum(0)  # S n
    return q, w


def loss(data: Data, W: torch.Tensor, log_beta: torch.Tensor) -> torch.Tensor:
    """Per-state cross-entropy of the mixture against the teacher (S)."""
    q, _ = _mixture(data, W, log_beta)
    p = torch.tensor(data["teacher"], dtype=torch.float32)
    return -(p * torch.log(q.clamp_min(1e-9))).sum(-1)


def fit_router(data: Data, steps: int, lr: float, init: dict[str, Any] | None = None,
               seed: int = 0) -> dict[str, Any]:  # fmt: skip
    """Fit ``W`` and ``beta`` by Adam; ``init`` (a previous fit) warm-starts the programs it
    shares. Returns ``{"router", "beta", "loss"}``."""
    K, F = len(data["names"]), data["features"].shape[1]
    torch.manual_seed(seed)
    W = torch.zeros(K, F)
    log_beta = torch.zeros(K)
    if init:
        for i, k in enumerate(data["names"]):
            if k in init["beta"]:
                j = init["names"].index(k)
                W[i] = torch.tensor(init["router"][j])
                log_beta[i] = float(np.log(init["beta"][k]))
    W.requires_grad_(True)
    log_beta.requires_grad_(True)
    opt = torch.optim.Adam([W, log_beta], lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        ls = loss(data, W, log_beta).mean()
        ls.backward()
        opt.step()
        with torch.no_grad():
            log_beta.clamp_(-3.0, 3.0)
    return {"names": list(data["names"]), "router": W.detach().tolist(),
            "beta": {k: float(np.exp(b)) for k, b in zip(data["names"], log_beta.detach().tolist(), strict=True)},
            "loss": float(loss(data, W.detach(), log_beta.detach()).mean())}  # fmt: skip


def divergence(data: Data, fit: dict[str, Any]) -> np.ndarray:
    """Per-state cross-entropy of a fitted portfolio on ``data`` (e.g. validation states)."""
    with torch.no_grad():
        W = torch.tensor(fit["router"], dtype=torch.float32)
        log_beta = torch.tensor(
            [np.log(fit["beta"][k]) for k in data["names"]], dtype=torch.float32
        )
        return loss(data, W, log_beta).numpy()


def router_weights(data: Data, fit: dict[str, Any]) -> np.ndarray:
    """The router's weights per state (S x K)."""
    with torch.no_grad():
        f = torch.tensor(data["features"], dtype=torch.float32)
        return torch.softmax(f @ torch.tensor(fit["router"], dtype=torch.float32).T, -1).numpy()


def subset(data: Data, names: list[str]) -> Data:
    idx = [data["names"].index(k) for k in names]
    return {**data, "z": data["z"][idx], "names": list(names)}


def blend(name_a: str, src_a: str, name_b: str, src_b: str, weight: float) -> str:
    """A readable program: ``a``'s scores plus ``weight`` times ``b``'s (both standardized).
    Each part keeps its own source inside a function of its own (so blends of blends nest
    without their helper names colliding)."""

    def part(src: str, fn: str) -> str:
        body = textwrap.indent(src.strip(), "    ")
        return f"def {fn}(state):\n{body}\n    return scores(state)\n"

    return (
        f"{part(src_a, '_a')}\n\n{part(src_b, '_b')}\n\n"
        f"def scores(state):\n"
        f'    """{name_a}, blended with {name_b} at weight {weight:g}."""\n'
        f"    a, b = _a(state), _b(state)\n"
        f"    left = [j for j in range(state['n']) if not state['visited'][j]]\n"
        f"    def z(s):\n"
        f"        m = sum(s[j] for j in left) / len(left)\n"
        f"        sd = (sum((s[j] - m) ** 2 for j in left) / len(left)) ** 0.5 + 1e-9\n"
        f"        return [(v - m) / sd for v in s]\n"
        f"    za, zb = z(a), z(b)\n"
        f"    return [x + {weight:g} * y for x, y in zip(za, zb)]\n"
    )
