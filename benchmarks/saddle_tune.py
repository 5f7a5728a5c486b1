"""AutoSaddler on saddle: tuned vs base harness on the heldout split, the three ablations,
the LLM-proposer path, the meta use on AutoREM, and SmolLM2.

    python benchmarks/saddle_tune.py [--arms autosaddler,shallow-reflection,...,scripted,meta,local]
        [--seeds 3] [--out /work/evals/saddle] [--agent-model local/FILE.gguf]
        [--local-heldout-tasks N] [--base-only]

Arms (tuning on saddle/dev, 6 rounds; measured on saddle/heldout, 3 runs per task):
- ``autosaddler``: rule proposer, whole-trace diagnosis, one part per patch, validation
  gate; also re-measures every accepted harness version of seed 0 (``versions.png``);
- ``shallow-reflection`` (last error only), ``unconstrained-patch`` (every part at once),
  ``trajectory-repair`` (the repair gate): the paper's three ablations
  (``autosaddler.baselines.ABLATIONS``), otherwise as ``autosaddler``;
- ``scripted``: the LLM-proposer path with a scripted LLM (``agents.autosaddler.testing.scripted_proposer``);
- ``meta``: AutoREM's harness (attempts, tools, time limit) tuned on autoro/dev with a
  simulated reformulator, measured on autoro/heldout (2 runs per task);
- ``local``: the embedded SmolLM2-135M as the terminal agent, rule proposer, 2 rounds of a
  small batch (its episodes take ~40 s on CPU), heldout 1 run per task; ``--agent-model
  local/<file.gguf>`` puts a post-trained file there, ``--local-heldout-tasks N`` measures
  the first N heldout tasks only, ``--base-only`` skips tuning; ``--seeds`` tuning seeds.

The terminal agent's model in every arm but ``local`` is ``SimulatedShellModel``: an
oracle with harness-sensitive defects. Those arms measure AutoSaddler's machinery, not a
model. Rows go to OUT/rows.jsonl (appended; one per arm, seed and harness).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from optiforge.agents.autorem.testing import simulated_reformulator
from optiforge.agents.autosaddler import SaddlerConfig, TerminalTarget, measure, tune
from optiforge.agents.autosaddler.baselines import ABLATIONS
from optiforge.agents.autosaddler.report import ablation_table
from optiforge.agents.autosaddler.testing import scripted_proposer
from optiforge.agents.kit import RunContext
from optiforge.agents.terminal.testing import simulated_llm
from optiforge.sandboxes import get_sandbox

ARMS = {**ABLATIONS, "scripted": {}}
LEGACY = {"main": "autosaddler", "shallow": "shallow-reflection", "whole": "unconstrained-patch",
          "repair": "trajectory-repair"}  # fmt: skip
"""Arm names of rows written before the arms took the ablations' names."""


def _row(out: Path, **row: Any) -> None:
    with (out / "rows.jsonl").open("a") as f:
        f.write(json.dumps(row, default=str) + "\n")


def _m(m: dict[str, Any]) -> dict[str, Any]:
    return {("version" if k == "harness" else k): v for k, v in m.items()}


