"""Measuring a harness: pass@1 over runs, pass^k, cost and steps per task.

``measure(target, harness, split, runs)`` runs every task of ``split`` ``runs`` times
(seeds ``EVAL_SEED + r``, never used while tuning) and returns per-task results and:
``pass@1`` (the mean over tasks of the fraction of runs that passed), ``pass^k`` (the
fraction of tasks that passed in all k runs), and per-episode means of turns (steps),
LLM calls and tokens.
"""

from __future__ import annotations

from typing import Any

from optiforge.agents.autosaddler.problem import Target, TunedHarness, run_items

EVAL_SEED = 90_000


def summarize(eps: list[dict[str, Any]], runs: int) -> dict[str, Any]:
    by_task: dict[str, list[bool]] = {}
    for e in eps:
        by_task.setdefault(e["task"], []).append(bool(e["passed"]))
    n = max(len(by_task), 1)
    m = max(len(eps), 1)
    return {
        "tasks": len(by_task),
        "runs": runs,
        "pass@1": sum(sum(v) / len(v) for v in by_task.values()) / n,
        f"pass^{runs}": sum(all(v) for v in by_task.values()) / n,
        "steps": sum(e.get("steps", 0) for e in eps) / m,
        "llm_calls": sum(e.get("llm_calls", 0) for e in eps) / m,
        "tokens": sum(e.get("tokens", 0) for e in eps) / m,
        "per_task": {k: sum(v) for k, v in sorted(by_task.items())},
    }


def measure(
    target: Target, harness: TunedHarness, split: str, runs: int = 3, workers: int = 2
) -> dict[str, Any]:
    items = [(t, EVAL_SEED + r) for t in target.tasks(split) for r in range(runs)]
    eps = run_items(target, harness, items, workers)
    out = summarize(eps, runs)
    out["harness"] = harness.version
    out["stops"] = {
        s: sum(1 for e in eps if e.get("stop") == s)
        for s in sorted({str(e.get("stop")) for e in eps})
    }
    return out
