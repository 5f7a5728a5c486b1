"""Every agent on its dev split with the embedded model (``--model local``), beside its
baselines, and how often the model's replies had the shape each prompt asks for.

For each agent one ``optiforge eval AGENT --split dev --seeds 1 --model local`` with the
budgets and settings of ``PLAN`` (small enough to finish in minutes on 2 cores). The eval
runs the agent's baselines too, its offline proposer among them (``offline_equivalent``),
so the LLM agent and the heuristic it replaces are measured in the same eval. Every LLM
exchange is recorded to ``benchmarks/cassettes/local/AGENT.jsonl``; ``--replay`` runs the
same evals from those cassettes (no model, the same numbers).

Printed: (1) per agent and task, the verified score of the agent with the local model and
of each baseline; (2) the format-robustness table: per agent and prompt, the replies and
the share that had the required shape:

- schema prompts (``llm_structured`` events): parsed on the first try, and within the
  bounded re-asks;
- code prompts of the search agents (evolve, hawkeye, Kernel Discovery's kernels): LLM
  proposals that passed the agent's own static checks (materialization), and of those
  the share whose evaluation passed;
- AutoREM's reformulations (``autorem_attempt`` events): programs that ran and printed
  their solution line, and those the checker verified.

    .venv/bin/python benchmarks/local_llm_eval.py [--agents evolve,...] [--replay]
        [--out DIR] [--json results.json] [--tables-from DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from optiforge.agents.autorem.events import ATTEMPT_EVENT

HERE = Path(__file__).resolve().parent
CASSETTES = HERE / "cassettes" / "local"

# agent -> (suite, tasks, budget, --set overrides): the dev split, bounded for a 135M model
PLAN: dict[str, tuple[str, str, int, list[str]]] = {
    "evolve": ("funcfit", "quadratic,sine", 12, []),
    "kernel-discovery": ("hdbo", "branin2_in_100", 20,
                         ["agent.kernel_evals_per_refresh=4", "agent.max_code_reasks=1"]),
    "hawkeye": ("kernelarena", "t2t_add,torch_softmax", 4, []),
    "autorem": ("autoro", "autoro-dev-d1-0000-s0,autoro-dev-d3-0002-s0,autoro-dev-d5-0004-s0",
                0, ["agent.max_attempts=2"]),
    "agent-cbo": ("cbo", "toy_graph,independent", 0, []),
}  # fmt: skip
# agents whose baselines hold no offline run of the agent itself (evolve has none; AutoREM's
# offline_equivalent, no-memory, still calls the model): one offline eval of the agent too
OFFLINE_TOO = ("evolve", "autorem")


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def run_eval(agent: str, out: Path, replay: bool, model: str = "local") -> tuple[int, float]:
    suite, tasks, budget, sets = PLAN[agent]
    tape = CASSETTES / f"{agent}.jsonl"
    cmd = [sys.executable, "-m", "optiforge.cli", "eval", agent, "--bench", suite,
           "--split", "dev", "--seeds", "1", "--tasks", tasks, "--model", model,
           "--memory", "none", "--out", str(out)]  # fmt: skip
    if budget:
        cmd += ["--budget", str(budget)]
    for s in sets:
        cmd += ["--set", s]
    if model == "offline":
        cmd += ["--baselines", "seed" if agent == "evolve" else "nominal"]
    elif replay:
        if not tape.is_file():
            raise SystemExit(f"{tape}: no cassette to replay (run without --replay first)")
        cmd += ["--replay", str(tape)]
    else:
        tape.parent.mkdir(parents=True, exist_ok=True)
        tape.unlink(missing_ok=True)
        cmd += ["--record", str(tape)]
    t0 = time.perf_counter()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "200"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode not in (0, 1):
        print(proc.stdout[-2000:], proc.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"{agent}: eval exited {proc.returncode}")
    return proc.returncode, time.perf_counter() - t0


def scores(out: Path, agent: str) -> list[dict[str, Any]]:
    keys = ("task", "method", "model", "best_score", "status", "llm_calls", "tokens",
            "n_evaluations", "wall_s", "higher_is_better", "metric")  # fmt: skip
    rows = [{k: r.get(k) for k in keys} for r in _jsonl(out / "results.jsonl")]
    offline = out.with_name(out.name + "-offline") / "results.jsonl"
    for r in _jsonl(offline):  # the agent's own offline run, labelled as such
        if r.get("method") == agent:
            rows.append({**{k: r.get(k) for k in keys}, "method": f"{agent} (offline)"})
    return rows


def formats(agent: str, out: Path) -> dict[str, dict[str, int]]:
    """Per prompt: replies and how many had the required shape (see the module doc)."""
    table: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for run in sorted((out / "runs").glob(f"*--{agent}--s*")):
        events = _jsonl(run / "events.jsonl")
        # schema prompts: requests are runs of re-asks starting at reask 0
        for e in events:
            if e.get("kind") != "llm_structured":
                continue
            row = table[f"{e['schema']} (JSON schema)"]
            row["replies"] += 1
            if e["reask"] == 0:
                row["requests"] += 1
                row["first_try_ok"] += int(e["ok"])
            row["ok"] += int(e["ok"])
        # code prompts of the search agents: the LLM proposals' fate
        rows = _jsonl(run / "evaluations.jsonl") + _jsonl(run / "rejected.jsonl")
        llm_rows = {r["id"]: r for r in rows if r.get("origin") == "llm"}
        if llm_rows:
            name = {"evolve": "program f(x)", "hawkeye": "Triton kernel",
                    "kernel-discovery": "kernel code (after its re-asks)"}.get(agent, "code")  # fmt: skip
            row = table[name]
            for r in llm_rows.values():
                row["replies"] += 1
                invalid = str(r.get("error") or "").startswith("invalid:")
                row["valid"] += int(not invalid)
                row["scored"] += int(bool(r.get("passed")))
        for e in events:
            if e.get("kind") == ATTEMPT_EVENT and e.get("origin") in ("llm", "repair"):
                row = table[f"counterpart program ({e['origin']})"]
                row["replies"] += 1
                reasons = " ".join(e.get("reasons") or []).lower()
                # the shape asked for: a program that runs and prints its solution line
                broken = ("program failed", "no final json line", "timed out")
                row["valid"] += int(bool(e.get("passed")) or not any(w in reasons for w in broken))
                row["scored"] += int(bool(e.get("passed")))
    return {k: dict(v) for k, v in table.items()}


def print_tables(results: dict[str, Any]) -> None:
    print("\n## Scores (dev split, 1 seed, verified by the harness; model: "
          "SmolLM2-135M-Instruct Q4_1 via --model local)\n")  # fmt: skip
    print("| agent | task | method | model | score | status | LLM calls | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for agent, res in results.items():
        for r in sorted(
            res["scores"], key=lambda r: (r["task"], not r["method"].startswith(agent))
        ):
            score = "failed" if r["best_score"] is None else f"{r['best_score']:.6g}"
            model = r["model"] if r["method"].startswith(agent) else "-"
            print(f"| {agent} | {r['task']} | {r['method']} | {model} | {score} | {r['status']} "
                  f"| {r['llm_calls']} | {r['wall_s']:.0f} |")  # fmt: skip
    print("\n## Format robustness (replies of the local model that had the required shape)\n")
    print("| agent | prompt | replies | shape ok | share | more |")
    print("|---|---|---|---|---|---|")
    for agent, res in results.items():
        for prompt, row in res["formats"].items():
            n = row.get("replies", 0)
            if "first_try_ok" in row:
                ok, more = row["ok"], (f"{row['first_try_ok']}/{row['requests']} requests "
                                       "parsed on the first try")  # fmt: skip
            else:
                ok, more = row.get("valid", 0), f"{row.get('scored', 0)} passed evaluation"
            share = f"{100 * ok / n:.0f}%" if n else "-"
            print(f"| {agent} | {prompt} | {n} | {ok} | {share} | {more} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--agents", default=",".join(PLAN))
    ap.add_argument("--replay", action="store_true", help="answer from the cassettes")
    ap.add_argument("--out", type=Path, default=None, help="keep the eval dirs here")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument(
        "--tables-from", type=Path, default=None, help="only print the tables of these eval dirs"
    )
    args = ap.parse_args()
    base = args.tables_from or args.out or Path(tempfile.mkdtemp(prefix="local_llm_eval-"))
    results: dict[str, Any] = {}
    for agent in args.agents.split(","):
        out = base / agent
        if args.tables_from:
            results[agent] = {"scores": scores(out, agent), "formats": formats(agent, out)}
            continue
        rc, wall = run_eval(agent, out, args.replay)
        if agent in OFFLINE_TOO:
            run_eval(agent, out.with_name(agent + "-offline"), args.replay, model="offline")
        results[agent] = {"exit": rc, "wall_s": wall, "scores": scores(out, agent),
                          "formats": formats(agent, out)}  # fmt: skip
        print(f"{agent:18s} exit {rc}  {wall:7.1f} s", flush=True)
    print_tables(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(f"\neval dirs: {base}")


if __name__ == "__main__":
    main()