def run_arm(arm: str, seeds: int, out: Path, sb: Any) -> None:
    target = TerminalTarget(simulated_llm, sb)
    base = target.base()
    mb = measure(target, base, "heldout", runs=3)
    _row(out, arm=arm, seed=None, harness="base", **_m(mb))
    for seed in range(seeds):
        t0 = time.perf_counter()
        cfg = SaddlerConfig(**ARMS[arm])
        llm = scripted_proposer() if arm == "scripted" else None
        res = tune(target, cfg, RunContext(llm=llm, sandbox=sb, seed=seed))
        tuned = target.load(res.best_candidate)
        mt = measure(target, tuned, "heldout", runs=3)
        hist = res.extra["history"]
        _row(out, arm=arm, seed=seed, harness="tuned", **_m(mt), accepted=res.extra["accepted"],
             patches=[p for r in hist if r["accepted"] for p in r["patches"]],
             proposed=sum(len(r["patches"]) for r in hist), tune_s=round(time.perf_counter() - t0, 1),
             rounds=[{k: r.get(k) for k in ("iteration", "batch_pass", "batch_n", "diagnoses", "patches",
                                            "result", "accepted")} for r in hist])  # fmt: skip
        print(
            f"{arm} seed {seed}: base {mb['pass@1']:.3f} -> tuned {mt['pass@1']:.3f} "
            f"(accepted {res.extra['accepted']}) {time.perf_counter() - t0:.0f}s",
            flush=True,
        )
        if arm == "autosaddler" and seed == 0:
            h = base
            for k, r in enumerate([r for r in hist if r["accepted"]]):
                for p in r["patches"]:
                    from optiforge.agents.kit.harness import Patch

                    h = h.apply(Patch(**p))
                mv = measure(target, h, "heldout", runs=3)
                _row(out, arm="versions", seed=0, harness=f"v{k + 1}", **_m(mv),
                     change="; ".join(f"{p['target']} {p['op']} {json.dumps(p['value'])[:40]}" for p in r["patches"]))  # fmt: skip


def run_meta(out: Path, sb: Any) -> None:
    from optiforge.agents.autosaddler.meta import AutoREMTarget

    target = AutoREMTarget(simulated_reformulator, sb)
    t0 = time.perf_counter()
    base = target.base()
    cfg = SaddlerConfig(iterations=4)
    res = tune(target, cfg, RunContext(sandbox=sb, seed=0))
    tuned = target.load(res.best_candidate)
    for name, h in (("base", base), ("tuned", tuned)):
        m = measure(target, h, "heldout", runs=2)
        _row(out, arm="meta", seed=0, harness=name, **_m(m), values=h.values,
             rounds=[{k: r.get(k) for k in ("iteration", "batch_pass", "batch_n", "diagnoses", "patches",
                                            "result", "accepted")} for r in res.extra["history"]])  # fmt: skip
        print(
            f"meta {name}: {h.values} pass@1 {m['pass@1']:.3f} {time.perf_counter() - t0:.0f}s",
            flush=True,
        )


class _HeldoutSubset(TerminalTarget):
    """A terminal target whose heldout split is its first ``n`` tasks (a real model's
    episodes take ~40 s on CPU: a few tasks is what 2 shared cores allow)."""

    def __init__(self, agent_llm: Any, sandbox: Any, n: int | None) -> None:
        super().__init__(agent_llm, sandbox)
        self.n = n

    def tasks(self, split: str) -> list[Any]:
        tasks = super().tasks(split)
        return tasks[: self.n] if split == "heldout" and self.n else tasks


def run_local(
    out: Path,
    sb: Any,
    agent_model: str = "local",
    seeds: int = 1,
    heldout_tasks: int | None = None,
    base_only: bool = False,
) -> None:
    """SmolLM2 (``agent_model``: ``local`` or ``local/<file.gguf>``, e.g. a post-trained
    file) as the terminal agent, rule proposer, 2 rounds of a small batch per tuning seed;
    base and tuned harness measured on (the first ``heldout_tasks`` tasks of) heldout, 1 run
    per task. ``base_only``: measure the base harness alone (no tuning)."""
    from optiforge.llm.offline import make_llm

    llm = make_llm(agent_model)
    target = _HeldoutSubset(lambda seed: llm, sb, heldout_tasks)
    label = "SmolLM2-135M-Instruct" if agent_model == "local" else Path(agent_model).name
    t0 = time.perf_counter()
    measured: dict[str, Any] = {}

    def show(r: dict[str, Any]) -> None:
        print(f"local round {r['iteration']}: {r['batch_pass']}/{r['batch_n']} {r.get('diagnoses')} "
              f"{[p['target'] for p in r['patches']]} {r['result']} {time.perf_counter() - t0:.0f}s", flush=True)  # fmt: skip

    for seed in range(seeds):
        if base_only:
            todo, history = [("base", target.base())], []
        else:
            cfg = SaddlerConfig(iterations=2, batch=2, runs=1, val_tasks=3, val_runs=1, workers=1)
            res = tune(target, cfg, RunContext(sandbox=sb, seed=seed), on_round=show)
            todo = [("base", target.base()), ("tuned", target.load(res.best_candidate))]
            history = res.extra["history"]
        for name, h in todo:
            # nothing accepted: the tuned harness is the base one, measured once
            m = measured.get(h.version) or measure(target, h, "heldout", runs=1, workers=1)
            measured[h.version] = m
            _row(out, arm="local", seed=seed, harness=name, **_m(m), model=label,
                 agent_model=agent_model, heldout_tasks=heldout_tasks,
                 rounds=[{k: r.get(k) for k in ("iteration", "batch_pass", "batch_n", "diagnoses", "patches",
                                                "result", "accepted")} for r in history])  # fmt: skip
            print(
                f"local {label} seed {seed} {name}: pass@1 {m['pass@1']:.3f} stops {m['stops']} "
                f"{time.perf_counter() - t0:.0f}s",
                flush=True,
            )


