"""B3-PWL claims: same optimal values as HiGHS on every instance, an incumbent on every
instance, node throughput batched vs one-at-a-time (CPU), and the root LP against OR-Tools PDLP.

    PYTHONPATH=. python benchmarks/b3pwl_claims.py --out runs/b3pwl [--sizes tiny,small] [--seeds 0,1]

Every number is measured on this machine in this run: torch on CPU with the dense spmv path
(``spmv="auto"`` picks Triton only on CUDA; no GPU was lent), one thread, float64. The
throughput comparison runs the SAME search with ``batch_size`` 32 and 1 under the same node
cap and reports PDHG-solved nodes per second of LP time, with a 95% t-interval of the
per-instance ratio. HiGHS's nodes are branch-and-cut nodes of its binary formulation (with
presolve, cuts, and its own heuristics): their count and time are reported beside ours, not
as a like-for-like throughput.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import scipy.stats as st
import torch

from optiforge.solvers.pwl import instances
from optiforge.solvers.pwl.bnb import SOS2BranchAndBound
from optiforge.solvers.pwl.model import solve_lp_exact
from optiforge.solvers.pwl.pdhg import BatchedPDHG
from optiforge.solvers.pwl.reference import solve_highs_mip, solve_pdlp_root


def t_interval(x: list[float]) -> tuple[float, float, float]:
    a = np.asarray(x, dtype=float)
    if a.size < 2:
        return float(a.mean()), float("nan"), float("nan")
    h = st.t.ppf(0.975, a.size - 1) * a.std(ddof=1) / np.sqrt(a.size)
    return float(a.mean()), float(a.mean() - h), float(a.mean() + h)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="runs/b3pwl")
    ap.add_argument("--sizes", default="tiny,small,medium,large")
    ap.add_argument("--seeds", default="0,1")
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--throughput-nodes", type=int, default=256)
    args = ap.parse_args()
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sizes = args.sizes.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    t_start = time.perf_counter()
    rows = []
    for fam in instances.FAMILIES:
        for size in sizes:
            for seed in seeds:
                model = instances.make(fam, size, seed)
                ref = solve_highs_mip(model)
                ours = SOS2BranchAndBound(
                    model, batch_size=args.batch, time_limit=args.time_limit
                ).solve()
                rel = abs(ours.value - ref.value) / max(abs(ref.value), 1e-12)
                ts = time.perf_counter()
                root = BatchedPDHG(model).solve(model.lb[None], model.ub[None], eps=1e-8)
                root_s = time.perf_counter() - ts
                pdlp = solve_pdlp_root(model, eps=1e-8)
                exact_root = solve_lp_exact(model, model.lb, model.ub).value
                row = {
                    "instance": model.name, "family": fam, "size": size, "seed": seed,
                    "n": model.n, "m": model.m, "sos2": len(model.sos2),
                    "highs_value": ref.value, "highs_status": ref.status,
                    "highs_nodes": ref.nodes, "highs_s": ref.seconds,
                    "ours_value": ours.value, "certified": ours.certified_value,
                    "rel_diff": rel, "gap": ours.gap, "status": ours.status,
                    "nodes": ours.nodes, "leaves": ours.leaves, "batches": ours.batches,
                    "ours_s": ours.seconds, "lp_s": ours.lp_seconds,
                    "nodes_per_s": ours.nodes_per_second, "incumbent": ours.incumbent_source,
                    "root_ours": float(root.dual_bound[0]), "root_ours_iters": int(root.iterations[0]),
                    "root_ours_s": root_s, "root_pdlp": pdlp.value,
                    "root_pdlp_iters": pdlp.iterations, "root_exact": exact_root, "root_pdlp_s": pdlp.seconds,
                }  # fmt: skip
                rows.append(row)
                print(
                    f"{model.name:22s} HiGHS {ref.value:14.8f} ours {ours.value:14.8f} "
                    f"rel {rel:.1e} gap {ours.gap:.1e} {ours.status:8s} nodes {ours.nodes:5d} "
                    f"{ours.seconds:6.1f}s {ours.nodes_per_second:6.1f} n/s | HiGHS nodes "
                    f"{ref.nodes:4d} {ref.seconds:5.2f}s | inc {ours.incumbent_source}",
                    flush=True,
                )
    # throughput: same search, batch 32 vs 1, capped node count, instances that branch
    thr = []
    for row in rows:
        if row["nodes"] < 16 or row["size"] == "tiny":
            continue
        model = instances.make(row["family"], row["size"], row["seed"])
        rates = {}
        for bs in (args.batch, 1):
            r = SOS2BranchAndBound(
                model, batch_size=bs, max_nodes=args.throughput_nodes, pump_starts=0,
                time_limit=args.time_limit,
            ).solve()  # fmt: skip
            rates[bs] = r.nodes_per_second
        thr.append({"instance": row["instance"], "batched": rates[args.batch], "single": rates[1]})
        print(
            f"throughput {row['instance']:22s} batch {args.batch}: {rates[args.batch]:7.1f} "
            f"nodes/s, batch 1: {rates[1]:7.1f} nodes/s, x{rates[args.batch] / rates[1]:.2f}",
            flush=True,
        )
    total = time.perf_counter() - t_start
    (out / "results.json").write_text(json.dumps({"rows": rows, "throughput": thr}, indent=1))

    lines = [
        "| instance | n | m | SOS2 | HiGHS value | ours value | rel diff | gap | nodes | "
        "time s | nodes/s | HiGHS nodes | HiGHS s | incumbent |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['instance']} | {r['n']} | {r['m']} | {r['sos2']} | {r['highs_value']:.8f} | "
            f"{r['ours_value']:.8f} | {r['rel_diff']:.1e} | {r['gap']:.1e} | {r['nodes']} | "
            f"{r['ours_s']:.1f} | {r['nodes_per_s']:.1f} | {r['highs_nodes']} | "
            f"{r['highs_s']:.2f} | {r['incumbent']} |"
        )
    matched = sum(r["rel_diff"] <= 1e-6 for r in rows)
    inc = sum(np.isfinite(r["ours_value"]) for r in rows)
    summary = [
        f"instances: {len(rows)}; same optimal value as HiGHS (rel <= 1e-6): {matched}; "
        f"incumbent found: {inc}; max rel diff {max(r['rel_diff'] for r in rows):.1e}",
    ]
    if thr:
        ratio = [t["batched"] / t["single"] for t in thr]
        m_, lo, hi = t_interval(ratio)
        bm = t_interval([t["batched"] for t in thr])
        sm = t_interval([t["single"] for t in thr])
        summary.append(
            f"throughput over {len(thr)} instances (CPU, dense torch spmv, {args.throughput_nodes}"
            f"-node cap): batch {args.batch} {bm[0]:.1f} n/s, batch 1 {sm[0]:.1f} n/s, ratio "
            f"{m_:.2f} (95% t-interval {lo:.2f}..{hi:.2f})"
        )
    pd_ratio = [r["root_ours_s"] / max(r["root_pdlp_s"], 1e-9) for r in rows]

    def rel(a: float, b: float) -> float:
        return abs(a - b) / max(abs(b), 1e-12)

    summary.append(
        "root LP vs HiGHS simplex: max rel error of our safe bound "
        f"{max(rel(r['root_ours'], r['root_exact']) for r in rows):.1e}, of OR-Tools PDLP's "
        f"primal objective {max(rel(r['root_pdlp'], r['root_exact']) for r in rows):.1e}; "
        f"our root time / PDLP's, median {np.median(pd_ratio):.1f}"
    )
    summary.append(f"GPU: none lent this session (no GPU numbers). Total run time {total:.0f} s.")
    text = "\n".join(lines + [""] + summary)
    (out / "table.md").write_text(text + "\n")
    print(text)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(15, 4))
    ax[0].scatter([r["highs_value"] for r in rows], [r["ours_value"] for r in rows])
    lim = [min(r["highs_value"] for r in rows), max(r["highs_value"] for r in rows)]
    ax[0].plot(lim, lim, "k--", lw=0.8)
    ax[0].set_xlabel("HiGHS optimal value")
    ax[0].set_ylabel("B3-PWL value")
    ax[0].set_title("optimal values")
    if thr:
        xs = np.arange(len(thr))
        ax[1].bar(xs - 0.2, [t["batched"] for t in thr], 0.4, label=f"batch {args.batch}")
        ax[1].bar(xs + 0.2, [t["single"] for t in thr], 0.4, label="batch 1")
        ax[1].set_xticks(xs, [t["instance"] for t in thr], rotation=60, fontsize=7)
        ax[1].set_ylabel("nodes / s (CPU)")
        ax[1].legend()
    xr = np.arange(len(rows))
    ax[2].bar(xr - 0.2, [r["nodes"] for r in rows], 0.4, label="B3-PWL nodes (PDHG)")
    ax[2].bar(xr + 0.2, [r["highs_nodes"] for r in rows], 0.4, label="HiGHS nodes")
    ax[2].set_yscale("log")
    ax[2].set_xticks(xr, [r["instance"] for r in rows], rotation=90, fontsize=6)
    ax[2].legend()
    fig.tight_layout()
    fig.savefig(out / "b3pwl_claims.png", dpi=120)


if __name__ == "__main__":
    main()
