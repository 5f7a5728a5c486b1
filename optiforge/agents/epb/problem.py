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
from typing import Any, TypedDict

import numpy as np
import torch

NEW_PROGRAM_OFFSET = 3.0
"""A program new to a warm-started router fit starts with bias logit this far below the
others' lowest (about e^-3 of a share)."""

Data = dict[str, Any]
"""Stacked states: ``z`` (K x S x n, NaN where visited), ``features`` (S x F), ``teacher``
(S x n), ``names`` (K), ``stage`` (S, 0..1 tour progress), ``where`` (S x 2: trajectory
index and step)."""


class EPBState(TypedDict, total=False):
    """EPB's graph state (checkpointed after every node)."""

    atoms: dict[str, str]
    """Heuristic sources programs are built from: the seed bank and LLM-written programs."""
    coefs: dict[str, dict[str, float]]
    """Each program of the portfolio: its weights over atoms' standardized scores."""
    bank: dict[str, str]
    fit: dict[str, Any]
    val: float
    tour: float
    """Mean greedy tour length of the portfolio on the practice instances (the guard)."""
    rounds: int
    history: list[dict[str, Any]]
    errors: list[str]
    tried: list[str]
    """Programs (source hashes) whose edits all failed to help since the bank last changed."""
    done: bool


def stack(names: list[str], runs: list[dict[str, Any]], trajectories: list[dict[str, Any]]) -> Data:
    """Program scores along the teacher's tours (``task.program_scores``) as arrays."""
    zs, feats, teach, stage, where = [], [], [], [], []
    for i, (run, traj) in enumerate(zip(runs, trajectories, strict=True)):
        n = len(traj["tour"])
        for t in range(n - 1):
            zs.append([[np.nan if v is None else v for v in run["z"][k][t]] for k in names])
            feats.append(run["features"][t])
            teach.append(traj["probs"][t])
            stage.append(t / (n - 1))
            where.append((i, t))
    return {"z": np.asarray(zs).transpose(1, 0, 2), "features": np.asarray(feats),
            "teacher": np.asarray(teach), "names": list(names), "stage": np.asarray(stage),
            "where": np.asarray(where)}  # fmt: skip


