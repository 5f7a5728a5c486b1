"""AutoREM from text: accuracy on the application split with and without memory, ID and OOD.

The ``app`` tasks are text-only: the agent reads the statement and its model sheet in
words, writes the model (modelling step), then the counterpart program; the verifier
judges the answer against the hidden JSON. Steps:

1. adapt: memory built with base model ``--builder`` (default scripted-A) on ``app-train``,
   one pass per ``--adapt-seeds`` seed into one raw store (reflection by the builder;
   modelling lessons from the fields its model got wrong);
2. curate: the raw lessons are consolidated and pruned on ``app-val`` (ablation per
   lesson group, with the builder), and the kept ones written to a curated store;
3. evaluate on ``app-id`` (set types seen in training) and ``app-ood`` (polyhedral sets
   and intersections, unseen), for each proposer x memory (none / raw / curated):
   ``offline`` (reference modeller + reference reformulator: measures the sheet round
   trip and the checker, not a model), ``scripted-A`` and ``scripted-B`` (simulated base
   models of ``optiforge.agents.autorem.testing``; B has other gaps: the transfer), and
   ``local`` (the embedded SmolLM2-135M, ``--local-tasks`` tasks only: slow on CPU).

Rows go to ``OUT/rows.jsonl`` (resumable: finished (proposer, memory, seed, task) rows are
skipped); the curation report to ``OUT/curation.json``; the table is printed.

    .venv/bin/python benchmarks/autorem_text.py [--out /work/evals/autorem-text]
        [--workers 2] [--seeds 0] [--adapt-seeds 0,1,2] [--adapt-mode independent|online]
        [--proposers offline,scripted-A,scripted-B,local]
        [--local-tasks 2] [--max-attempts 3]
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

SPLITS = ("app-id", "app-ood")


def _llm(proposer: str, seed: int) -> Any:
    if proposer == "offline":
        return None
    if proposer.startswith("scripted-"):
        from optiforge.agents.autorem.testing import scripted_ro_model

        return scripted_ro_model(proposer.split("-", 1)[1], seed)
    if proposer == "local":
        from optiforge.llm.local import LocalLLM

        return LocalLLM("local")
    raise SystemExit(f"unknown proposer {proposer!r}")


def _ctx(llm: Any, memory: Any, seed: int) -> Any:
    from optiforge.agents.kit import RunContext
    from optiforge.sandboxes import get_sandbox

    return RunContext(llm=llm, sandbox=get_sandbox("local"), memory=memory, seed=seed,
                      agent="autorem")  # fmt: skip


def _store(path: Path | None) -> Any:
    from optiforge.memory import Store

    return None if path is None else Store(f"sqlite:///{path}", embedder=None)


def build_memory(
    out: Path, builder: str, seeds: list[int], cfg: Any, workers: int, independent: bool = True
) -> dict[str, Any]:
    """Steps 1-2: raw store (adapt on app-train, once per seed) and curated store (pruned
    on app-val with the first seed).

    independent: each pass adapts without retrieval, so the passes are independent
    evidence (repeated lessons for consolidation to count, and each pass's own guesses);
    else a pass reads what earlier passes wrote (online: later passes mostly fail less).
    """
    from optiforge.agents.autorem.adapt import adapt
    from optiforge.agents.autorem.curate import agent_evaluator, curate
    from optiforge.evals.suites.autoro import AutoROBenchmark

    raw_path, cur_path = out / f"raw-{builder}.db", out / f"curated-{builder}.db"
    report_path = out / f"curation-{builder}.json"
    if report_path.is_file() and raw_path.is_file() and cur_path.is_file():
        return json.loads(report_path.read_text())
    for p in (raw_path, cur_path):
        p.unlink(missing_ok=True)
    bench = AutoROBenchmark(n_per_split=0)
    raw, cur = _store(raw_path), _store(cur_path)
    try:
        t0 = time.perf_counter()
        reps = []
        for seed in seeds:  # the same model, other draws: repairs and guesses differ
            ctx = _ctx(_llm(builder, seed), raw, seed)
            acfg = cfg.model_copy(update={"reflector": "llm", "use_memory": not independent})
            rep = adapt(bench, "app-train", ctx, acfg)
            print(f"seed {seed}: {rep.text()}", flush=True)
            reps.append(rep.model_dump(mode="json"))
        llm = _llm(builder, seeds[0])
        evaluate = agent_evaluator(_ctx(llm, None, seeds[0]), cfg, workers=workers)
        crep = curate(raw, cur, bench.tasks("app-val"), evaluate, val_split="app-val")
        print(crep.text(), flush=True)
        data = {
            "builder": builder,
            "adapt_mode": "independent" if independent else "online",
            "adapt": reps,
            "curation": crep.model_dump(mode="json"),
            "wall_s": round(time.perf_counter() - t0, 1),
        }
    finally:
        raw.close()
        cur.close()
    report_path.write_text(json.dumps(data, indent=1))
    return data


def run_rows(
    out: Path,
    proposer: str,
    memory: str,
    seed: int,
    tasks: list[Any],
    cfg: Any,
    workers: int,
    builder: str,
) -> list[dict[str, Any]]:
    """One (proposer, memory, seed) condition on ``tasks``; rows appended to rows.jsonl."""
    from optiforge.agents.autorem.agent import run_instance

    rows_path = out / "rows.jsonl"
    done = set()
    if rows_path.is_file():
        for line in rows_path.read_text().splitlines():
            r = json.loads(line)
            done.add((r["proposer"], r["memory"], r["seed"], r["task"]))
    todo = [t for t in tasks if (proposer, memory, seed, t.name) not in done]
    if not todo:
        return []
    path = {
        "none": None,
        "raw": out / f"raw-{builder}.db",
        "curated": out / f"curated-{builder}.db",
    }[memory]
    store = _store(path)
    llm = _llm(proposer, seed)
    c = cfg.model_copy(update={"use_memory": store is not None, "reflect": "never"})

    def one(task: Any) -> dict[str, Any]:
        t0 = time.perf_counter()
        state = run_instance(
            task, _ctx(llm, store, seed), c, thread_id=f"{proposer}-{memory}-{task.name}"
        )
        ran = [a for a in state.get("attempts", []) if "passed" in a]
        match = next((a["metrics"].get("model_match") for a in ran if "metrics" in a), None)
        return {
            "proposer": proposer, "memory": memory, "seed": seed, "task": task.name,
            "split": task.split, "solved": any(a["passed"] for a in ran),
            "model_match": match, "attempts": len(ran),
            "llm_calls": int(state.get("llm_calls", 0)),
            "retrieved": len(state.get("retrieved", [])),
            "model_lessons": len(state.get("model_retrieved", [])),
            "stop_reason": state.get("stop_reason", ""),
            "last_reasons": ran[-1].get("reasons", [])[:2] if ran else [],
            "wall_s": round(time.perf_counter() - t0, 1),
        }  # fmt: skip

    rows = []
    try:
        with ThreadPoolExecutor(1 if proposer == "local" else workers) as pool:
            for row in pool.map(one, todo):
                rows.append(row)
                with rows_path.open("a") as fh:
                    fh.write(json.dumps(row) + "\n")
    finally:
        if store is not None:
            store.close()
    return rows


def table(out: Path) -> str:
    """Markdown: accuracy and model accuracy per (proposer, memory, split), over seeds."""
    rows = [json.loads(x) for x in (out / "rows.jsonl").read_text().splitlines() if x.strip()]
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["proposer"], r["memory"], r["split"]), []).append(r)
    order = {"offline": 0, "scripted-A": 1, "scripted-B": 2, "local": 3}
    mem_order = {"none": 0, "raw": 1, "curated": 2}
    lines = [
        "| proposer | memory | split | n (tasks x seeds) | solved | accuracy | model matches | "
        "attempts / task | LLM calls / task | lessons shown / task |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (p, m, s), grp in sorted(
        groups.items(), key=lambda kv: (order.get(kv[0][0], 9), kv[0][2], mem_order[kv[0][1]])
    ):
        n = len(grp)
        solved = sum(r["solved"] for r in grp)
        mm = sum(1 for r in grp if r["model_match"] == 1.0)
        lines.append(
            f"| {p} | {m} | {s} | {n} | {solved} | {solved / n:.2f} | {mm}/{n} | "
            f"{sum(r['attempts'] for r in grp) / n:.2f} | {sum(r['llm_calls'] for r in grp) / n:.1f} | "
            f"{sum(r['retrieved'] + r['model_lessons'] for r in grp) / n:.1f} |"
        )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--out", default="/work/evals/autorem-text")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seeds", default="0")
    ap.add_argument("--builder", default="scripted-A")
    ap.add_argument("--adapt-seeds", default="0,1,2", help="adaptation passes (one per seed)")
    ap.add_argument("--adapt-mode", choices=("independent", "online"), default="independent")
    ap.add_argument("--proposers", default="offline,scripted-A,scripted-B,local")
    ap.add_argument("--local-tasks", type=int, default=2)
    ap.add_argument("--max-attempts", type=int, default=3)
    ap.add_argument("--table-only", action="store_true")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.table_only:
        from optiforge.agents.autorem import AutoREMConfig
        from optiforge.evals.suites.autoro import AutoROBenchmark

        cfg = AutoREMConfig(max_attempts=args.max_attempts, tools={"use": []})
        seeds = [int(s) for s in args.seeds.split(",")]
        adapt_seeds = [int(s) for s in args.adapt_seeds.split(",")]
        build_memory(out, args.builder, adapt_seeds, cfg, args.workers,
                     independent=args.adapt_mode == "independent")  # fmt: skip
        bench = AutoROBenchmark(n_per_split=0)
        tasks = [t for s in SPLITS for t in bench.tasks(s)]
        for proposer in args.proposers.split(","):
            mems = (
                ["none", "curated"]
                if proposer in ("offline", "local")
                else ["none", "raw", "curated"]
            )
            ptasks = tasks
            if proposer == "local":  # slow on CPU: the smallest ID and OOD tasks only
                per = max(1, args.local_tasks // 2)
                ptasks = [
                    t
                    for s in SPLITS
                    for t in sorted(bench.tasks(s), key=lambda t: t.instance.problem.n)[:per]
                ]
            for seed in seeds if proposer.startswith("scripted") else seeds[:1]:
                for mem in mems:
                    t0 = time.perf_counter()
                    rows = run_rows(
                        out, proposer, mem, seed, ptasks, cfg, args.workers, args.builder
                    )
                    print(f"{proposer} memory={mem} seed={seed}: {sum(r['solved'] for r in rows)}/"
                          f"{len(rows)} solved ({time.perf_counter() - t0:.0f} s)", flush=True)  # fmt: skip
    for f in sorted(out.glob("curation-*.json")):
        data = json.loads(f.read_text())
        from optiforge.agents.autorem.curate import CurationReport

        mode = data.get("adapt_mode", "online")
        print(f"\n{data['builder']} ({mode} adaptation): "
              + CurationReport.model_validate(data["curation"]).text())  # fmt: skip
        for g in data["curation"]["groups"]:
            e = g["entry"]
            print(f"  - sets {e['trigger']['set_types'] or e['trigger']['features'] or 'any'}: "
                  f"{e['error_pattern'][:70]!r} x{g['count']} effect={g['effect']} "
                  f"{'kept' if g['kept'] else 'pruned'}")  # fmt: skip
    print()
    print(table(out))


if __name__ == "__main__":
    main()
