"""The claims of LQZO and FAR-SIGN (issue 24, items 6-7), measured and printed as tables.

LQZO: fine-tune the group scales of an INT4 / INT2 MLP on shifted digits with forward
passes only; LQZO (low-rank, binary-aggregated, scale-isotropic perturbations) against
the quantized-MeZO baseline (full Gaussian, global mu) at equal forward passes, with
ablations (which ingredient matters) and the on-grid weight-tuning variant.

FAR-SIGN: logistic regression on digits, 10 workers of which 2 or 3 Byzantine, on a
simulated clock; asynchronous FAR-SIGN (first- and zeroth-order) against synchronous
SGD with coordinate-wise median / trimmed mean waiting for an ``n - f`` quorum. Final
test accuracy and simulated time to a target accuracy; real seconds for reference
(not a claim: the simulation's own cost). ``--ray`` also runs FAR-SIGN workers as Ray
actors (optional; real asynchrony on this machine's cores).

    python benchmarks/zo_claims_lqzo_farsign.py --quick
    python benchmarks/zo_claims_lqzo_farsign.py --only lqzo-reshape   # ~1 min CPU
    python benchmarks/zo_claims_lqzo_farsign.py --only farsign --ray
"""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np

from optiforge.evals.stats import mean_ci95
from optiforge.solvers.zo import farsign as fs
from optiforge.solvers.zo.lqzo import QZO_BASELINE, digits_finetune_task, finetune


def lqzo_tables(quick: bool) -> None:
    import torch

    torch.set_num_threads(1)
    seeds = range(5)
    passes = 2000
    lrs = (0.01, 0.02) if quick else (0.005, 0.01, 0.02, 0.03)
    configs: dict[str, dict[str, Any]] = {
        "qzo (baseline)": dict(QZO_BASELINE),
        "lqzo": {},
    }
    if not quick:
        configs |= {
            "lqzo rank=None": {"rank": None},
            "lqzo isotropic=False": {"isotropic": False},
            "lqzo aggregate=0": {"aggregate": 0},
            "lqzo rank=8": {"rank": 8},
            "lqzo resample_every=20": {"resample_every": 20},
        }
    print(f"\n## LQZO: scale fine-tuning, shifted digits, {passes} forward passes, seeds 0-4")
    print("| bits | lr | method | test acc (mean ± sd) | train loss | start acc |")
    print("|---|---|---|---|---|---|")
    for bits in (4, 2):
        task = digits_finetune_task(bits, seed=0)
        start = task.accuracy(task.x0)
        for lr in lrs:
            for name, cfg in configs.items():
                accs, losses = [], []
                for s in seeds:
                    opt = finetune(task, passes, seed=s, lr=lr, **cfg)
                    accs.append(task.accuracy(opt.x))
                    losses.append(task.loss(opt.x))
                print(
                    f"| INT{bits} | {lr} | {name} | {np.mean(accs):.3f} ± {np.std(accs):.3f} "
                    f"| {np.mean(losses):.3f} | {start:.3f} |",
                    flush=True,
                )
    print("\n## LQZO variant: on-grid weights (stochastic re-quantization), 2000 passes")
    print("| bits | method | test acc (mean) | train loss | start acc |")
    print("|---|---|---|---|---|")
    for bits in (4, 2):
        task = digits_finetune_task(bits, seed=0, group_size=16, target="weights")
        start = task.accuracy(task.x0)
        grid: dict[str, dict[str, Any]] = {"qzo (baseline)": dict(QZO_BASELINE), "lqzo": {}}
        for name, cfg in grid.items():
            accs, losses = [], []
            for s in range(3):
                opt = finetune(task, 2000, seed=s, mu=0.5, lr=0.005, **cfg)
                accs.append(task.accuracy(opt.x))
                losses.append(task.loss(opt.x))
            print(
                f"| INT{bits} | {name} | {np.mean(accs):.3f} | {np.mean(losses):.3f} | {start:.3f} |",
                flush=True,
            )


