"""Base vs post-trained embedded model on HELD-OUT tasks: per agent and task, the valid
replies and the harness-verified score per model (mean and 95% t-interval over seeds),
and the format-robustness table (valid replies per agent and reply format) per model.

Each (model, agent) is one ``optiforge eval AGENT --bench SUITE --split SPLIT --seeds N
--model MODEL`` with the small budgets of ``PLAN``, on a split that is not ``dev``: the
post-training data (``optiforge posttrain data``) is built from dev tasks only. Models are
``local`` (the bundled SmolLM2-135M-Instruct Q4_1) and ``local/<file.gguf>`` (a post-trained
GGUF, labelled with its file name, sha256 and the data named in the JSON card beside it).
AutoREM runs twice: on the structured model sheets of ``autoro/heldout`` (``autorem``) and
on the prose statements of ``autoro/app-ood`` (``autorem-prose``). SMITH builds its tools
and uses them on the held-out families; the terminal agent works saddle/heldout tasks.

Resumable: each finished eval appends its rows to ``OUT/rows.jsonl`` and is skipped when
its rows are there (an interrupted eval resumes from its own directory). Every LLM exchange
is recorded to ``benchmarks/cassettes/posttrain/<model tag>/<agent>.jsonl``; ``--replay`` re-runs the evals
from those cassettes (no model; the same numbers) into ``OUT/replay``.

    OMP_NUM_THREADS=1 python benchmarks/posttrain_eval.py --models local,local/PATH.gguf
        [--agents evolve,...] [--seeds 3] [--out runs/posttrain-eval] [--cassettes DIR] [--replay]
        [--tables-only]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from scipy import stats

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from local_llm_eval import _jsonl  # noqa: E402
from local_llm_eval import formats as search_formats  # noqa: E402

# name -> (agent, suite, split, tasks, budget, --set overrides, baselines ("," = none)):
# held-out splits only, budgets bounded for a 135M model on 2 shared cores
PLAN: dict[str, tuple[str, str, str, str, int, list[str], str]] = {
    "evolve": ("evolve", "funcfit", "heldout", "cubic,damped", 8, [], "seed"),
    "kernel-discovery": ("kernel-discovery", "hdbo", "heldout", "branin2_in_100_e23", 12,
                         ["agent.kernel_evals_per_refresh=4", "agent.max_code_reasks=1"], ","),
    "hawkeye": ("hawkeye", "kernelarena", "heldout", "t2t_add", 3, [], ","),
    "autorem": ("autorem", "autoro", "heldout", "autoro-heldout-d1-0000-s2000", 0,
                ["agent.max_attempts=2"], ","),
    "autorem-prose": ("autorem", "autoro", "app-ood", "autoro-app-facility_budget", 0,
                      ["agent.max_attempts=2"], ","),
    "agent-cbo": ("agent-cbo", "cbo", "heldout", "dropwave", 0, [], ","),
    "smith": ("smith", "procedural", "heldout", "heldout-families", 0,
              ["agent.build_attempts=1"], ","),
    "terminal": ("terminal", "saddle", "heldout", "grades-average,ini-to-json", 0, [], ","),
}  # fmt: skip
BUNDLED = "SmolLM2-135M-Instruct.Q4_1.gguf (bundled, base)"


def model_tag(model: str) -> str:
    """A folder-safe name for a model string (``local`` or the GGUF file's stem)."""
    if model == "local":
        return "base"
    return Path(model.split("/", 1)[1]).stem


def model_label(model: str) -> dict[str, Any]:
    """What every number of ``model`` is labelled with: the file, its sha256 and, for a
    post-trained file, the data and base named in the card beside it."""
    if model == "local":
        return {"model": model, "file": BUNDLED}
    path = Path(model.split("/", 1)[1])
    if not path.is_file():
        raise SystemExit(f"--models {model}: no such file {path}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    label: dict[str, Any] = {"model": model, "file": path.name, "sha256": digest}
    card = path.with_suffix(".json")
    if card.is_file():
        c = json.loads(card.read_text())
        label["card"] = {k: c[k] for k in c if not isinstance(c[k], (dict, list))}
        for k in ("data", "data_file", "data_sha256", "base", "base_model", "steps", "seed"):
            if k in c:
                label[k] = c[k]
    return label


def run_eval(
    name: str, model: str, seeds: int, out: Path, tapes: Path, replay: bool
) -> tuple[int, float]:
    """One ``optiforge eval`` of the plan's entry ``name`` (resumes its own directory)."""
    agent, suite, split, tasks, budget, sets, baselines = PLAN[name]
    tape = tapes / model_tag(model) / f"{name}.jsonl"
    edir = out / ("replay" if replay else "evals") / model_tag(model) / name
    cmd = [sys.executable, "-m", "optiforge.cli", "eval", agent, "--bench", suite,
           "--split", split, "--seeds", str(seeds), "--tasks", tasks, "--model", model,
           "--memory", "none", "--out", str(edir), "--baselines", baselines]  # fmt: skip
    if budget:
        cmd += ["--budget", str(budget)]
    for s in sets:
        cmd += ["--set", s]
    if replay:
        if not tape.is_file():
            raise SystemExit(f"{tape}: no cassette to replay (run without --replay first)")
        cmd += ["--replay", str(tape)]
    else:
        tape.parent.mkdir(parents=True, exist_ok=True)
        cmd += ["--record", str(tape)]  # appends: a resumed eval adds its new exchanges
    t0 = time.perf_counter()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "COLUMNS": "200"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode not in (0, 1):
        print(proc.stdout[-2000:], proc.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"{name} ({model}): eval exited {proc.returncode}")
    return proc.returncode, time.perf_counter() - t0


def reply_shapes(name: str, run: Path) -> dict[str, dict[str, int]]:
    """Per reply format of one run: replies and how many had the required shape.

    Search agents and AutoREM: ``local_llm_eval.formats`` (schema prompts, code proposals,
    counterpart programs). SMITH: a tool build counts as valid when its schema axis passed,
    a use step (asked only when a tool was built) when it produced a tool call. Terminal: a turn is valid when it parsed to an
    action (a command or a submit); for the shell action, "passed" counts commands that
    exited 0, and ``placeholder`` the format example's ``...`` sent back as a command.
    """
    agent = PLAN[name][0]
    table: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    # local_llm_eval.formats reads the runs under an eval dir: point it at this run alone
    for fmt, row in search_formats(agent, _OneRun(run)).items():
        for k, v in row.items():
            table[fmt][k] += v
    events = _jsonl(run / "events.jsonl")
    # with an empty pool (no tool built, no memory) SMITH asks the model nothing at use time
    pooled = any(e.get("kind") == "smith_build" and e.get("passed") for e in events)
    for e in events:
        if e.get("kind") == "smith_build":
            row = table["tool (JSON schema + code)"]
            row["replies"] += 1
            row["valid"] += int(float(e.get("schema") or 0) > 0)
            row["scored"] += int(bool(e.get("passed")))
        elif e.get("kind") == "smith_use" and pooled:
            row = table["tool call"]
            row["replies"] += 1
            row["valid"] += int(bool(e.get("calls")))
    if agent == "terminal":
        # the base harness has no checks: a turn is a command (terminal_step) or invalid,
        # and a submit ends the episode without a turn of its own
        ep = next((e for e in events if e.get("kind") == "terminal_episode"), None)
        if ep is not None:
            row = table["shell action (JSON)"]
            submitted = int(ep.get("stop") == "submitted")
            steps = [e for e in events if e.get("kind") == "terminal_step"]
            row["replies"] += int(ep.get("steps") or 0) + submitted
            row["valid"] += len(steps) + submitted
            row["scored"] += sum(e.get("returncode") == 0 for e in steps)
            # the format example's own placeholder, copied: the shape without an action
            row["placeholder"] += sum(e.get("command", "").strip() == "..." for e in steps)
    return {k: dict(v) for k, v in table.items()}


class _OneRun:
    """A stand-in eval dir whose ``runs`` glob yields one run (for ``formats``)."""

    def __init__(self, run: Path) -> None:
        self.run = run

    def __truediv__(self, part: str) -> _OneRun:
        return self

    def glob(self, pattern: str) -> list[Path]:
        return [self.run]


def eval_rows(name: str, model: str, edir: Path) -> list[dict[str, Any]]:
    """One row per (task, seed) of the agent's own runs in an eval dir."""
    agent = PLAN[name][0]
    rows = []
    for r in _jsonl(edir / "results.jsonl"):
        if r.get("method") != agent:
            continue
        run = edir / "runs" / f"{r['task']}--{agent}--s{r['seed']}"
        shapes = reply_shapes(name, run)
        # SMITH's build reply is one ToolReply: counted once, as the tool it defines
        counted = {k: v for k, v in shapes.items() if not (agent == "smith" and "ToolReply" in k)}
        replies = sum(v.get("replies", 0) for v in counted.values())
        valid = sum(v.get("ok", v.get("valid", 0)) for v in counted.values())
        rows.append({"name": name, "agent": agent, "model": model, "task": r["task"],
                     "split": r.get("split"), "seed": r["seed"], "score": r.get("best_score"),
                     "status": r.get("status"), "metric": r.get("metric"),
                     "higher_is_better": r.get("higher_is_better"), "llm_calls": r.get("llm_calls"),
                     "replies": replies, "valid": valid, "shapes": shapes,
                     "wall_s": r.get("wall_s"),
                     "metrics": ((r.get("verification") or {}).get("metrics") or {})})  # fmt: skip
    return rows


def t_interval(xs: list[float]) -> str:
    """``mean ± half-width`` of a 95% t-interval (``mean`` alone for one value)."""
    if not xs:
        return "-"
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return f"{m:.4g}"
    h = stats.t.ppf(0.975, len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
    return f"{m:.4g} ± {h:.2g}"


def tables(rows: list[dict[str, Any]], labels: dict[str, dict[str, Any]]) -> str:
    """The before/after table and the format-robustness table, as markdown."""
    models = list(dict.fromkeys(r["model"] for r in rows))
    lines = ["## Models\n"]
    for m in models:
        lines.append(f"- `{m}`: {json.dumps(labels.get(m, {'model': m}), default=str)}")
    lines += ["", "## Held-out tasks: score and valid replies per model (mean ± 95% t-interval "
              "over seeds of the runs with a score; failed: runs the harness marked failed, e.g. no "
              "valid LLM proposal, whose score is then the starting point's)", "",
              "| agent | split / task (metric) | model | seeds | score | failed | valid replies "
              "| valid share (per seed) |", "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["name"], r["task"], r["model"])].append(r)
    for (name, task, model), rs in sorted(
        groups.items(),
        key=lambda kv: (list(PLAN).index(kv[0][0]), kv[0][1], models.index(kv[0][2])),
    ):
        scored = [float(r["score"]) for r in rs if r["score"] is not None]
        failed = sum(r["score"] is None or r["status"] == "failed" for r in rs)
        shares = [r["valid"] / r["replies"] for r in rs if r["replies"]]
        arrow = "↑" if rs[0].get("higher_is_better") else "↓"
        lines.append(
            f"| {name} | {rs[0]['split']} / {task} ({rs[0]['metric']} {arrow}) | "
            f"{model_tag(model)} | {len(rs)} | {t_interval(scored)} | {failed} | "
            f"{sum(r['valid'] for r in rs)}/{sum(r['replies'] for r in rs)} | "
            f"{t_interval(shares)} |"
        )
    if len(models) > 1:
        lines += ["", "## Before / after (score mean ± 95% t-interval over seeds [failed runs]; "
                  "valid replies)", "",
                  "| agent | split / task (metric) | " + " | ".join(
                      f"{model_tag(m)}: score | {model_tag(m)}: valid" for m in models) + " |",
                  "|---|---|" + "---|---|" * len(models)]  # fmt: skip
        for name, task in dict.fromkeys((k[0], k[1]) for k in sorted(
            groups, key=lambda k: (list(PLAN).index(k[0]), k[1]))):  # fmt: skip
            cells = []
            for m in models:
                rs = groups.get((name, task, m), [])
                if not rs:
                    cells += ["not run", "-"]
                    continue
                scored = [float(r["score"]) for r in rs if r["score"] is not None]
                failed = sum(r["score"] is None or r["status"] == "failed" for r in rs)
                cells += [f"{t_interval(scored)} [{failed}/{len(rs)}]",
                          f"{sum(r['valid'] for r in rs)}/{sum(r['replies'] for r in rs)}"]  # fmt: skip
            first = next(r for k, v in groups.items() if k[:2] == (name, task) for r in v)
            arrow = "↑" if first.get("higher_is_better") else "↓"
            lines.append(f"| {name} | {first['split']} / {task} ({first['metric']} {arrow}) | "
                         + " | ".join(cells) + " |")  # fmt: skip
    lines += ["", "## Format robustness (all seeds and tasks; replies with the required shape)",
              "", "| agent | reply format | model | replies | shape ok | share | more |",
              "|---|---|---|---|---|---|---|"]  # fmt: skip
    fmt: dict[tuple[str, str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for r in rows:
        for f, v in r["shapes"].items():
            for k, n in v.items():
                fmt[(r["name"], f, r["model"])][k] += n
    for (name, f, model), v in sorted(
        fmt.items(), key=lambda kv: (list(PLAN).index(kv[0][0]), kv[0][1], models.index(kv[0][2]))
    ):
        n = v.get("replies", 0)
        if "first_try_ok" in v:
            ok, more = (
                v["ok"],
                f"{v['first_try_ok']}/{v['requests']} requests parsed on the first try",
            )
        else:
            ok, more = v.get("valid", 0), f"{v.get('scored', 0)} passed evaluation"
            if "placeholder" in v:
                more += f"; {v['placeholder']} were the example's placeholder command `...`"
        share = f"{100 * ok / n:.0f}%" if n else "-"
        lines.append(f"| {name} | {f} | {model_tag(model)} | {n} | {ok} | {share} | {more} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="local", help="comma-separated: local, local/<file.gguf>")
    ap.add_argument("--agents", default=",".join(PLAN))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("runs/posttrain-eval"))
    ap.add_argument("--cassettes", type=Path, default=HERE / "cassettes" / "posttrain")
    ap.add_argument("--replay", action="store_true", help="answer from the recorded cassettes")
    ap.add_argument("--tables-only", action="store_true", help="print the tables of OUT/rows.jsonl")
    ap.add_argument(
        "--rescan",
        action="store_true",
        help="rebuild the rows of finished evals from their directories (after a change here)",
    )
    args = ap.parse_args()
    models = [m.strip() for m in args.models.split(",") if m.strip()]
    names = [a.strip() for a in args.agents.split(",") if a.strip()]
    for n in names:
        if n not in PLAN:
            raise SystemExit(f"--agents: unknown {n!r} (known: {', '.join(PLAN)})")
    args.out.mkdir(parents=True, exist_ok=True)
    rows_path = args.out / ("replay-rows.jsonl" if args.replay else "rows.jsonl")
    labels = {m: model_label(m) for m in models}
    (args.out / "models.json").write_text(json.dumps(labels, indent=1, default=str))
    if args.rescan:
        kept = [r for r in _jsonl(rows_path) if (r["name"], r["model"]) not in
                {(n, m) for n in names for m in models}]  # fmt: skip
        for model in models:
            for name in names:
                edir = args.out / ("replay" if args.replay else "evals") / model_tag(model) / name
                if (edir / "results.jsonl").is_file():
                    kept += [{**r, "label": labels[model]} for r in eval_rows(name, model, edir)]
        rows_path.write_text("".join(json.dumps(r, default=str) + "\n" for r in kept))
    elif not args.tables_only:
        done = {(r["name"], r["model"]) for r in _jsonl(rows_path)}
        for model in models:
            for name in names:
                if (name, model) in done:
                    print(f"skip {name} / {model_tag(model)} (rows present)", flush=True)
                    continue
                print(f"start {name} / {model_tag(model)} {time.strftime('%H:%M:%S')}", flush=True)
                rc, wall = run_eval(name, model, args.seeds, args.out, args.cassettes, args.replay)
                edir = args.out / ("replay" if args.replay else "evals") / model_tag(model) / name
                rows = eval_rows(name, model, edir)
                with rows_path.open("a") as f:
                    for r in rows:
                        f.write(json.dumps({**r, "label": labels[model]}, default=str) + "\n")
                scores = [r["score"] for r in rows]
                valid = sum(r["valid"] for r in rows), sum(r["replies"] for r in rows)
                print(f"done  {name} / {model_tag(model)}: exit {rc}, {wall:.0f} s, scores {scores}, "
                      f"valid {valid[0]}/{valid[1]}", flush=True)  # fmt: skip
    all_rows = [r for r in _jsonl(rows_path) if r["model"] in models and r["name"] in names]
    text = tables(all_rows, labels)
    print(text)
    (args.out / ("replay-table.md" if args.replay else "table.md")).write_text(text + "\n")


if __name__ == "__main__":
    main()
