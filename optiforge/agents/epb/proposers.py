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


def feedback(blamed: str, bank: dict[str, str], va: Data, fit: dict[str, Any],
             worst: np.ndarray, weights: np.ndarray) -> str:  # fmt: skip
    """The numerical signal as text (see the module doc)."""
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
    return (f"In the {int(worst.sum())} states where the portfolio diverges most from the teacher "
            f"(mostly the {where} part of the tour), the router gives `{blamed}` weight {share:.2f} "
            f"on average, and `{blamed}` ranks the teacher's chosen city {np.mean(ranks):.1f}th on "
            f"average (1 = its top choice). Portfolio: {', '.join(bank)}.")  # fmt: skip


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