def lqzo_reshape_tables() -> None:
    """Reshaped groups vs rescale-only vs quantized MeZO: 8 seeds, paired differences."""
    import torch

    torch.set_num_threads(1)
    seeds = range(8)
    configs: dict[str, dict[str, Any]] = {
        "qzo": dict(QZO_BASELINE),
        "rescale-only": {},
        "reshaped": {"reshape": True},
    }
    print("\n## LQZO reshaping: 2000 passes, seeds 0-7, paired 95% t-intervals of the difference")
    print("| groups | bits | lr | comparison | test acc difference | train loss difference |")
    print("|---|---|---|---|---|---|")
    for g, lr in ((4, 0.01), (4, 0.02), (16, 0.01)):
        for bits in (4, 2):
            task = digits_finetune_task(bits, seed=0, group_size=g)
            res = {}
            for name, cfg in configs.items():
                opts = [finetune(task, 2000, seed=s, lr=lr, **cfg) for s in seeds]
                res[name] = (
                    np.array([task.accuracy(o.x) for o in opts]),
                    np.array([task.loss(o.x) for o in opts]),
                )
            for x, y in (
                ("reshaped", "rescale-only"),
                ("reshaped", "qzo"),
                ("rescale-only", "qzo"),
            ):
                cells = []
                for k in (0, 1):
                    d, h = mean_ci95(list(res[x][k] - res[y][k]))
                    h = h or 0.0
                    cells.append(f"{d:+.4f} [{d - h:+.4f}, {d + h:+.4f}]")
                print(
                    f"| {g} | INT{bits} | {lr} | {x} - {y} | {cells[0]} | {cells[1]} |", flush=True
                )


def farsign_tables(quick: bool, use_ray: bool) -> None:
    seeds = range(2 if quick else 4)
    horizon = 150.0
    target = 0.9
    settings = [("flip", 2), ("flip", 3), ("alie", 2), ("alie", 3), ("constant", 3)]
    if quick:
        settings = [("flip", 3), ("alie", 2)]
    task = fs.digits_task(10, seed=0)
    runners: dict[str, Callable[[fs.Cluster, int], fs.RunTrace]] = {
        "sync median (lr 2)": lambda cl, s: fs.simulate_sync_robust(
            task, cl, horizon=horizon, aggregator="median", lr=2.0, seed=s
        ),
        "sync trimmed mean (lr 2)": lambda cl, s: fs.simulate_sync_robust(
            task, cl, horizon=horizon, aggregator="trimmed_mean", lr=2.0, seed=s
        ),
        "sync mean, no defence (lr 2)": lambda cl, s: fs.simulate_sync_robust(
            task, cl, horizon=horizon, aggregator="mean", lr=2.0, seed=s
        ),
        "FAR-SIGN first-order (K=256)": lambda cl, s: fs.simulate_farsign(
            task, cl, horizon=horizon, k=256, eta=0.3, seed=s
        ),
    }
    if not quick:
        runners |= {
            "sync median (lr 4)": lambda cl, s: fs.simulate_sync_robust(
                task, cl, horizon=horizon, aggregator="median", lr=4.0, seed=s
            ),
            "sync trimmed mean (lr 4)": lambda cl, s: fs.simulate_sync_robust(
                task, cl, horizon=horizon, aggregator="trimmed_mean", lr=4.0, seed=s
            ),
            "FAR-SIGN, no bias correction": lambda cl, s: fs.simulate_farsign(
                task, cl, horizon=horizon, k=256, eta=0.3, beta=0.0, seed=s
            ),
            "FAR-SIGN first-order (K=650=d)": lambda cl, s: fs.simulate_farsign(
                task, cl, horizon=horizon, k=650, eta=0.3, seed=s
            ),
        }
    zo_horizon = 400.0
    print(
        f"\n## FAR-SIGN: digits logistic regression, 10 workers, horizon {horizon:g} "
        f"simulated units, target {target}, seeds 0-{len(seeds) - 1}"
    )
    print("| attack | f | method | final acc | time to target | messages | real s |")
    print("|---|---|---|---|---|---|---|")
    for attack, f in settings:
        for name, run in runners.items():
            traces = [run(fs.Cluster(attack=attack, n_byzantine=f, seed=s), s) for s in seeds]
            tt = [tr.time_to(target) for tr in traces]
            print(
                f"| {attack} | {f} | {name} | {np.mean([tr.final_acc for tr in traces]):.3f} "
                f"| {np.mean(tt):.1f} | {np.mean([tr.messages for tr in traces]):.0f} "
                f"| {np.mean([tr.real_s for tr in traces]):.2f} |",
                flush=True,
            )
    print(
        f"\n## FAR-SIGN zeroth-order workers (K=8, 16 forward passes a message), horizon {zo_horizon:g}"
    )
    print("| attack | f | method | final acc | time to 0.7 | messages |")
    print("|---|---|---|---|---|---|")
    for attack, f in settings:
        zo = {
            "FAR-SIGN zeroth-order": lambda cl, s: fs.simulate_farsign(
                task, cl, horizon=zo_horizon, order="zeroth", k=8, eta=0.1, eval_every=10, seed=s
            ),
            "sync mean, no defence": lambda cl, s: fs.simulate_sync_robust(
                task, cl, horizon=zo_horizon, aggregator="mean", lr=2.0, eval_every=10, seed=s
            ),
        }
        for name, run in zo.items():
            traces = [run(fs.Cluster(attack=attack, n_byzantine=f, seed=s), s) for s in seeds]
            print(
                f"| {attack} | {f} | {name} | {np.mean([tr.final_acc for tr in traces]):.3f} "
                f"| {np.mean([tr.time_to(0.7) for tr in traces]):.1f} "
                f"| {np.mean([tr.messages for tr in traces]):.0f} |",
                flush=True,
            )
    if use_ray:
        ray_table(task)


