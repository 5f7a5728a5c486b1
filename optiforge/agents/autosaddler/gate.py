"""Accepting a patch: the paired validation gate and the trajectory-repair ablation.

Both harnesses run the same validation items (task, seed), so results pair up. Under the
null "the patch changes nothing", each discordant pair (one passes, the other fails) is a
fair coin, so ``wins - losses`` has mean 0 and standard deviation ``sqrt(wins + losses)``.
The gate accepts when ``wins - losses >= max(1, ceil(k * sqrt(wins + losses)))`` with
``k = margin_sd`` (default 1: one standard deviation). A patch that flips no pair (e.g.
advice the model ignores, with the same seeds) is always refused; one that changes
nothing but flips ``d`` pairs by chance passes with probability 0.50, 0.25, 0.13, 0.31,
0.19, 0.11 for ``d`` = 1..6 (0.16 for large ``d``). That is a loose gate, chosen because
the validation batches we can afford are small (6 tasks x 4 runs = 24 pairs): with k = 2 a
patch that fixes 3 pairs and breaks none (lead 3 < ceil(2 sqrt 3) = 4) would be refused. Every accepted patch is recorded with its wins and losses, so a reader can redo
the arithmetic.
"""

from __future__ import annotations

import math
from typing import Any


def paired(before: dict[str, bool], after: dict[str, bool]) -> tuple[int, int]:
    """(wins, losses) of ``after`` over ``before`` on their common items."""
    keys = set(before) & set(after)
    wins = sum(1 for k in keys if after[k] and not before[k])
    losses = sum(1 for k in keys if before[k] and not after[k])
    return wins, losses


def needed(wins: int, losses: int, margin_sd: float) -> int:
    """The lead ``wins - losses`` must reach."""
    return max(1, math.ceil(margin_sd * math.sqrt(wins + losses)))


def validation_gate(
    before: dict[str, bool], after: dict[str, bool], margin_sd: float
) -> dict[str, Any]:
    wins, losses = paired(before, after)
    need = needed(wins, losses, margin_sd)
    return {
        "gate": "validation",
        "wins": wins,
        "losses": losses,
        "need": need,
        "before": sum(before.values()),
        "after": sum(after.values()),
        "n": len(after),
        "accepted": wins - losses >= need,
    }


def repair_gate(after_on_failed: dict[str, bool]) -> dict[str, Any]:
    """Accept when the patch fixes any of the failed trajectories it came from."""
    fixed = sum(after_on_failed.values())
    return {"gate": "repair", "fixed": fixed, "n": len(after_on_failed), "accepted": fixed >= 1}
