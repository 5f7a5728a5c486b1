"""The claims of BROS (issue 44, item 4), measured and printed as tables.

1. Bias of the Hessian-action estimate: BROS's bi-probe ``P P^T H Q Q^T v`` against the
   uncorrected single-probe ``P P^T H P P^T v``, many draws at a fixed point of the
   data-cleaning inner loss, against the exact HVP (double backward).
2. Peak memory of one step (torch profiler allocations, CPU; checked deterministic), plus the
   persistent state (parameters, ``v``, ``h``, ``lam``), BROS vs MA-SOBA, over model widths.
3. Final quality, BROS vs MA-SOBA (plus BROS without the correction and no reweighting at
   all), on hyper-data cleaning (digits, 40% of the training labels corrupted: test accuracy
   and F1 of flagging corrupted examples by ``lam < 0``) and on data reweighting (digits with
   classes 5-9 at 10%: balanced test accuracy). 2-hidden-layer MLP (256 wide), the catalogue's
   default hyperparameters (chosen on seed 0 in a small grid), seeds 1..8, paired 95%
   t-intervals of the differences.

    python benchmarks/bros_claims.py            # ~4 min on one core
    python benchmarks/bros_claims.py --quick
    python benchmarks/bros_claims.py --only-quality --steps 2000   # does the gap close?
"""

from __future__ import annotations

import argparse
import os
import time
from functools import partial

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch

from optiforge.evals.stats import mean_ci95
from optiforge.solvers.train import catalogue
from optiforge.solvers.train.bilevel import (
    fresh_state,
    probe_bias,
    run_bilevel,
    step_fn,
    step_peak_bytes,
)
from optiforge.solvers.train.bilevel_digits import DigitsCleaning, DigitsImbalance


def ci(xs: list[float], fmt: str = "{:.3f}") -> str:
    m, h = mean_ci95(xs)
    return fmt.format(m) + (" [" + fmt.format(m - h) + ", " + fmt.format(m + h) + "]" if h is not None else "")  # fmt: skip


