"""Kernel Discovery vs every baseline it can run on hdbo: average-rank table and out-of-sample wins.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/kd_rank.py --split dev --seeds 2 \\
        --methods kd,kd-oldsel,gp_rbf_ard,... --workers 2 --out /work/evals/kd-rank/dev
    .venv/bin/python benchmarks/kd_rank.py --split dev --out DIR --report-only \\
        --import /work/evals/kd-rank/offline-after-dev=kd

Methods: every baseline of the ``kernel-discovery`` agent (``SPEC.baselines``), and four
agent variants: ``kd`` (offline compositional proposer, default selection: k-fold held-out
CRPS, complexity penalty, paired incumbent rule), ``kd-oldsel`` (offline, the selection
before issue 23: LOO-CRPS with full-data hyperparameters, no penalty, margin 0),
``kd-scripted`` / ``kd-scripted-oldsel`` (the LLM proposer answered by ``ScriptedKernelLLM``:
a fixed pool of hand-written kernels, in the sandbox like any LLM kernel). ``--import
DIR=NAME`` also reads the rows of an ``optiforge eval`` directory, of another output
directory of this script, or of a ``.jsonl`` file of rows (method ``kernel-discovery`` renamed NAME, others as they are). Rows go to ``OUT/rows.jsonl`` (resumable: a
(task, seed, method) row already there is not rerun); the report to ``OUT/report.md``.

``--oos-replay DIR=NAME`` imports an offline eval's KD rows with the three out-of-sample
measures recomputed from each run's trace and refresh record (runs made before those
measures existed, e.g. with the old selection).

Every score is the harness's re-measurement (``run_task``: the best noiseless value at the
run's points). Ranks: per task, methods ranked by mean over seeds (1 = best), averaged over
tasks (``harness.runner.average_ranks``). Out-of-sample: the agent's ``final_loo_crps``
(``kernel_discovery.report.oos_counts``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

KD_VARIANTS: dict[str, dict[str, Any]] = {
    "kd": {},
    "kd-oldsel": {"selection_score": "loo", "complexity_penalty": 0.0, "selection_margin": 0.0},
    "kd-scripted": {},
    "kd-scripted-oldsel": {
        "selection_score": "loo",
        "complexity_penalty": 0.0,
        "selection_margin": 0.0,
    },
}

SCRIPTED_KERNELS: list[tuple[str, str, str]] = [
    (
        "matern52-ard-plus-linear",
        "k = Matern52_ARD(r) + c * <x, x'>",
        """NAME = "matern52-ard-plus-linear"
HYPERPARAMETERS = {"lengthscale": {"shape": "ard", "init": 1.0, "bounds": [0.01, 100.0]},
                   "c": {"shape": "scalar", "init": 0.1, "bounds": [0.001, 10.0]}}
def kernel(x1, x2, params):
    a = x1 / params["lengthscale"]
    b = x2 / params["lengthscale"]
    r = torch.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1) + 1e-12)
    s5 = math.sqrt(5.0)
    m = (1.0 + s5 * r + 5.0 / 3.0 * r ** 2) * torch.exp(-s5 * r)
    return m + params["c"] * (x1 @ x2.T)
""",
    ),
    (
        "additive-rbf",
        "k = (1/d) sum_j exp(-(x_j - x'_j)^2 / (2 l_j^2))",
        """NAME = "additive-rbf"
HYPERPARAMETERS = {"lengthscale": {"shape": "ard", "init": 0.5, "bounds": [0.01, 100.0]}}
def kernel(x1, x2, params):
    a = x1 / params["lengthscale"]
    b = x2 / params["lengthscale"]
    return torch.exp(-0.5 * (a[:, None, :] - b[None, :, :]) ** 2).mean(-1)
""",
    ),
    (
        "rq-ard",
        "k = (1 + r^2 / (2 alpha))^-alpha, r ARD-scaled",
        """NAME = "rq-ard"
HYPERPARAMETERS = {"lengthscale": {"shape": "ard", "init": 1.0, "bounds": [0.01, 100.0]},
                   "alpha": {"shape": "scalar", "init": 1.0, "bounds": [0.01, 100.0]}}
