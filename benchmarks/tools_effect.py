"""What evolve's ``check_program`` and AutoREM's ``run_python`` buy, with simulated
error-prone models.

No tool-calling model runs offline here (the embedded ``--model local`` serves no
function calling), so the model is a deterministic double: each reply drafts a program
``a*x + b*np.sin(c*x) + d`` from a hash of its prompt, and half of the drafts carry a bug
a weak model makes (``sin`` without ``np.``, a missing ``return``, a wrong name). With the
tool it checks the draft first and, when the check reports an error, answers the draft
with the bug fixed (what a model that reads the error does); without it, it answers the
draft. Both runs spend the same evaluation budget; the tool's checking turns are LLM
calls too, and the table counts them. AutoREM's writer likewise breaks half of its
counterpart programs (a syntax error) and, with ``run_python``, runs the draft first.

    .venv/bin/python benchmarks/tools_effect.py [--seeds 3] [--budget 24]

Prints, per task and setting (means over seeds): the verified best mse, the share of the
LLM's proposals that passed evaluation, LLM calls, tool calls, and the mean tool call time.
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from optiforge.config import RunSettings
from optiforge.evals.registry import resolve_task
from optiforge.harness.runner import run_task
from optiforge.runs import iter_events, read_jsonl
from optiforge.testing import FunctionLLM

BUGS = [
    ("np.sin(", "sin("),  # a name numpy does not export bare
    ("    return ", "    y = "),  # no return: f returns None
    ("np.sin(", "np.sinus("),
]


def draft(prompt: str) -> tuple[str, str]:
    """``(program, buggy program)`` for this prompt (deterministic)."""
    h = int(hashlib.sha256(prompt.encode()).hexdigest()[:12], 16)
    a, b, c, d = ((h >> (8 * i)) % 200 / 50 - 2 for i in range(4))
    good = f"def f(x):\n    return {a:.2f} * x + {b:.2f} * np.sin({c:.2f} * x) + {d:.2f}\n"
    old, new = BUGS[(h >> 40) % len(BUGS)]
    return good, good.replace(old, new, 1)


def model(use_tool: bool) -> Any:
    def reply(messages: list[dict[str, Any]], tools: Any, schema: Any) -> Any:
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        good, buggy = draft(prompt)
        h = int(hashlib.sha256(prompt.encode()).hexdigest()[:4], 16)
        text = buggy if h % 2 else good  # half of the drafts have a bug
        results = [m["content"] for m in messages if m["role"] == "tool"]
        if use_tool and not results:
            return {
                "content": None,
                "tool_calls": [{"name": "check_program", "arguments": {"code": text}}],
            }
        if results and not str(results[-1]).startswith("ok"):
            text = good  # the model reads the error and fixes its draft
        return f"```python\n{text}```"

    return reply


def one(task: str, use_tool: bool, seed: int, budget: int, root: Path) -> dict[str, Any]:
    out = root / f"{task}-{'tool' if use_tool else 'none'}-s{seed}"
    tools = {"use": ["check_program"]} if use_tool else {"use": [], "pool": False}
    settings = RunSettings(budget=budget, seed=seed, memory="none", agent={"tools": tools})
    t0 = time.perf_counter()
    s = run_task("evolve", resolve_task(f"funcfit/{task}@dev"), settings, out,
                 with_baseline=False, llm=FunctionLLM(model(use_tool)))  # fmt: skip
    rows = [r for r in read_jsonl(out / "evaluations.jsonl") + read_jsonl(out / "rejected.jsonl")
            if r.get("origin") == "llm"]  # fmt: skip
    calls = [e for e in iter_events(out) if e["kind"] == "tool_call"]
    return {"best": s.best_score, "passed": sum(bool(r.get("passed")) for r in rows),
            "proposals": len(rows), "llm_calls": s.llm_calls, "tool_calls": len(calls),
            "tool_s": sum(c["duration_s"] for c in calls), "wall_s": time.perf_counter() - t0}  # fmt: skip


def autorem_model(use_tool: bool, good: str) -> Any:
    """AutoREM's writer: half of the drafts (by prompt hash) break the program's syntax;
    with ``run_python`` it runs the draft first and answers the fixed one on an error."""

    def reply(messages: list[dict[str, Any]], tools: Any, schema: Any) -> Any:
        prompt = next(m["content"] for m in messages if m["role"] == "user")
        h = int(hashlib.sha256(prompt.encode()).hexdigest()[:4], 16)
        text = (
            good.replace("import cvxpy as cp", "import cvxpy as cp\nx = = 1", 1) if h % 2 else good
        )
        results = [m["content"] for m in messages if m["role"] == "tool"]
        if use_tool and not results:
            return {
                "content": None,
                "tool_calls": [{"name": "run_python", "arguments": {"code": text}}],
            }
        if results and '"returncode": 0' not in str(results[-1]):
            text = good
        return f"```python\n{text}\n```"

    return reply


def autorem_one(task_name: str, use_tool: bool, root: Path) -> dict[str, Any]:
    from optiforge.agents.autorem.proposers import counterpart_program

    task = resolve_task(f"autoro/{task_name}@dev")
    out = root / f"autorem-{task_name}-{'tool' if use_tool else 'none'}"
    tools = {"use": ["run_python"]} if use_tool else {"use": [], "pool": False}
    settings = RunSettings(memory="none", agent={"tools": tools, "max_attempts": 1})
    llm = FunctionLLM(autorem_model(use_tool, counterpart_program(task.instance.problem)))
    s = run_task("autorem", task, settings, out, with_baseline=False, llm=llm)
    calls = [e for e in iter_events(out) if e["kind"] == "tool_call"]
    return {"correct": s.best_score is not None, "llm_calls": s.llm_calls,
            "tool_calls": len(calls), "tool_s": sum(c["duration_s"] for c in calls)}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--budget", type=int, default=24)
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="tools_effect-"))
    print("| task | check_program | best mse (mean) | LLM proposals passed | LLM calls | "
          "tool calls | ms per tool call | wall s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for task in ("sine", "quadratic"):
        for use_tool in (False, True):
            runs = [one(task, use_tool, s, args.budget, root) for s in range(args.seeds)]
            best = statistics.mean(r["best"] for r in runs)
            passed = sum(r["passed"] for r in runs) / max(1, sum(r["proposals"] for r in runs))
            n_tool = sum(r["tool_calls"] for r in runs)
            ms = 1000 * sum(r["tool_s"] for r in runs) / n_tool if n_tool else 0.0
            print(f"| {task} | {'on' if use_tool else 'off'} | {best:.4g} | {100 * passed:.0f}% | "
                  f"{statistics.mean(r['llm_calls'] for r in runs):.1f} | {n_tool / len(runs):.1f} | "
                  f"{ms:.1f} | {statistics.mean(r['wall_s'] for r in runs):.1f} |", flush=True)  # fmt: skip
    tasks = [
        t.name
        for t in __import__("optiforge.evals.registry", fromlist=["x"])
        .get_benchmark("autoro")
        .tasks("dev")
    ][:6]
    print(
        "\n| AutoREM, 1 attempt | run_python | correct | LLM calls | tool calls | ms per tool call |"
    )
    print("|---|---|---|---|---|---|")
    for use_tool in (False, True):
        runs = [autorem_one(t, use_tool, root) for t in tasks]
        n_tool = sum(r["tool_calls"] for r in runs)
        ms = 1000 * sum(r["tool_s"] for r in runs) / n_tool if n_tool else 0.0
        print(f"| {len(tasks)} dev instances | {'on' if use_tool else 'off'} | "
              f"{sum(r['correct'] for r in runs)}/{len(runs)} | {sum(r['llm_calls'] for r in runs)} | "
              f"{n_tool} | {ms:.0f} |", flush=True)  # fmt: skip
    print(f"\nruns: {root}")


if __name__ == "__main__":
    main()
