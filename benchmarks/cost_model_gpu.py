"""Validate kernelarena's CPU cost model against GPU timings (run on a GPU machine).

    python benchmarks/cost_model_gpu.py [--tasks t2t_softmax,...] [--out cost_model_gpu.json]
    python benchmarks/cost_model_gpu.py --phase count   # the CPU half only (any machine)

For each task, the candidates are the starting kernel, a few of its template's parameter
variants and the Hawkeye expert examples that compute the task's op. Phase ``count`` runs
in a child process with no GPU visible (``CUDA_VISIBLE_DEVICES=""``), so the suite scores
every candidate by the cost model (``cost_speedup``); phase ``time`` scores the same
candidates on the GPU (``speedup``, CUDA-event medians against the same baseline). The
report: per task and over all candidates, Spearman's rank correlation between estimate and
measurement, and the fraction of candidate pairs the two order the same way. Exits 0 with a
message without CUDA (after the count phase when ``--phase count``).

Where the CPU ranking is meant to agree with the GPU: tile sizes of the matmul tasks (the
A/B re-reads of ``optiforge.kernels.traffic``'s tile/launch model, counted on the 64^3
counting case), launch count (fusion), tensor cores (``tl.dot``) and the re-reads of
row kernels. Where it is not: ``GROUP_M`` (L2 reuse: the model has no cache),
``num_warps`` and ``num_stages`` tie on CPU by construction; pairs the estimate ties are
left out of ``pairs_ordered_alike``. The absolute estimate of a large matmul is
pessimistic (every requested byte is charged to HBM), so compare orders, not ratios.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

TASKS = "t2t_softmax,torch_softmax,torch_logsoftmax,t2t_matmul,torch_matmul_bias_relu,t2t_add,torch_layernorm"


def candidates(task: Any, variants: int = 3) -> dict[str, str]:
    from optiforge.agents.hawkeye.strategies import TAXONOMY
    from optiforge.agents.hawkeye.testing import EXAMPLE_OPS
    from optiforge.kernels.templates import TEMPLATES, render

    out = {"seed": task.seed_code}
    space = TEMPLATES[task.op][2]
    keys = [k for k in space if len(space[k]) > 1][:3]
    for combo in itertools.islice(itertools.product(*(space[k][1:3] for k in keys)), variants):
        params = dict(zip(keys, combo, strict=True))
        out["params " + json.dumps(params, sort_keys=True)] = render(task.op, params)
    for s in TAXONOMY.values():
        e = s.archs["interpreter"]
        if e.example and task.op in EXAMPLE_OPS.get(e.example, ()):
            out[f"example {e.example}"] = e.example_source()
    return out


def score_all(tasks: list[str], metric: str) -> dict[str, dict[str, float | None]]:
    from optiforge.evals.registry import get_benchmark
    from optiforge.sandboxes import get_sandbox

    sb = get_sandbox("local")
    by = {t.name: t for t in get_benchmark("kernelarena").tasks("dev")}
    out: dict[str, dict[str, float | None]] = {}
    for name in tasks:
        out[name] = {}
        for label, code in candidates(by[name]).items():
            s = by[name].evaluate({"code": code}, sb)
            out[name][label] = (
                float(s.metrics[metric]) if s.passed and metric in s.metrics else None
            )
            print(f"{metric} {name} {label}: {out[name][label]}", flush=True)
    return out


def spearman(xs: list[float], ys: list[float]) -> float:
    def ranks(v: list[float]) -> list[float]:
        order = sorted(range(len(v)), key=lambda i: v[i])
        r = [0.0] * len(v)
        for k, i in enumerate(order):
            r[i] = float(k)
        return r

    rx, ry = ranks(xs), ranks(ys)
    n = len(xs)
    mx, my = sum(rx) / n, sum(ry) / n
    cov = sum((a - mx) * (b - my) for a, b in zip(rx, ry, strict=True))
    vx = sum((a - mx) ** 2 for a in rx) ** 0.5
    vy = sum((b - my) ** 2 for b in ry) ** 0.5
    return cov / (vx * vy) if vx and vy else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default=TASKS)
    ap.add_argument("--phase", choices=["all", "count", "time"], default="all")
    ap.add_argument("--out", type=Path, default=Path("cost_model_gpu.json"))
    args = ap.parse_args()
    tasks = args.tasks.split(",")
    counts_path = args.out.with_suffix(".counts.json")
    if args.phase == "count":
        counts_path.write_text(json.dumps(score_all(tasks, "cost_speedup"), indent=1))
        return
    if args.phase == "all":
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
        cmd = [
            sys.executable,
            __file__,
            "--phase",
            "count",
            "--tasks",
            args.tasks,
            "--out",
            str(args.out),
        ]
        subprocess.run(cmd, env=env, check=True)
    import torch

    if not torch.cuda.is_available():
        print("no CUDA device: the count phase ran, the timing phase needs a GPU")
        return
    est = json.loads(counts_path.read_text())
    meas = score_all(tasks, "speedup")
    pairs = [(est[t][c], meas[t][c]) for t in tasks for c in est[t] if est[t][c] and meas[t].get(c)]
    same = total = 0
    for t in tasks:
        both = [(est[t][c], meas[t][c]) for c in est[t] if est[t][c] and meas[t].get(c)]
        for (e1, m1), (e2, m2) in itertools.combinations(both, 2):
            if abs(e1 - e2) > 1e-9 and abs(m1 - m2) / max(m1, m2) > 0.03:
                total += 1
                same += (e1 > e2) == (m1 > m2)
    report = {"estimated": est, "measured": meas, "spearman_all": spearman(*map(list, zip(*pairs, strict=True))) if pairs else None,
              "pairs_ordered_alike": f"{same}/{total}", "device": torch.cuda.get_device_name()}  # fmt: skip
    args.out.write_text(json.dumps(report, indent=1))
    print(
        json.dumps(
            {k: v for k, v in report.items() if k not in ("estimated", "measured")}, indent=1
        )
    )


if __name__ == "__main__":
    main()