def kernel(x1, x2, params):
    a = x1 / params["lengthscale"]
    b = x2 / params["lengthscale"]
    d2 = ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)
    return (1.0 + d2 / (2.0 * params["alpha"])) ** (-params["alpha"])
""",
    ),
    (
        "matern32-iso-times-rbf-ard",
        "k = Matern32(|x - x'| / l0) * RBF_ARD(x, x')",
        """NAME = "matern32-iso-times-rbf-ard"
HYPERPARAMETERS = {"l0": {"shape": "scalar", "init": 1.0, "bounds": [0.01, 100.0]},
                   "lengthscale": {"shape": "ard", "init": 2.0, "bounds": [0.01, 100.0]}}
def kernel(x1, x2, params):
    r = torch.sqrt(((x1[:, None, :] - x2[None, :, :]) ** 2).sum(-1) + 1e-12) / params["l0"]
    s3 = math.sqrt(3.0)
    m = (1.0 + s3 * r) * torch.exp(-s3 * r)
    a = x1 / params["lengthscale"]
    b = x2 / params["lengthscale"]
    return m * torch.exp(-0.5 * ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))
""",
    ),
]
"""(name, form, code) the scripted LLM proposes in turn (valid, PSD kernels a careful
engineer might try; chosen before any run, not tuned on results)."""


class ScriptedKernelLLM:
    """A ``FunctionLLM`` body: the form call gets the next kernel of ``SCRIPTED_KERNELS`` (round
    robin), the code call gets that kernel's code (matched by name in the prompt)."""

    def __init__(self) -> None:
        self.i = 0

    def __call__(self, messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        text = str(messages[0]["content"])
        if "Implement this GP kernel" in text:
            m = re.search(r"Form: ([\w-]+):", text)
            code = next((c for n, _, c in SCRIPTED_KERNELS if m and n == m.group(1)),
                        SCRIPTED_KERNELS[0][2])  # fmt: skip
            return f"```python\n{code}```"
        name, form, _ = SCRIPTED_KERNELS[self.i % len(SCRIPTED_KERNELS)]
        self.i += 1
        return json.dumps({"name": name, "form": form, "rationale": "scripted"})


def _run_row(args: tuple[str, str, int, str, str]) -> dict[str, Any]:
    """One (task, method, seed) row in a worker process."""
    split, task_name, seed, method, row_dir = args
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from optiforge.agents.kernel_discovery import SPEC
    from optiforge.config import RunSettings
    from optiforge.evals.suites.hdbo import HDBOBenchmark
    from optiforge.harness.runner import run_task
    from optiforge.testing import FunctionLLM

    task = next(t for t in HDBOBenchmark().tasks(split) if t.name == task_name)
    llm = None
    if method in KD_VARIANTS:
        scripted = method.startswith("kd-scripted")
        settings = RunSettings(model="scripted" if scripted else "offline", memory="none",
                               seed=seed, agent=KD_VARIANTS[method])  # fmt: skip
        llm = FunctionLLM(ScriptedKernelLLM()) if scripted else None
        spec_method = SPEC.name
    else:
        settings = RunSettings(memory="none", seed=seed)
        spec_method = method
    resume = (Path(row_dir) / "manifest.json").exists()
    try:
        row = run_task(SPEC, task, settings, row_dir, method=spec_method, resume=resume,
                       with_baseline=False, llm=llm).row()  # fmt: skip
    except Exception as err:  # noqa: BLE001 - a failed row is recorded, not fatal
        return {"task": task_name, "seed": seed, "method": method, "error": repr(err)[:500]}
    row["method"] = method
    return row


def _replay_oos(row: dict[str, Any], run_dir: Path) -> dict[str, Any]:
    """The three out-of-sample measures of a finished offline KD run, recomputed from its
    trace and refresh record (``final_comparison``; for runs made before those measures
    existed: their refreshes name the chosen grammar expression)."""
    from types import SimpleNamespace

    import torch

    from optiforge.agents.kernel_discovery.config import KernelDiscoveryConfig
    from optiforge.agents.kernel_discovery.selection import final_comparison
    from optiforge.evals.suites.hdbo import HDBOBenchmark

    task = next(t for t in HDBOBenchmark().tasks(row["split"]) if t.name == row["task"])
    cand = json.loads((run_dir / "best" / "candidate.json").read_text())
    trace = SimpleNamespace(X=torch.tensor(cand["X"], dtype=torch.float64),
                            y=torch.tensor(cand["y"], dtype=torch.float64))  # fmt: skip
    refreshes = [
        {**r, "kernel": r.get("kernel") or {"expression": r["best"]}}
        for r in row["extra"]["refreshes"]
        if r.get("best")
    ]
    carried = [refreshes[-1]["kernel"]] if refreshes else []
    ctx = SimpleNamespace(seed=int(row["seed"]), run_dir=None)
    return final_comparison(task, trace, carried, ctx, KernelDiscoveryConfig(), refreshes)  # type: ignore[arg-type]


def _replayed(spec: str, out: Path) -> list[dict[str, Any]]:
    """``DIR=NAME``: the KD rows of eval directory DIR, renamed NAME, with recomputed OOS
    measures (cached in ``OUT/replay-NAME.jsonl``)."""
    d, _, name = spec.partition("=")
    cache = out / f"replay-{name}.jsonl"
    have = {(r["task"], int(r["seed"])): r for r in _read(cache)}
    rows = []
    with cache.open("a") as fh:
        for r in _read(Path(d) / "results.jsonl"):
            if r.get("method") != "kernel-discovery" or "error" in r:
                continue
            key = (r["task"], int(r["seed"]))
            if key not in have:
                run_dir = Path(d) / "runs" / f"{r['task']}--kernel-discovery--s{r['seed']}"
                old = dict(r["extra"]["final_loo_crps"])
                r["extra"]["final_loo_crps"] = _replay_oos(r, run_dir)
                r["extra"]["final_loo_crps_recorded"] = old
                r["method"] = name
                fh.write(json.dumps(r, default=str) + "\n")
                fh.flush()
                have[key] = r
                print(
                    "replayed",
                    key,
                    old.get("discovered"),
                    r["extra"]["final_loo_crps"].get("discovered"),
                    flush=True,
                )
            rows.append(have[key])
    return rows


def _selection_replay(args: tuple[dict[str, Any], str, str]) -> list[dict[str, Any]]:
    """Old vs new selection on the *same* BO data: one finished offline KD run (old rule)
    replayed refresh by refresh with the default (new) selection, its compositional search
    seeded as the agent seeds it; both rules' choices are then measured out of sample
    (``final_comparison``: LOO refit, 5-fold held-out, forward CRPS on the points BO
    evaluated after each refresh). Two rows: NAME-old (the recorded choices) and NAME-new."""
    from types import SimpleNamespace

    import torch

    from optiforge.agents.kernel_discovery.config import KernelDiscoveryConfig
    from optiforge.agents.kernel_discovery.proposers import CompositionalProposer
    from optiforge.agents.kernel_discovery.selection import refresh_kernels
    from optiforge.agents.kit import RunContext
    from optiforge.evals.suites.hdbo import HDBOBenchmark
    from optiforge.solvers.bo.loop import standardize
    from optiforge.solvers.gp import grammar

    row, run_dir, name = args
    old = dict(row)
    old["extra"] = dict(row["extra"])
    old["extra"]["final_loo_crps"] = _replay_oos(row, Path(run_dir))
    old["method"], old["oos_only"] = f"{name}-old", True
    task = next(t for t in HDBOBenchmark().tasks(row["split"]) if t.name == row["task"])
    cand = json.loads((Path(run_dir) / "best" / "candidate.json").read_text())
    X = torch.tensor(cand["X"], dtype=torch.float64)
    b = torch.as_tensor(task.problem(0).bounds, dtype=torch.float64)
    Xu = (X - b[0]) / (b[1] - b[0])
    yy = torch.tensor(cand["y"], dtype=torch.float64)
    config = KernelDiscoveryConfig()
    seeds = [{"expression": grammar.canonical(e)}
             for e in dict.fromkeys(["RBF_ARD", *config.seed_kernels])]  # fmt: skip
    ctx = RunContext(seed=int(row["seed"]))
    state: dict[str, Any] = {"incumbent": {"expression": "RBF_ARD"}, "carried": [], "refreshes": []}
    for r in row["extra"]["refreshes"]:
        n = int(r["n_data"])
        out = refresh_kernels(task, ctx, config, CompositionalProposer(config), seeds, state,  # type: ignore[arg-type]
                       Xu[:n], standardize(yy[:n]), int(r["round"]))  # fmt: skip
        state.update(out)
    new = dict(row)
    new["extra"] = {**row["extra"], "refreshes": state["refreshes"]}
    new["method"], new["oos_only"] = f"{name}-new", True
    from optiforge.agents.kernel_discovery.selection import final_comparison

    trace = SimpleNamespace(X=X, y=yy)
    new["extra"]["final_loo_crps"] = final_comparison(
        task, trace, state["carried"], SimpleNamespace(seed=int(row["seed"]), run_dir=None),  # type: ignore[arg-type]
        config, state["refreshes"],
    )  # fmt: skip
    return [old, new]


def _read(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def report(rows: list[dict[str, Any]], split: str) -> str:
    """The markdown report: average ranks (all methods, all tasks) and OOS counts per KD variant."""
    from optiforge.agents.kernel_discovery.report import oos_counts
    from optiforge.harness.runner import average_ranks

    every = [r for r in rows if "error" not in r and r.get("best_score") is not None]
    ok = [r for r in every if not r.get("oos_only")]  # replays are not BO runs: not ranked
    tasks = sorted({r["task"] for r in ok})
    methods = sorted({r["method"] for r in ok})
    means: dict[str, dict[str, float]] = {}
    used: dict[str, list[int]] = {}
    for t in tasks:
        per = {m: {int(r["seed"]): float(r["best_score"]) for r in ok
                   if r["task"] == t and r["method"] == m} for m in methods}  # fmt: skip
        # paired: every method's mean over the seeds all methods ran on this task
        common = set.intersection(*(set(v) for v in per.values())) if per else set()
        used[t] = sorted(common)
        for m, v in per.items():
            if v:
                pool = [v[s] for s in common] if common else list(v.values())
                means.setdefault(t, {})[m] = sum(pool) / len(pool)
    # rank only tasks every method finished: a missing run must not count as last
    full = {t: per for t, per in means.items() if set(per) == set(methods) and used[t]}
    ranks = average_ranks(full, {t: False for t in full})
    runs = {m: sum(1 for r in ok if r["method"] == m) for m in methods}
    lines = [
        f"## hdbo {split}: average rank over {len(full)} tasks (of {len(tasks)}; lower is better)",
        "",
        "Ranked tasks (seeds every method ran): "
        + ", ".join(f"{t} ({','.join(map(str, used[t]))})" for t in sorted(full))
        + ". A task some method has not finished is not ranked.",
        "",
        "| rank | method | avg rank | runs |",
        "|---|---|---|---|",
    ]
    for i, m in enumerate(sorted(ranks, key=ranks.__getitem__), 1):
        lines.append(f"| {i} | {m} | {ranks[m]:.2f} | {runs[m]} |")
    lines += [
        "",
        "Per task: best noiseless value, mean over the seeds every method ran (all of a "
        "method's seeds where some method has none; lower is better).",
        "",
        "| task | " + " | ".join(methods) + " |",
        "|---|" + "---|" * len(methods),
    ]
    for t in tasks:
        lines.append(
            f"| {t} | "
            + " | ".join(f"{means[t][m]:.4g}" if m in means[t] else "-" for m in methods)
            + " |"
        )
    lines += [
        "",
        "## Out of sample: selected kernel vs RBF-ARD (wins / ties / losses)",
        "",
        "| variant | runs | LOO-CRPS refit on final data | 5-fold held-out CRPS | forward CRPS |",
        "|---|---|---|---|---|",
    ]
    for m in sorted({r["method"] for r in every}):
        kd = [r for r in every if r["method"] == m and (r.get("extra") or {}).get("final_loo_crps")]
        if not kd:
            continue
        c = oos_counts(kd)
        cells = [
            f"{w}/{t}/{lo}" if (w + t + lo) else "n/a"
            for w, t, lo in (c[k] for k in ("loo", "heldout", "forward"))
        ]
        lines.append(f"| {m} | {len(kd)} | " + " | ".join(cells) + " |")
    errs = [r for r in rows if "error" in r]
    if errs:
        lines += ["", f"{len(errs)} rows failed:"] + [
            f"- {r['task']} {r['method']} s{r['seed']}: {r['error'][:200]}" for r in errs
        ]
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--split", default="dev")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--methods", default="")
    ap.add_argument("--tasks", default="")
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--out", default="")
    ap.add_argument("--import", dest="imports", action="append", default=[])
    ap.add_argument(
        "--oos-replay",
        action="append",
        default=[],
        help="DIR=NAME: an offline eval's KD rows with recomputed OOS measures",
    )
    ap.add_argument(
        "--selection-replay",
        default="",
        help="DIR=NAME: replay an offline eval's KD runs with the new selection",
    )
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    from optiforge.agents.kernel_discovery import SPEC
    from optiforge.evals.suites.hdbo import HDBOBenchmark

    out = Path(args.out or tempfile.mkdtemp(prefix="kd-rank-"))
    out.mkdir(parents=True, exist_ok=True)
    rows_path = out / "rows.jsonl"
    methods = [m for m in args.methods.split(",") if m] or list(SPEC.baselines) + list(KD_VARIANTS)
    for m in methods:
        if m not in SPEC.baselines and m not in KD_VARIANTS:
            raise SystemExit(f"unknown method {m!r}")
    tasks = [t.name for t in HDBOBenchmark().tasks(args.split)]
    if args.tasks:
        tasks = [t for t in tasks if t in args.tasks.split(",")]
    done = {(r["task"], int(r["seed"]), r["method"]) for r in _read(rows_path) if "error" not in r}
    jobs = [
        (args.split, t, s, m, str(out / "runs" / f"{t}--{m}--s{s}"))
        for s in range(args.seeds)
        for t in tasks
        for m in methods
        if (t, s, m) not in done
    ]
    if not args.report_only and jobs:
        print(f"{len(jobs)} rows to run -> {rows_path}", flush=True)
        with rows_path.open("a") as fh, ProcessPoolExecutor(args.workers) as ex:
            for row in ex.map(_run_row, jobs):
                fh.write(json.dumps(row, default=str) + "\n")
                fh.flush()
                print(row["task"], row["method"], row["seed"], row.get("best_score"),
                      row.get("wall_s"), row.get("error", "")[:100], flush=True)  # fmt: skip
    rows = _read(rows_path)
    for spec in args.imports:
        d, _, name = spec.partition("=")
        src = Path(d)
        found = (
            _read(src)
            if src.is_file()
            else _read(src / "results.jsonl") + _read(src / "rows.jsonl")
        )
        for r in found:
            if r.get("method") == "kernel-discovery":
                r["method"] = name or "kernel-discovery"
            rows.append(r)
    for spec in args.oos_replay:
        rows += _replayed(spec, out)
    if args.selection_replay:
        d, _, name = args.selection_replay.partition("=")
        cache = out / f"selection-replay-{name}.jsonl"
        have = {(r["task"], int(r["seed"])) for r in _read(cache)}
        todo = [
            (r, str(Path(d) / "runs" / f"{r['task']}--kernel-discovery--s{r['seed']}"), name)
            for r in _read(Path(d) / "results.jsonl")
            if r.get("method") == "kernel-discovery" and "error" not in r
            and (r["task"], int(r["seed"])) not in have
        ]  # fmt: skip
        with cache.open("a") as fh, ProcessPoolExecutor(args.workers) as ex:
            for pair in ex.map(_selection_replay, todo):
                for r in pair:
                    fh.write(json.dumps(r, default=str) + "\n")
                fh.flush()
                fin = [r["extra"]["final_loo_crps"] for r in pair]
                print("selection replay", pair[0]["task"], pair[0]["seed"],
                      [(f.get("discovered_kernel"), f.get("discovered_forward"),
                        f.get("RBF_ARD_forward")) for f in fin], flush=True)  # fmt: skip
        rows += _read(cache)
    latest = {(r["task"], int(r["seed"]), r["method"]): r for r in rows}
    text = report(list(latest.values()), args.split)
    (out / "report.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
