"""Strategy mutation trees: nodes are strategies, a child is a localized edit of one
block of its parent. Each node keeps its rollouts (pulls, summed reward) and its ranking
of the held-in pool; credit is attributed per branch (a subtree's rollouts and rewards).
The tree is plain JSON (``tree.json`` in the run directory; ``optiforge knowevo tree RUN``
renders it)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.stats import spearmanr

Node = dict[str, Any]


def spearman(scores: list[float], measured: dict[str, float]) -> float | None:
    """Spearman correlation of a strategy's held-in scores with the measured fitness."""
    ids = [int(i) for i in measured]
    if len(ids) < 4:
        return None
    xs = [scores[i] for i in ids]
    ys = [measured[str(i)] for i in ids]
    if np.std(xs) < 1e-12:
        return 0.0
    rho = float(spearmanr(xs, ys).statistic)
    return rho if math.isfinite(rho) else 0.0


def subtree(nodes: list[Node], nid: int) -> list[Node]:
    out, frontier = [], [nid]
    while frontier:
        cur = frontier.pop()
        out.append(nodes[cur])
        frontier += [n["id"] for n in nodes if n["parent"] == cur]
    return out


def branch_credit(nodes: list[Node], nid: int) -> tuple[int, float]:
    """``(rollouts, mean reward)`` of the branch rooted at ``nid``."""
    sub = subtree(nodes, nid)
    pulls = sum(n["pulls"] for n in sub)
    return pulls, (sum(n["reward"] for n in sub) / pulls if pulls else 0.0)


def choose(nodes: list[Node], allocation: str, c: float) -> int:
    """The node the next rollout goes to: one never rolled out first (oldest), then UCB1
    on mean reward (``allocation == "ucb"``) or the least rolled out (round robin)."""
    fresh = [n for n in nodes if n["pulls"] == 0]
    if fresh:
        return int(fresh[0]["id"])
    if allocation == "uniform":
        return int(min(nodes, key=lambda n: (n["pulls"], n["id"]))["id"])
    total = sum(n["pulls"] for n in nodes)
    return int(max(nodes, key=lambda n: (n["reward"] / n["pulls"]
                                         + c * math.sqrt(2 * math.log(total) / n["pulls"]),
                                         -n["id"]))["id"])  # fmt: skip


def render(nodes: list[Node]) -> str:
    """The tree as indented text: edit, rollouts, mean reward, branch credit, rho."""
    lines: list[str] = []

    def walk(nid: int, depth: int) -> None:
        n = nodes[nid]
        pulls, credit = branch_credit(nodes, nid)
        mean = f"{n['reward'] / n['pulls']:+.2f}" if n["pulls"] else "   - "
        rho = "-" if n.get("rho") is None else f"{n['rho']:+.3f}"
        mark = " *" if n.get("final") else ""
        lines.append(f"{'  ' * depth}#{nid} [{n['by']}] {n['edit']}  rollouts {n['pulls']} "
                     f"mean {mean}  branch {pulls}/{credit:+.2f}  rho {rho}{mark}")  # fmt: skip
        for child in nodes:
            if child["parent"] == nid:
                walk(int(child["id"]), depth + 1)

    if nodes:
        walk(0, 0)
    return "\n".join(lines)
