"""Pretrain FICBO's transformer on the feedback prior and write ``ficbo_weights.pt``.

Seeded and single-threaded, so a rerun reproduces the shipped weights on the same torch
build. The shipped file was trained with the defaults below (``--steps 10000``, batch 32,
seed 0): 1703 s (28 min) on one thread of a 2-core machine shared with other jobs (about
0.07 s a step when the core is free, so ~12 min on an idle core), 109,698 parameters,
0.46 MB, final loss -0.95 (mean Gaussian NLL of standardized targets over the last 100
steps). The time is stored in the file's ``meta`` and printed at the end::

    OMP_NUM_THREADS=1 python benchmarks/ficbo_pretrain.py
    OMP_NUM_THREADS=1 python benchmarks/ficbo_pretrain.py --steps 200 --out /tmp/w.pt
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from optiforge.solvers.bandits.ficbo import WEIGHTS, FICBONet, save_weights, train


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, default=WEIGHTS)
    args = ap.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    t0 = time.perf_counter()
    net, losses = train(args.steps, seed=args.seed, batch=args.batch, net=FICBONet(), log_every=5)
    wall = time.perf_counter() - t0
    save_weights(net, args.out, steps=args.steps, batch=args.batch, seed=args.seed,
                 train_seconds=round(wall, 1), final_loss=round(losses[-1], 4),
                 torch=str(torch.__version__))  # fmt: skip
    n_par = sum(p.numel() for p in net.parameters())
    size = args.out.stat().st_size
    print(
        f"trained {args.steps} steps x {args.batch} functions in {wall:.0f} s; "
        f"{n_par} parameters; final loss {losses[-1]:.4f}; wrote {args.out} ({size / 1e6:.2f} MB)"
    )


if __name__ == "__main__":
    main()
