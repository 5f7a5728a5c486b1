"""EPB with a scripted LLM on the nco heldout tasks: ``optiforge.testing.epb`` reads the
failure cases EPB shows it, writes the critique (the textual gradient) and the program it
prescribes, and boosts with a program fitted to the residual failures, so the run
exercises the LLM path (gradient, rewrite, boost, sandboxed scoring, acceptance on
held-out teacher states) without a model. ``REWRITE`` (one fixed, sensible rewrite) is
kept for ``epb_transfer.py --model scripted``.

    .venv/bin/python benchmarks/epb_scripted.py [--budget 4] [--seed 0] [--tasks tsp20-heldout]

Prints the harness's gap for the scripted run beside the offline run of the same budget.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

REWRITE = '''```python
def scores(state):
    """Nearest neighbour that also takes a city now when its own nearest unvisited
    neighbour is far (it would be stranded)."""
    d, vis, n, c = state["dist"], state["visited"], state["n"], state["current"]
    left = [k for k in range(n) if not vis[k]]
    out = []
    for j in range(n):
        near = min((d[j][k] for k in left if k != j), default=0.0)
        out.append(-d[c][j] + 0.5 * near)
    return out
```'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=int, default=4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tasks", default="tsp20-heldout,tsp50")
    args = ap.parse_args()

    from optiforge.config import RunSettings
    from optiforge.evals.registry import resolve_task
    from optiforge.harness.runner import run_task
    from optiforge.testing.epb import epb_llm

    print("| task | offline gap % | scripted-LLM gap % | LLM edits accepted |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.tasks.split(","):
            task = resolve_task(f"nco/{name}")
            row = []
            for label, llm in (
                ("offline", None),
                ("scripted", epb_llm()),
            ):
                s = run_task("epb", task, RunSettings(seed=args.seed, budget=args.budget, memory="none",
                             model="offline" if llm is None else "scripted"),
                             Path(tmp) / f"{name}-{label}", llm=llm, with_baseline=False)  # fmt: skip
                acc = [a for a in s.extra.get("accepted", []) if "LLM" in str(a)]
                row.append((s.best_score, len(acc)))
            print(f"| {name} | {row[0][0]:.2f} | {row[1][0]:.2f} | {row[1][1]} |", flush=True)
    print(json.dumps({"budget": args.budget, "seed": args.seed}))


if __name__ == "__main__":
    main()
