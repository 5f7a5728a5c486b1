"""Train the ``nco`` suite's teacher: a POMO-style attention policy for TSP-20 on CPU.

    .venv/bin/python benchmarks/train_tsp_teacher.py [--steps 1500] [--batch 64] [--minutes 12]

Writes ``optiforge/solvers/nco/tsp_teacher.pt`` and prints, every 100 steps, the greedy
POMO tour length on 128 fixed validation instances and its gap to the 2-opt + Or-opt
reference. Seeded; torch threads as the machine has cores.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from optiforge.solvers.nco.policy import CHECKPOINT, TSPPolicy, tour_lengths
from optiforge.solvers.nco.tsp import local_search, uniform_instances


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--minutes", type=float, default=12.0)
    ap.add_argument("--lr", type=float, default=1e-4 * 3)
    args = ap.parse_args()
    torch.manual_seed(0)
    config = {"dim": 64, "heads": 4, "layers": 3}
    model = TSPPolicy(**config)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    val = torch.tensor(uniform_instances(args.n, 128, 999), dtype=torch.float32)
    ref = float(np.mean([local_search(x.numpy(), 4)[1] for x in val]))
    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    for step in range(1, args.steps + 1):
        coords = torch.tensor(rng.random((args.batch, args.n, 2)), dtype=torch.float32)
        tours, logp = model.rollout(coords, greedy=False)
        length = tour_lengths(coords, tours)
        adv = length - length.mean(1, keepdim=True)
        loss = (adv.detach() * logp).mean()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 100 == 0 or step == args.steps:
            with torch.no_grad():
                t, _ = model.rollout(val, greedy=True)
                greedy = float(tour_lengths(val, t).min(1).values.mean())
            print(
                f"step {step}: POMO greedy {greedy:.4f}, reference {ref:.4f}, gap "
                f"{100 * (greedy / ref - 1):.2f}%, {time.perf_counter() - t0:.0f}s",
                flush=True,
            )
            torch.save(
                {
                    "config": config,
                    "state": model.state_dict(),
                    "n": args.n,
                    "steps": step,
                    "val_gap_pct": 100 * (greedy / ref - 1),
                },
                CHECKPOINT,
            )
        if time.perf_counter() - t0 > 60 * args.minutes:
            break
    print(f"wrote {CHECKPOINT}")


if __name__ == "__main__":
    main()
