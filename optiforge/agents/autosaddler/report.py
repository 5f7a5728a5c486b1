"""AutoSaddler's reports: the run's extra, one line per round, measuring a harness and the
metrics table of harness versions, and the ablation table over tuning seeds.

Measuring a harness: pass@1 over runs, pass^k, cost and steps per task.

``measure(target, harness, split, runs)`` runs every task of ``split`` ``runs`` times
(seeds ``EVAL_SEED + r``, never used while tuning) and returns per-task results and:
``pass@1`` (the mean over tasks of the fraction of runs that passed), ``pass^k`` (the
fraction of tasks that passed in all k runs), and per-episode means of turns (steps),
LLM calls and tokens.
"""

from __future__ import annotations

import json
import statistics
from typing import Any

from pydantic import BaseModel, ConfigDict

from optiforge.agents.autosaddler.baselines import ABLATIONS
from optiforge.agents.autosaddler.problem import Target, TunedHarness, run_items


class SaddlerExtra(BaseModel):
    """``AgentOutcome.extra`` of a tuning run."""

    model_config = ConfigDict(extra="forbid")

    accepted: int
    """Patches accepted over the run."""
    history: list[dict[str, Any]]
    """Every round's record (``nodes.iterate``)."""
    base_files: dict[str, str] | None
    """The harness the run started from, as files."""
    train: list[str] | None
    """The training tasks."""
    val: list[str] | None
    """The validation tasks the gate runs."""


def metrics_head(runs: int) -> str:
    return (f"| harness | version | pass@1 | pass^{runs} | turns/task | LLM calls/task | tokens/task |\n"
            "|---|---|---|---|---|---|---|")  # fmt: skip


def metrics_row(name: str, m: dict[str, Any]) -> str:
    """One row of ``metrics_head`` from ``measure``'s result."""
    k = m["runs"]
    return (f"| {name} | {m['harness']} | {m['pass@1']:.3f} | {m[f'pass^{k}']:.3f} | {m['steps']:.2f} | "
            f"{m['llm_calls']:.2f} | {m['tokens']:.0f} |")  # fmt: skip


def round_line(r: dict[str, Any]) -> str:
    """A tuning round in one line: the batch, the root causes, the patch, the gate."""
    patches = "; ".join(
        f"{p['target']} {p['op']} {json.dumps(p['value'])[:60]}" for p in r.get("patches", [])
    )
    diag = ", ".join(f"{k} {v}" for k, v in (r.get("diagnoses") or {}).items())
    verdict = "ACCEPTED" if r.get("accepted") else "rejected" if r.get("patches") else "-"
    return (f"round {r['iteration']}: batch {r['batch_pass']}/{r['batch_n']} passed"
            + (f"; root causes: {diag}" if diag else "") + (f"; patch: {patches}" if patches else "")
            + f"; {r['result']}; {verdict}")  # fmt: skip


def ablation_table(rows: list[dict[str, Any]], runs: int = 3) -> str:
    """Rows ``{"arm", "harness": "base"|"tuned", "pass@1", "pass^k", "steps", "llm_calls",
    "accepted"}`` (one per arm, tuning seed and harness) -> mean (± sd over seeds) per arm."""
    lines = [f"| arm | harness | tuning seeds | pass@1 | pass^{runs} | turns/task | LLM calls/task | patches accepted |",
             "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    arms = [*ABLATIONS, *sorted({r["arm"] for r in rows} - set(ABLATIONS))]
    for arm in arms:
        for name in ("base", "tuned"):
            g = [r for r in rows if r["arm"] == arm and r["harness"] == name]
            if not g:
                continue
            p1 = [r["pass@1"] for r in g]
            sd = f" ± {statistics.stdev(p1):.3f}" if len(p1) > 1 else ""
            acc = (
                f"{statistics.mean(r.get('accepted', 0) for r in g):.1f}"
                if name == "tuned"
                else "-"
            )
            lines.append(f"| {arm} | {name} | {len(g)} | {statistics.mean(p1):.3f}{sd} | "
                         f"{statistics.mean(r.get(f'pass^{runs}', 0) for r in g):.3f} | "
                         f"{statistics.mean(r['steps'] for r in g):.2f} | "
                         f"{statistics.mean(r['llm_calls'] for r in g):.2f} | {acc} |")  # fmt: skip
    return "\n".join(lines)


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