def _mixture(
    data: Data, W: torch.Tensor, log_beta: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The mixture ``q`` (S x n), the router weights (S x K) and the programs'
    distributions (K x S x n)."""
    z = torch.tensor(np.nan_to_num(data["z"], nan=0.0), dtype=torch.float32)  # K S n
    mask = torch.tensor(np.isnan(data["z"][0]))  # S n
    f = torch.tensor(data["features"], dtype=torch.float32)
    w = torch.softmax(f @ W.T, -1)  # S K
    logits = (log_beta.exp()[:, None, None] * z).masked_fill(mask[None], float("-inf"))
    dists = torch.softmax(logits, -1)  # K S n
    q = (w.T[..., None] * dists).sum(0)  # S n
    return q, w, dists


def loss(data: Data, W: torch.Tensor, log_beta: torch.Tensor) -> torch.Tensor:
    """Per-state cross-entropy of the mixture against the teacher (S)."""
    q, _, _ = _mixture(data, W, log_beta)
    p = torch.tensor(data["teacher"], dtype=torch.float32)
    return -(p * torch.log(q.clamp_min(1e-9))).sum(-1)


def fit_router(data: Data, steps: int, lr: float, init: dict[str, Any] | None = None,
               seed: int = 0, only: list[str] | None = None) -> dict[str, Any]:  # fmt: skip
    """Fit ``W`` and ``beta`` by Adam; ``init`` (a previous fit) warm-starts the programs it
    shares; ``only``: train just these programs' rows and sharpness, the others stay as
    ``init`` has them (a stagewise boost). Returns ``{"router", "beta", "loss"}``."""
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
            else:  # a new program starts with little router weight (feature 0 is the bias),
                # so the warm start begins near the previous fit's loss instead of a 1/K share
                W[i, 0] = float(np.min(np.asarray(init["router"])[:, 0])) - NEW_PROGRAM_OFFSET
    W.requires_grad_(True)
    log_beta.requires_grad_(True)
    opt = torch.optim.Adam([W, log_beta], lr=lr)
    frozen = torch.tensor([only is not None and k not in only for k in data["names"]])
    for _ in range(steps):
        opt.zero_grad()
        ls = loss(data, W, log_beta).mean()
        ls.backward()
        if bool(frozen.any()):  # zero gradients leave Adam's moments, hence the rows, unmoved
            assert W.grad is not None and log_beta.grad is not None
            W.grad[frozen] = 0.0
            log_beta.grad[frozen] = 0.0
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


def blame(data: Data, fit: dict[str, Any]) -> np.ndarray:
    """Each program's share of the loss per state (S x K), from the loss gradient: with
    mixture ``q``, router weights ``w`` and program distributions ``d_k``, moving router
    mass towards program k changes the state's cross-entropy by
    ``1 - sum_j p_j d_kj / q_j`` (the gradient along the simplex), so its blame is
    ``w_k (1 - sum_j p_j d_kj / q_j)``: positive when k pulls probability away from the
    teacher's choices in a state where the router leans on it. Blames sum to 0 per state."""
    with torch.no_grad():
        W = torch.tensor(fit["router"], dtype=torch.float32)
        log_beta = torch.tensor(
            [np.log(fit["beta"][k]) for k in data["names"]], dtype=torch.float32
        )
        q, w, dists = _mixture(data, W, log_beta)
        p = torch.tensor(data["teacher"], dtype=torch.float32)
        ratio = (p[None] * dists / q.clamp_min(1e-9)[None]).sum(-1)  # K S
        return (w.T * (1 - ratio)).T.numpy()


def mixture(data: Data, fit: dict[str, Any]) -> np.ndarray:
    """The portfolio's next-city distribution per state (S x n)."""
    with torch.no_grad():
        W = torch.tensor(fit["router"], dtype=torch.float32)
        log_beta = torch.tensor(
            [np.log(fit["beta"][k]) for k in data["names"]], dtype=torch.float32
        )
        return _mixture(data, W, log_beta)[0].numpy()


def router_weights(data: Data, fit: dict[str, Any]) -> np.ndarray:
    """The router's weights per state (S x K)."""
    with torch.no_grad():
        f = torch.tensor(data["features"], dtype=torch.float32)
        return torch.softmax(f @ torch.tensor(fit["router"], dtype=torch.float32).T, -1).numpy()


def subset(data: Data, names: list[str]) -> Data:
    idx = [data["names"].index(k) for k in names]
    return {**data, "z": data["z"][idx], "names": list(names)}


def combo_source(coefs: dict[str, float], atoms: dict[str, str], doc: str) -> str:
    """A readable program: the weighted sum of the named atoms' standardized scores. Each
    atom (a seed heuristic, or a program an LLM wrote) keeps its source inside a function
    of its own; a blend of blends stays one flat sum over atoms."""
    names = sorted(coefs, key=lambda k: -abs(coefs[k]))
    if len(names) == 1 and abs(coefs[names[0]] - 1.0) < 1e-12:
        return atoms[names[0]]
    parts = []
    for i, k in enumerate(names):
        body = textwrap.indent(atoms[k].strip(), "    ")
        parts.append(f"def _{i}(state):  # {k}\n{body}\n    return scores(state)\n")
    terms = ", ".join(f"({coefs[k]:g}, z(_{i}(state)))" for i, k in enumerate(names))
    return (
        "\n\n".join(parts) + "\n\n"
        f"def scores(state):\n"
        f'    """{doc}"""\n'
        f"    left = [j for j in range(state['n']) if not state['visited'][j]]\n"
        f"    def z(s):\n"
        f"        m = sum(s[j] for j in left) / len(left)\n"
        f"        sd = (sum((s[j] - m) ** 2 for j in left) / len(left)) ** 0.5 + 1e-9\n"
        f"        return [(v - m) / sd for v in s]\n"
        f"    parts = [{terms}]\n"
        f"    return [sum(c * s[j] for c, s in parts) for j in range(state['n'])]\n"
    )


def blend(a: dict[str, float], b: dict[str, float], weight: float) -> dict[str, float]:
    """The coefficients of ``a + weight * b`` (over atoms); near-zero terms dropped."""
    out = dict(a)
    for k, v in b.items():
        out[k] = round(out.get(k, 0.0) + weight * v, 4)
    return {k: v for k, v in out.items() if abs(v) > 1e-6} or dict(a)


def describe(coefs: dict[str, float]) -> str:
    """A program's name from its coefficients, e.g. ``nearest-0.25insertion``."""
    names = sorted(coefs, key=lambda k: -abs(coefs[k]))
    head = names[0] if abs(coefs[names[0]] - 1) < 1e-12 else f"{coefs[names[0]]:g}{names[0]}"
    return head + "".join(f"{coefs[k]:+g}{k}" for k in names[1:])
