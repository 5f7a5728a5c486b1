"""AutoSaddler on the long-horizon saddle tasks: base vs tuned harness, 5 seeds, 95% intervals.

    python benchmarks/saddle_long.py [--seeds 5] [--arms ...]
        [--out runs/saddle-long]

Tuning on saddle/long-dev (8 tasks: 4 gate the patches, 4 feed the mini-batches), measured
on saddle/long-heldout (4 unseen tasks, ``--measure-runs`` runs each). Agent models:

- ``unmatched``: ``UnmatchedShellModel`` (NOT rule-matched: stochastic defects, a defect two
  patches cure together, one no patch cures, one only a code hook cures);
- ``matched``: ``SimulatedShellModel`` (rule-matched sanity check: each defect has its rule).

Arms (proposer / gate), each tuned once per seed (the seed shuffles long-dev into
validation and training tasks and seeds the mini-batches):

- ``rules``: the offline rule library (switches, limits, prompt text AND code hooks),
  paired validation gate with the root-cause tie-break (``SaddlerConfig.cause_gate``: a
  patch that gains no pass but loses none is kept when it removes the failure category it
  was proposed for on the validation items);
- ``rules-pass-gate``: the same with the gate on passes alone (every long task fails under
  the base harness for several reasons at once, so no single patch gains a pass: it stalls);
- ``switches``: the rule library without code hooks (``SWITCH_LIBRARY``): what code adds;
- ``scripted``: the LLM-proposer path with a scripted LLM (``agents.autosaddler.testing.scripted_proposer``);
- ``random-patch`` (stand-in): a random library patch each round, whatever the diagnosis,
  same gate;
- ``accept-all`` (stand-in): the rule library with a gate that accepts every patch.

Every number is a simulated model's (labelled): it measures AutoSaddler's machinery on
harder tasks and defects that are not matched one-to-one to rules, not a real model. Rows
go to OUT/rows.jsonl; the table (mean and a 95% t-interval over seeds of heldout pass@1,
and of tuned - base, paired by seed) to stdout and OUT/table.md.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

from scipy import stats

import optiforge.agents.autosaddler.nodes as saddler_agent
from optiforge.agents.autosaddler import SaddlerConfig, TerminalTarget, measure, tune
from optiforge.agents.autosaddler.targets import SWITCH_LIBRARY, TERMINAL_LIBRARY
from optiforge.agents.autosaddler.testing import scripted_proposer
from optiforge.agents.kit import RunContext
from optiforge.agents.terminal.testing import simulated_llm, unmatched_llm
from optiforge.sandboxes import get_sandbox

MODELS = {"unmatched": unmatched_llm, "matched": simulated_llm}
ARMS = ("rules", "rules-pass-gate", "switches", "scripted", "random-patch", "accept-all")
CONFIG = {
    "iterations": 14,
    "batch": 4,
    "runs": 1,
    "val_tasks": 4,
    "val_runs": 3,
    "workers": 2,
    "cause_gate": True,
}
"""Long tasks need several accepted patches (turns, format, checks, history) and early rounds
are spent on format patches while every episode still hits the turn limit: 14 rounds."""


def random_library(seed: int) -> dict[str, list[Any]]:
    """Every category maps to all library makers in a random order: a random patch."""
    makers = [m for ms in TERMINAL_LIBRARY.values() for m in ms]
    rng = random.Random(seed)
    out = {}
    for cat in TERMINAL_LIBRARY:
        order = list(makers)
        rng.shuffle(order)
        out[cat] = order
    return out


def accept_all(before: dict[str, bool], after: dict[str, bool], margin_sd: float) -> dict[str, Any]:
    v = saddler_agent_gate(before, after, margin_sd)
    return {**v, "accepted": True}


saddler_agent_gate = saddler_agent.validation_gate
_MEMO: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}


def tune_arm(
    model: str, arm: str, seed: int, sb: Any
) -> tuple[Any, TerminalTarget, dict[str, Any]]:
    library = {"switches": SWITCH_LIBRARY, "random-patch": random_library(seed)}.get(arm)
    target = TerminalTarget(MODELS[model], sb, long=True, memo=True, library=library)
    # one step/score memo per agent model across arms and seeds (same files + command, same result)
    shared = _MEMO.setdefault(model, ({}, {}))
    target._steps, target._scores = shared  # noqa: SLF001
    cfg = SaddlerConfig(
        **{**CONFIG, "cause_gate": arm != "rules-pass-gate"},  # type: ignore[arg-type]
        proposer="llm" if arm == "scripted" else "rules",
    )
    llm = scripted_proposer() if arm == "scripted" else None
    saddler_agent.validation_gate = accept_all if arm == "accept-all" else saddler_agent_gate  # type: ignore[assignment]
    try:
        res = tune(target, cfg, RunContext(llm=llm, sandbox=sb, seed=seed))
    finally:
        saddler_agent.validation_gate = saddler_agent_gate  # type: ignore[assignment]
    return target.load(res.best_candidate), target, res.extra


def ci(xs: list[float]) -> str:
    m = statistics.mean(xs)
    if len(xs) < 2:
        return f"{m:.3f}"
    h = stats.t.ppf(0.975, len(xs) - 1) * statistics.stdev(xs) / len(xs) ** 0.5
    return f"{m:.3f} [{m - h:.3f}, {m + h:.3f}]"


def table(rows: list[dict[str, Any]]) -> str:
    out = ["| agent model | arm | seeds | base pass@1 | tuned pass@1 (95% t-CI) | tuned - base (95% t-CI) | sd of tuned | accepted | code hooks kept |",
           "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for model in MODELS:
        base = [r for r in rows if r["model"] == model and r["arm"] == "base"]
        if not base:
            continue
        b = base[0]["pass@1"]
        for arm in ARMS:
            g = [r for r in rows if r["model"] == model and r["arm"] == arm]
            if not g:
                continue
            p = [r["pass@1"] for r in g]
            sd = f"{statistics.stdev(p):.3f}" if len(p) > 1 else "-"
            out.append(f"| {model} | {arm} | {len(g)} | {b:.3f} | {ci(p)} | {ci([x - b for x in p])} | {sd} | "
                       f"{statistics.mean(r['accepted'] for r in g):.1f} | {sum(r['code_hooks'] > 0 for r in g)}/{len(g)} |")  # fmt: skip
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--models", default="unmatched,matched")
    ap.add_argument("--arms", default=",".join(ARMS), help="arms for the unmatched model")
    ap.add_argument("--matched-arms", default="rules,scripted",
                    help="arms for the rule-matched sanity model")  # fmt: skip
    ap.add_argument("--measure-runs", type=int, default=4)
    ap.add_argument("--out", type=Path, default=Path("runs/saddle-long"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    sb = get_sandbox("local")
    rows: list[dict[str, Any]] = []

    def emit(row: dict[str, Any]) -> None:
        rows.append(row)
        with (args.out / "rows.jsonl").open("a") as f:
            f.write(json.dumps(row, default=str) + "\n")

    for model in args.models.split(","):
        target = TerminalTarget(MODELS[model], sb, long=True, memo=True)
        target._steps, target._scores = _MEMO.setdefault(model, ({}, {}))  # noqa: SLF001
        mb = measure(target, target.base(), "heldout", runs=args.measure_runs)
        emit(
            {
                "model": model,
                "arm": "base",
                "seed": None,
                "pass@1": mb["pass@1"],
                "stops": mb["stops"],
            }
        )
        print(f"{model} base: {mb['pass@1']:.3f} {mb['stops']}", flush=True)
        for arm in (args.arms if model == "unmatched" else args.matched_arms).split(","):
            for seed in range(args.seeds):
                t0 = time.process_time()
                tuned, tgt, extra = tune_arm(model, arm, seed, sb)
                m = measure(tgt, tuned, "heldout", runs=args.measure_runs)
                hist = extra["history"]
                emit({"model": model, "arm": arm, "seed": seed, "pass@1": m["pass@1"],
                      "accepted": extra["accepted"], "code_hooks": len(tuned.code_hooks),
                      "harness": tuned.version, "stops": m["stops"], "cpu_s": round(time.process_time() - t0, 1),
                      "patches": [f"{p['target']} {p['op']} {str(p['value'])[:40]}" for r in hist
                                  if r["accepted"] for p in r["patches"]]})  # fmt: skip
                print(f"{model} {arm} seed {seed}: tuned {m['pass@1']:.3f} accepted {extra['accepted']} "
                      f"code hooks {len(tuned.code_hooks)}", flush=True)  # fmt: skip
    text = table(rows)
    print(text)
    (args.out / "table.md").write_text(text + "\n")


if __name__ == "__main__":
    main()
