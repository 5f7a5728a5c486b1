"""Hawkeye on kernelarena: correctness, strategy-applied rate and cost-model speedup over
the starting kernel, on dev and heldout, offline (autotune) and with a scripted LLM.

    python benchmarks/hawkeye_eval.py [--methods autotune,scripted,local] [--budget 3]
        [--tasks all|t2t_matmul,...] [--out /work/evals/hawkeye]

Each method searches a task's dev shapes once (``--budget`` evaluations, the starting
kernel included); its best kernel is then re-scored by the suite on dev and on heldout
(other sizes, non-power-of-two, strided and transposed inputs). Without a GPU the value is
``cost_speedup`` (``optiforge.kernels.traffic``: counted traffic and launches, a roofline
estimate at the timing shape on sm90): a model, not a timing. The scripted LLM is
``optiforge.agents.hawkeye.testing.example_copier`` (answers the expert example when it computes
the task's op, else the current kernel unchanged). ``local``: the embedded SmolLM2-135M
(no tool calling: one completion per proposal). Rows: OUT/rows.jsonl.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path
from typing import Any

from optiforge.agents.hawkeye import SPEC
from optiforge.agents.hawkeye.config import HawkeyeConfig
from optiforge.agents.kit import RunContext
from optiforge.evals.registry import get_benchmark
from optiforge.sandboxes import get_sandbox


def _llm(method: str) -> Any:
    if method == "scripted":
        from optiforge.agents.hawkeye.testing import example_copier

        return example_copier()
    if method == "local":
        from optiforge.llm.offline import make_llm

        return make_llm("local")
    return None


def run_one(task: Any, method: str, budget: int, sb: Any, run_dir: Path) -> dict[str, Any]:
    t0 = time.perf_counter()
    config = HawkeyeConfig(arch="interpreter")
    ctx = RunContext(llm=_llm(method), sandbox=sb, seed=0, run_dir=run_dir, agent="hawkeye")
    out = SPEC.build(task, config, budget).execute(ctx)
    row: dict[str, Any] = {"task": task.name, "method": method, "budget": budget, "proposer": out.extra.get("proposer"),
                           "strategy_checks": out.extra.get("strategy_checks"), "best_applies": out.extra.get("best_applies"),
                           "failure": out.failure}  # fmt: skip
    for split in ("dev", "heldout"):
        t = task if split == "dev" else task.for_split("heldout")
        s = t.evaluate(out.best_candidate, sb) if out.best_candidate else None
        row[split] = {"correct": bool(s and s.passed), "value": s.value if s and s.passed else None,
                      "reason": (s.details.get("reason") if s else "no candidate"),
                      **({k: v for k, v in s.metrics.items() if k.startswith("cost_")} if s else {})}  # fmt: skip
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def _geomean(vals: list[float | None]) -> float:
    v = [min(max(x, 0.1), 10.0) if x is not None else 0.1 for x in vals]
    return math.exp(statistics.mean(math.log(x) for x in v)) if v else math.nan


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| method | split | tasks | correct | geomean cost speedup (incorrect = 0.1) | >1.0 | strategy applied |",
             "|---|---|---|---|---|---|---|"]  # fmt: skip
    for method in sorted({r["method"] for r in rows}):
        g = [r for r in rows if r["method"] == method]
        claimed = sum((r.get("strategy_checks") or {}).get("claimed", 0) for r in g)
        applied = sum((r.get("strategy_checks") or {}).get("applied", 0) for r in g)
        rate = f"{applied}/{claimed} ({applied / claimed:.0%})" if claimed else "- (claims none)"
        for split in ("dev", "heldout"):
            vals = [r[split]["value"] for r in g]
            lines.append(f"| {method} | {split} | {len(g)} | {sum(r[split]['correct'] for r in g)} | "
                         f"{_geomean(vals):.3f} | {sum(1 for v in vals if v is not None and v > 1.0 + 1e-9)} | {rate} |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default="autotune,scripted")
    ap.add_argument("--budget", type=int, default=3)
    ap.add_argument("--tasks", default="all")
    ap.add_argument("--out", type=Path, default=Path("runs/hawkeye-eval"))
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    sb = get_sandbox("local")
    tasks = get_benchmark("kernelarena").tasks("dev")
    if args.tasks != "all":
        names = set(args.tasks.split(","))
        tasks = [t for t in tasks if t.name in names]
    for method in args.methods.split(","):
        for t in tasks:
            row = run_one(t, method, args.budget, sb, args.out / "runs" / method / t.name)
            with (args.out / "rows.jsonl").open("a") as f:
                f.write(json.dumps(row, default=str) + "\n")
            print(
                f"{method} {t.name}: dev {row['dev']['value']} heldout {row['heldout']['value']} "
                f"checks {row['strategy_checks']} {row['seconds']}s",
                flush=True,
            )
    rows = [
        json.loads(ln) for ln in (args.out / "rows.jsonl").read_text().splitlines() if ln.strip()
    ]
    print(table(rows))


if __name__ == "__main__":
    main()
