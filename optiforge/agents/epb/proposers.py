"""EPB's LLM program edits (block I with an LLM): textual feedback built from the
numerical signal (where the mixture diverges from the teacher, which program the router
leans on there, how that program ranks the teacher's choice) and a rewrite of the
blamed program, run only in the sandbox."""

from __future__ import annotations

from typing import Any

import numpy as np

from optiforge.agents.epb.problem import Data
from optiforge.agents.kit import RunContext
from optiforge.agents.kit.ask import code_rewrites

STAGE_NAMES = ("early", "middle", "late")


def feedback(blamed: str, bank: dict[str, str], va: Data, blames: np.ndarray,
             worst: np.ndarray, weights: np.ndarray, trajectories: list[dict[str, Any]],
             examples: int = 3) -> str:  # fmt: skip
    """The numerical signal as text (see the module doc): where the mixture diverges, how
    much of that loss the gradient puts on ``blamed``, how it ranks the teacher's choices
    there, and a few concrete states (the teacher's move beside the program's)."""
    k = va["names"].index(blamed)
    stage = va["stage"][worst]
    where = STAGE_NAMES[min(2, int(3 * float(np.median(stage))))]
    z = va["z"][k][worst]
    teacher = va["teacher"][worst].argmax(-1)
    ranks = []
    for zi, t in zip(z, teacher, strict=True):
        order = np.argsort(-np.nan_to_num(zi, nan=-np.inf))
        ranks.append(int(np.where(order == t)[0][0]) + 1)
    share = float(weights[worst][:, k].mean())
    lines = [f"In the {int(worst.sum())} states where the portfolio diverges most from the teacher "
             f"(mostly the {where} part of the tour), the router gives `{blamed}` weight {share:.2f} "
             f"on average; by the loss gradient it carries {float(blames[worst][:, k].mean()):+.3f} "
             f"of the loss per state there (the most of any program), and it ranks the teacher's "
             f"chosen city {np.mean(ranks):.1f}th on average (1 = its top choice)."]  # fmt: skip
    idx = np.flatnonzero(worst)
    idx = idx[np.argsort(-blames[idx, k])][:examples]
    if len(idx):
        lines.append("Examples (cities by index; coordinates in the unit square):")
    for s in idx:
        i, t = (int(v) for v in va["where"][s])
        xy, tour = np.asarray(trajectories[i]["coords"]), list(trajectories[i]["tour"])
        n, cur = len(tour), tour[t]
        left = [j for j in range(n) if j not in set(tour[: t + 1])]
        by_dist = sorted(left, key=lambda j: float(np.hypot(*(xy[j] - xy[cur]))))
        zi = np.nan_to_num(va["z"][k][s], nan=-np.inf)
        mine, theirs = int(np.argmax(zi)), int(va["teacher"][s].argmax())
        lines.append(f"- step {t + 1} of {n - 1}, at city {cur} ({xy[cur][0]:.2f}, {xy[cur][1]:.2f}), "
                     f"start city {tour[0]}: the teacher goes to {_city(xy, cur, by_dist, theirs)}; "
                     f"`{blamed}` prefers {_city(xy, cur, by_dist, mine)}.")  # fmt: skip
    lines.append(f"Portfolio: {', '.join(bank)}.")
    return "\n".join(lines)


def _city(xy: np.ndarray, cur: int, by_dist: list[int], j: int) -> str:
    d = float(np.hypot(*(xy[j] - xy[cur])))
    return (f"city {j} at ({xy[j][0]:.2f}, {xy[j][1]:.2f}), {d:.2f} away, "
            f"the {by_dist.index(j) + 1}. nearest of {len(by_dist)} unvisited")  # fmt: skip


def llm_rewrites(ctx: RunContext, task: Any, blamed: str, source: str, text: str,
                 n: int = 2) -> tuple[list[str], list[str]]:  # fmt: skip
    """``n`` rewrites of the blamed program: ``(sources, errors)``."""
    assert ctx.llm is not None
    prompt = (f"{task.description}\n\n{text}\n\nRewrite `{blamed}` so it scores the next city the "
              f"way the teacher does in those states. Current program:\n```python\n{source.strip()}\n```\n"
              "Keep `def scores(state)` returning one float per city (higher = better next city). "
              "state has n, coords, dist (n x n), first, current, previous, visited (booleans), step; `math` "
              "is available, no imports. Reply with one python code block.")  # fmt: skip
    return code_rewrites(ctx, prompt, n, "scores(state)")
