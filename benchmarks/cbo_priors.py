"""What agent-CBO's structure prior buys, on the ten literature SCMs of the ``cbo`` suite.

Arms, each over the same seeds (paired):

- ``known-graph``: CBO with the task's true exploration sets (the reference);
- ``plain-bo``: one GP over all manipulable variables;
- ``discovery-only``: agent-CBO without an LLM (PC priors only; the offline agent);
- ``correct-prior``: agent-CBO whose LLM believes the true graph
  (``optiforge.agents.agent_cbo.testing.true_graph_llm``: the language prior, the Calibration and the
  Residual Repair agents all answer from the truth) — the ideal LLM;
- ``wrong-prior``: agent-CBO whose LLM insists that every manipulable variable drives the
  outcome directly and that none of the outcome's true parents does (an adversary the
  commit gate has to keep out).

Per task: seeds within tolerance at budget, mean simple regret and the trial at which
each run first got within tolerance. Rows go to ``--out/rows.jsonl`` as they finish, and
a rerun skips the rows already there (resumable).

    python benchmarks/cbo_priors.py [--seeds 3] [--workers 2] [--out runs/cbo-priors]
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

TEN = ("toy_graph", "complete_graph", "psa", "epidemiology", "extended_epidemiology",
       "synthetic2", "independent", "graph4nodes", "dropwave", "alpine2")  # fmt: skip
ARMS = ("known-graph", "plain-bo", "discovery-only", "correct-prior", "wrong-prior")


def _task(name: str) -> Any:
    from optiforge.evals.suites.cbo import CBOBenchmark

    bench = CBOBenchmark()
    for split in ("dev", "test", "heldout"):
        for t in bench.tasks(split):
            if t.name == name:
                return t
    raise KeyError(name)


def wrong_llm(task: Any) -> Any:
    """Believes do(any manipulable) -> target directly and no true parent of the target."""
    from optiforge.agents.agent_cbo.testing import BeliefGraphLLM

    obs = set(task.variables)
    target = task.target
    true = {(a, b) for a, b in task.scm.graph.edges if a in obs and b in obs}
    parents = {a for a, b in true if b == target}
    edges = {e for e in true if e[1] != target} | {(v, target) for v in task.domains}
    absent = {(p, target) for p in parents if p not in task.domains}
    return BeliefGraphLLM(sorted(edges), absent=sorted(absent))


def run_one(
    name: str, arm: str, seed: int, agent_set: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One (task, arm, seed) run; returns a JSON-able row (the task re-measures the trace)."""
    import torch

    torch.set_num_threads(1)
    from optiforge.agents.agent_cbo import AgentCBOConfig, run_agent
    from optiforge.agents.agent_cbo.baselines import known_graph_baseline, plain_bo_baseline
    from optiforge.agents.agent_cbo.testing import true_graph_llm
    from optiforge.agents.kit import RunContext
    from optiforge.evals.suites.cbo.reference import trials_to_tolerance
    from optiforge.runs import ListTracer
    from optiforge.solvers.cbo import CBOTrace

    task = _task(name)
    t0 = time.perf_counter()
    ctx = RunContext(tracer=ListTracer(), seed=seed)
    if arm == "known-graph":
        out = known_graph_baseline(task, ctx, None, AgentCBOConfig())
    elif arm == "plain-bo":
        out = plain_bo_baseline(task, ctx, None, AgentCBOConfig())
    else:
        llm = {"discovery-only": lambda: None, "correct-prior": lambda: true_graph_llm(task),
               "wrong-prior": lambda: wrong_llm(task)}[arm]()  # fmt: skip
        cfg = AgentCBOConfig.model_validate(agent_set or {})
        out = run_agent(task, RunContext(llm=llm, tracer=ctx.tracer, seed=seed), cfg)
    trace = CBOTrace.model_validate(out.best_candidate)
    score = task.evaluate(trace)
    edits = out.extra.get("edits") or []
    return {
        "task": name, "arm": arm, "seed": seed, "verified": score.passed,
        "regret": score.metrics.get("simple_regret"),
        "within": bool(score.metrics.get("within_tolerance")),
        "trials_to_tolerance": trials_to_tolerance(trace, task.true_optimum.value, task.tolerance),
        "n_trials": len(trace.trials), "cost": score.metrics.get("cost"),
        "accepted_llm_edits": sum(d["accepted"] and d["source"] == "llm" for d in edits),
        "rejected_llm_edits": sum(not d["accepted"] and d["source"] == "llm" for d in edits),
        "accepted_data_edits": sum(d["accepted"] and d["source"] == "data" for d in edits),
        "wall_s": round(time.perf_counter() - t0, 2),
    }  # fmt: skip


def table(rows: list[dict[str, Any]], arms: list[str], tasks: Sequence[str] = TEN) -> str:
    """Markdown: per task and arm, within-tolerance count, mean regret, trials to tolerance."""
    import numpy as np

    lines = ["| task | " + " | ".join(arms) + " |", "|---|" + "---|" * len(arms)]
    totals = {a: [0, 0] for a in arms}
    for name in tasks:
        cells = []
        for a in arms:
            rs = sorted((r for r in rows if r["task"] == name and r["arm"] == a),
                        key=lambda r: r["seed"])  # fmt: skip
            if not rs:
                cells.append("-")
                continue
            k = sum(r["within"] for r in rs)
            totals[a][0] += k
            totals[a][1] += len(rs)
            ttt = ",".join(str(r["trials_to_tolerance"] or "-") for r in rs)
            cells.append(f"{k}/{len(rs)} r={np.mean([r['regret'] for r in rs]):.3g} t=[{ttt}]")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines.append("| **within tolerance** | "
                 + " | ".join(f"{k}/{n}" for k, n in totals.values()) + " |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--arms", default=",".join(ARMS))
    ap.add_argument("--tasks", default=",".join(TEN))
    ap.add_argument("--out", type=Path, default=Path("runs/cbo-priors"))
    ap.add_argument("--agent-set", action="append", default=[], metavar="KEY=VALUE",
                    help="AgentCBOConfig override for the agent arms (repeatable)")  # fmt: skip
    args = ap.parse_args()
    agent_set = {}
    for kv in args.agent_set:
        key, sep, value = kv.partition("=")
        if not sep:
            raise SystemExit(f"--agent-set needs KEY=VALUE, got {kv!r}")
        agent_set[key] = json.loads(value) if value[:1] in "0123456789-[{tfn" else value
    arms = [a for a in args.arms.split(",") if a]
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "rows.jsonl"
    done = set()
    if path.exists():
        for line in path.read_text().splitlines():
            r = json.loads(line)
            done.add((r["task"], r["arm"], r["seed"]))
    jobs = [(n, a, s) for n in args.tasks.split(",") for a in arms for s in range(args.seeds)
            if (n, a, s) not in done]  # fmt: skip
    print(f"{len(jobs)} runs to go ({len(done)} already in {path})", flush=True)
    from optiforge.sandboxes import ProcessExecutor

    with ProcessExecutor(args.workers) as ex, path.open("a") as fh:
        futures = [(job, ex.submit(run_one, *job, agent_set)) for job in jobs]
        for i, (job, fut) in enumerate(futures, 1):
            row = fut.result()
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            print(f"[{i}/{len(jobs)}] {job}: regret {row['regret']:.3g} within {row['within']} "
                  f"t={row['trials_to_tolerance']} ({row['wall_s']} s)", flush=True)  # fmt: skip
    rows = [json.loads(x) for x in path.read_text().splitlines()]
    text = table(rows, arms, [t for t in args.tasks.split(",") if t])
    (args.out / "table.md").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