def ray_only() -> None:
    farsign_tables_ray = fs.digits_task(10, seed=0)
    ray_table(farsign_tables_ray)


def ray_table(task: fs.SoftmaxTask) -> None:
    """FAR-SIGN with Ray actors as workers: real asynchrony, real seconds (small)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:
        print("\n(ray not installed: skipped the Ray actor run)")
        return
    import tempfile

    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=tempfile.mkdtemp(prefix="ray"))
    try:

        @ray.remote(num_cpus=0.25)  # 6 actors on 2 logical CPUs: all must be placed
        class Worker:
            def __init__(self, w: int, byzantine: bool, k: int) -> None:
                self.w, self.byz, self.k = w, byzantine, k
                self.rng = np.random.default_rng(w)

            def signs(self, x: np.ndarray, seed: int) -> tuple[int, int, np.ndarray]:
                time.sleep(float(self.rng.lognormal(-4.0, 0.5)))  # uneven compute, ~20 ms
                idx = self.rng.choice(task.shards[self.w], size=32, replace=False)
                s = np.where(
                    fs.directions(seed, self.k, task.dim) @ task.grad(x, idx) >= 0, 1.0, -1.0
                )
                return self.w, seed, -s if self.byz else s

        k, n, f, messages = 256, 6, 2, 300
        server = fs.FarSignServer(np.zeros(task.dim), k=k, eta=0.3, seed=0)
        workers = [Worker.remote(w, w < f, k) for w in range(n)]  # type: ignore[attr-defined]
        served: list[int] = []
        t0 = time.perf_counter()
        pending = [wk.signs.remote(server.x.copy(), server.new_seed()) for wk in workers]
        for _ in range(messages):
            [ready], pending = ray.wait(pending, num_returns=1)
            w, seed, s = ray.get(ready)
            served.append(w)
            server.apply(w, s, fs.directions(seed, k, task.dim))
            pending.append(workers[w].signs.remote(server.x.copy(), server.new_seed()))
        real = time.perf_counter() - t0
        print(f"\n## FAR-SIGN on Ray actors: {n} workers ({f} flipping signs), {messages} messages")
        counts = np.bincount([int(w) for w in served], minlength=n).tolist()
        print(f"test accuracy {task.accuracy(server.x):.3f} after {real:.1f} s real time")
        print(f"messages per worker {counts} (stale: computed on an older model)")
    finally:
        ray.shutdown()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer seeds and settings")
    ap.add_argument("--only", choices=("lqzo", "lqzo-reshape", "farsign"), default=None)
    ap.add_argument("--ray", action="store_true", help="also run FAR-SIGN workers as Ray actors")
    args = ap.parse_args()
    t0 = time.perf_counter()
    if args.only in (None, "lqzo"):
        lqzo_tables(args.quick)
    if args.only == "lqzo-reshape" or (args.only is None and not args.quick):
        lqzo_reshape_tables()
    if args.only in (None, "farsign"):
        farsign_tables(args.quick, args.ray)
    print(f"\n(total {time.perf_counter() - t0:.0f} s real)")


if __name__ == "__main__":
    main()
