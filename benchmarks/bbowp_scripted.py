"""The formulator on bbowp with scripted LLMs: a good formulation (the instance's human
one, as the model's JSON reply) and a misleading one (the knobs that do not matter at
their full ranges, the ones that do pinned to the bottom tenth of their valid range,
random search), against the fixed default (``agent.offline=default``), one seed per
instance.

    .venv/bin/python benchmarks/bbowp_scripted.py [--split dev] [--seed 0] [--tasks a,b]

Every score is the harness's re-measurement (the optimization run in the sandbox). The
script shows that the suite separates formulations: good < default < misleading on most
instances (lower is better). It is the scripted half of issue 17's "must show"; the
real model runs are ``optiforge eval formulator --model ...``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any


def good_reply(task: Any) -> dict[str, Any]:
    """The human formulation in the shape the LLM is asked for (conditionals dropped)."""
    out = []
    for v in task.human["space"]["variables"]:
        d = {"name": v["name"], "kind": v["kind"]}
        if v["kind"] == "categorical":
            d["choices"] = v["choices"]
        else:
            d.update(low=v["low"], high=v["high"], log=bool(v.get("log")))
        out.append(d)
    return {"variables": out, "method": task.human["method"], "rationale": "scripted good"}


def misleading_reply(task: Any) -> dict[str, Any]:
    important = set(task.hidden.get("important", []))
    out = []
    for name, k in task.knobs.items():
        if k["kind"] == "categorical":
            if name not in important:
                out.append({"name": name, "kind": "categorical", "choices": k["choices"]})
            continue
        lo, hi = float(k["low"]), float(k["high"])
        if name in important:
            hi = lo + max((hi - lo) / 10, 1.0 if k["kind"] == "int" else 1e-9)
            hi = float(round(hi)) if k["kind"] == "int" else hi
        out.append({"name": name, "kind": k["kind"], "low": lo, "high": hi, "log": False})
    return {"variables": out, "method": "random", "rationale": "scripted misleading"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", default="dev")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tasks", default="")
    args = ap.parse_args()

    from optiforge.config import RunSettings
    from optiforge.evals.registry import get_benchmark
    from optiforge.harness.runner import run_task
    from optiforge.testing import FunctionLLM

    tasks = get_benchmark("bbowp").tasks(args.split)
    if args.tasks:
        tasks = [t for t in tasks if t.name in args.tasks.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for task in tasks:
            row: dict[str, Any] = {"task": task.name}
            for label, reply in (("default", None), ("good", good_reply(task)),
                                 ("misleading", misleading_reply(task))):  # fmt: skip
                llm = None if reply is None else FunctionLLM(lambda m, t, s, r=reply: json.dumps(r))
                t0 = time.perf_counter()
                s = run_task("formulator", task, RunSettings(seed=args.seed, memory="none",
                             model="offline" if llm is None else "scripted",
                             agent={"offline": "default"} if llm is None else {}),
                             Path(tmp) / f"{task.name}-{label}", llm=llm, with_baseline=False)  # fmt: skip
                row[label] = s.best_score
                row[f"{label}_s"] = time.perf_counter() - t0
            rows.append(row)
            print(json.dumps(row), flush=True)

    def fmt(v: Any) -> str:
        return "-" if v is None else f"{v:.4g}"

    print("\n| task | good (human formulation) | default | misleading | order |")
    print("|---|---|---|---|---|")
    ordered = 0
    for r in rows:
        g, d, m = r["good"], r["default"], r["misleading"]
        ok = None not in (g, d, m) and g <= d <= m
        ordered += ok
        print(
            f"| {r['task']} | {fmt(g)} | {fmt(d)} | {fmt(m)} | {'good<=default<=misleading' if ok else '-'} |"
        )
    good_beats = sum(
        1 for r in rows if None not in (r["good"], r["default"]) and r["good"] < r["default"]
    )
    mis_loses = sum(
        1
        for r in rows
        if r["misleading"] is None or (r["default"] is not None and r["misleading"] > r["default"])
    )
    print(f"\ngood beats default on {good_beats}/{len(rows)}; misleading worse than default on "
          f"{mis_loses}/{len(rows)}; fully ordered on {ordered}/{len(rows)} (seed {args.seed})")  # fmt: skip


if __name__ == "__main__":
    main()
