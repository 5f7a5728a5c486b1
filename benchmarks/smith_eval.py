"""SMITH on the procedural suite: the agent and its baselines, offline, with the scripted
tool writer (``optiforge.agents.smith.testing``), and optionally with the embedded model; plus
the student experiment (tools written by one model, used by another).

    .venv/bin/python benchmarks/smith_eval.py [--seeds 3] [--models offline,scripted]
        [--student local] [--out runs/smith-eval]

For every task of the dev and heldout splits, method (smith, templates, no-tools) and
model, the harness's re-measurement: pass@1 accuracy, the build pass rate and the three
axes' means over use rollouts. The seed changes the agent's validation instances and its
LLM sampling, not the episode. ``--student local``: the scripted writer builds each task's
tools into a fresh memory, then the embedded SmolLM2 (``--model local``) runs the task
with that memory and ``build=False``: it only has to call the pooled tools with the right
arguments. Writes ``rows.jsonl`` and prints markdown tables.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any


def _run(
    task_name: str,
    method: str,
    model: str,
    seed: int,
    memory: str = "none",
    agent: dict[str, Any] | None = None,
) -> dict[str, Any]:
    from optiforge.agents.smith.testing import smith_llm
    from optiforge.config import RunSettings
    from optiforge.evals.registry import resolve_task
    from optiforge.harness.runner import run_task

    llm = smith_llm(buggy_first=True) if model == "scripted" else None
    settings = RunSettings(
        seed=seed,
        memory=memory,
        model="scripted" if model == "scripted" else model,
        agent=agent or {},
    )
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        s = run_task("smith", resolve_task(f"procedural/{task_name}"), settings, Path(tmp) / "r",
                     method=method, llm=llm, with_baseline=False)  # fmt: skip
    m = s.verification.get("metrics") or {}
    return {"task": task_name, "method": method, "model": model, "seed": seed, "status": s.status,
            "accuracy": s.best_score, "build_pass_rate": m.get("build_pass_rate"),
            "use_schema": m.get("use_schema"), "use_code": m.get("use_code"), "use_outcome": m.get("use_outcome"),
            "reuse_rate": m.get("reuse_rate"), "pool_size": m.get("pool_size"),
            "llm_calls": s.llm_calls, "wall_s": round(time.perf_counter() - start, 1)}  # fmt: skip


def _student(task_name: str, student: str, seed: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        memory = f"sqlite:///{Path(tmp) / 'pool.db'}"
        writer = _run(task_name, "smith", "scripted", seed, memory)
        row = _run(task_name, "smith", student, seed, memory, agent={"build": False})
    row["method"] = f"smith (tools by scripted writer, used by {student})"
    row["writer_accuracy"] = writer["accuracy"]
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--models", default="offline,scripted")
    ap.add_argument("--methods", default="smith,templates,no-tools")
    ap.add_argument(
        "--tasks", default="train-families,heldout-families,table-questions,scene-graphs"
    )
    ap.add_argument("--student", default="")
    ap.add_argument("--student-only", action="store_true", help="only the student experiment")
    ap.add_argument("--out", default="runs/smith-eval")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    with (out / "rows.jsonl").open("a") as f:
        for task in args.tasks.split(","):
            for model in [] if args.student_only else args.models.split(","):
                for method in args.methods.split(","):
                    if method == "templates" and model != "offline":
                        continue  # the no-learning baseline uses no model
                    for seed in range(args.seeds if model != "local" else 1):
                        row = _run(task, method, model, seed)
                        rows.append(row)
                        f.write(json.dumps(row) + "\n")
                        f.flush()
                        print(json.dumps(row), flush=True)
            if args.student:
                row = _student(task, args.student, 0)
                rows.append(row)
                f.write(json.dumps(row) + "\n")
                print(json.dumps(row), flush=True)
    keys = ("accuracy", "build_pass_rate", "use_schema", "use_code", "use_outcome")
    print("\n| task | method | model | " + " | ".join(keys) + " | runs |")
    print("|---" * (len(keys) + 4) + "|")
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["task"], r["method"], r["model"]), []).append(r)
    for (task, method, model), rs in groups.items():
        cells = []
        for k in keys:
            vals = [r[k] for r in rs if isinstance(r.get(k), int | float)]
            cells.append(f"{sum(vals) / len(vals):.2f}" if vals else "-")
        print(f"| {task} | {method} | {model} | {' | '.join(cells)} | {len(rs)} |")


if __name__ == "__main__":
    main()