def table(out: Path) -> str:
    rows = [json.loads(ln) for ln in (out / "rows.jsonl").read_text().splitlines() if ln.strip()]
    rows = [{**r, "arm": LEGACY.get(r["arm"], r["arm"])} for r in rows]
    return ablation_table([r for r in rows if r["arm"] in ARMS])


def local_table(out: Path) -> str:
    """The ``local`` arm's rows: a real model as the terminal agent, base vs tuned harness."""
    rows = [json.loads(ln) for ln in (out / "rows.jsonl").read_text().splitlines() if ln.strip()]
    lines = ["| agent model | tuning seed | harness | heldout tasks | pass@1 | stops | "
             "patches accepted |", "|---|---|---|---|---|---|---|"]  # fmt: skip
    for r in rows:
        if r["arm"] != "local":
            continue
        accepted = sum(bool(x.get("accepted")) for x in r.get("rounds") or [])
        lines.append(f"| {r.get('agent_model', 'local')} | {r['seed']} | {r['harness']} | "
                     f"{r['tasks']} | {r['pass@1']:.3f} | {r['stops']} | {accepted} |")  # fmt: skip
    return "\n".join(lines)


def plot_versions(out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(ln) for ln in (out / "rows.jsonl").read_text().splitlines() if ln.strip()]
    base = next(
        (
            r
            for r in rows
            if LEGACY.get(r["arm"], r["arm"]) == "autosaddler" and r["harness"] == "base"
        ),
        None,
    )
    vers = [r for r in rows if r["arm"] == "versions"]
    if base is None or not vers:
        return
    names = ["base"] + [f"{r['harness']}\n{r.get('change', '')[:28]}" for r in vers]
    fig, ax = plt.subplots(figsize=(2 + 2.2 * len(names), 3.6))
    ax.plot(range(len(names)), [base["pass@1"]] + [r["pass@1"] for r in vers], "o-", label="pass@1")
    ax.plot(
        range(len(names)), [base["pass^3"]] + [r["pass^3"] for r in vers], "s--", label="pass^3"
    )
    ax.set_xticks(range(len(names)), names, fontsize=7)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("saddle/heldout (simulated agent)")
    ax.set_title("AutoSaddler: each accepted harness version, measured on heldout")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "versions.png", dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arms", default=",".join([*ARMS, "meta"]))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=Path("runs/saddle-tune"))
    ap.add_argument("--agent-model", default="local", help="local arm: local or local/<file.gguf>")
    ap.add_argument(
        "--local-heldout-tasks", type=int, default=0, help="local arm: first N heldout tasks"
    )
    ap.add_argument("--base-only", action="store_true", help="local arm: base harness only")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    sb = get_sandbox("local")
    for arm in args.arms.split(","):
        if arm == "meta":
            run_meta(args.out, sb)
        elif arm == "local":
            tasks = args.local_heldout_tasks or None
            run_local(args.out, sb, args.agent_model, args.seeds, tasks, args.base_only)
        else:
            run_arm(arm, args.seeds, args.out, sb)
    print(table(args.out))
    print(local_table(args.out))
    plot_versions(args.out)


if __name__ == "__main__":
    main()