def bias_table(n: int) -> None:
    print(f"\n## Hessian-action estimate vs exact HVP ({n} draws, data-cleaning inner loss)")
    print("| model | rank | probes | <est,v>/<Hv,v> mean [95% CI] | rel. error of the mean | noise floor |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for hidden, rank in ((0, 4), (32, 4), (32, 16)):
        prob = DigitsCleaning(hidden=hidden)
        res = run_bilevel(prob, "ma-soba", catalogue.get("ma-soba").defaults(), 200, 0)
        gen = torch.Generator().manual_seed(0)
        ib = prob.inner_batch(0, gen)
        lam = res.lam
        assert lam is not None
        v = [torch.randn(p.shape, generator=gen) for p in res.model.parameters()]
        label = "linear 64-10" if not hidden else f"MLP 64-{hidden}-10"
        for probes in ("bi", "single"):
            g = partial(prob.inner_loss, lam=lam, batch=ib)
            pb = probe_bias(g, res.model, v, rank, n, gen, probes)  # type: ignore[arg-type]
            name = "two (BROS)" if probes == "bi" else "one (uncorrected)"
            print(f"| {label} | {rank} | {name} | {ci(pb.ratios.tolist())} | {pb.rel_err:.3f} | {pb.noise_floor:.3f} |")  # fmt: skip


def memory_table() -> None:
    print("\n## Peak memory of one step (KiB; transient = profiler peak of allocations in the step, persistent = parameters + v + h + lam)")  # fmt: skip
    print("| model | d | MA-SOBA transient | BROS transient | ratio | MA-SOBA total | BROS total | ratio |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for hidden, depth in ((128, 1), (256, 2), (512, 2), (1024, 2)):
        prob = DigitsCleaning(hidden=hidden, depth=depth)
        row = {}
        for name in ("ma-soba", "bros"):
            hp = catalogue.get(name).defaults()
            model, lam = prob.make(0)
            state = fresh_state(model, lam)
            gen, sk = torch.Generator().manual_seed(1), torch.Generator().manual_seed(2)
            ib, ob = prob.inner_batch(0, gen), prob.outer_batch(0, gen)
            fn = step_fn(name)  # type: ignore[arg-type]
            one = partial(fn, prob, model, lam, state, ib, ob, hp, sk)
            peaks = [step_peak_bytes(one) for _ in range(2)]
            assert peaks[0] == peaks[1], peaks  # deterministic on CPU
            persistent = sum(p.numel() * 4 for p in model.parameters()) + state.nbytes() + 4 * lam.numel()  # fmt: skip
            row[name] = (peaks[0] / 1024, (peaks[0] + persistent) / 1024)
            d = sum(p.numel() for p in model.parameters())
        (mt, mT), (bt, bT) = row["ma-soba"], row["bros"]
        label = f"MLP 64-{'-'.join([str(hidden)] * depth)}-10"
        print(f"| {label} | {d} | {mt:.0f} | {bt:.0f} | {bt / mt:.2f} | {mT:.0f} | {bT:.0f} | {bT / mT:.2f} |")  # fmt: skip


def quality_tables(
    seeds: list[int], steps: int, hidden: int, depth: int, rank: int | None, main_only: bool
) -> None:
    tasks = [DigitsCleaning(hidden=hidden, depth=depth), DigitsImbalance(hidden=hidden, depth=depth)]  # fmt: skip
    bros_hp = catalogue.get("bros").defaults({"rank": rank} if rank else {})
    methods = {
        "MA-SOBA": ("ma-soba", catalogue.get("ma-soba").defaults()),
        f"BROS r={int(bros_hp['rank'])}": ("bros", bros_hp),
        "BROS one probe": ("bros-single", bros_hp),
        "no reweighting": ("ma-soba", {**catalogue.get("ma-soba").defaults(), "lr_outer": 0.0}),
    }
    if main_only:
        methods = dict(list(methods.items())[:2])
    for prob in tasks:
        acc: dict[str, list[float]] = {k: [] for k in methods}
        f1: dict[str, list[float]] = {k: [] for k in methods}
        secs: dict[str, float] = dict.fromkeys(methods, 0.0)
        for seed in seeds:
            for label, (name, hp) in methods.items():
                t = time.process_time()
                res = run_bilevel(prob, name, hp, steps, seed)  # type: ignore[arg-type]
                secs[label] += time.process_time() - t
                acc[label].append(prob.test_accuracy(res.model))
                if isinstance(prob, DigitsCleaning) and res.lam is not None:
                    f1[label].append(prob.detection_f1(res.lam))
        cleaning = isinstance(prob, DigitsCleaning)
        print(f"\n## {prob.name}: {prob.description}; MLP {hidden}x{depth}, {steps} steps, seeds {seeds[0]}-{seeds[-1]}")  # fmt: skip
        print("| method | test accuracy | minus MA-SOBA (paired) |" + (" corrupted-label F1 | minus MA-SOBA |" if cleaning else "") + " CPU s/run |")  # fmt: skip
        print("|---|---|---|" + ("---|---|" if cleaning else "") + "---|")
        for label in methods:
            da = ci([a - b for a, b in zip(acc[label], acc["MA-SOBA"], strict=True)], "{:+.3f}")
            cells = f"| {label} | {ci(acc[label])} | {da if label != 'MA-SOBA' else ''} |"
            if cleaning:
                df = ci([a - b for a, b in zip(f1[label], f1["MA-SOBA"], strict=True)], "{:+.3f}")
                cells += f" {ci(f1[label]) if label != 'no reweighting' else '-'} | {df if label not in ('MA-SOBA', 'no reweighting') else ''} |"  # fmt: skip
            print(cells + f" {secs[label] / len(seeds):.1f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--steps", type=int, default=None, help="quality runs' steps (1000)")
    ap.add_argument("--rank", type=int, default=None, help="BROS's rank (catalogue default)")
    ap.add_argument("--only-quality", action="store_true", help="MA-SOBA and BROS only")
    args = ap.parse_args()
    torch.set_num_threads(1)
    t0 = time.time()
    if not args.only_quality:
        bias_table(500 if args.quick else 3000)
        memory_table()
    seeds = list(range(1, 4 if args.quick else 9))
    steps = args.steps or (300 if args.quick else 1000)
    quality_tables(seeds, steps, 256, 2, args.rank, args.only_quality)
    print(f"\n(total {time.time() - t0:.0f} s)")


if __name__ == "__main__":
    main()
