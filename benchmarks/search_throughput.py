"""Evaluations per second of the shared search loop: 1 vs 2 executor workers.

The proposer is instant (Gaussian steps); the evaluator does a fixed amount of pure-Python
CPU work (``--work-ms`` of busy loop per evaluation, calibrated at start) so that the
measurement is about the loop's fan-out, not about the evaluator. Both configurations run
in this process, one after the other, over the same number of evaluations; the ratio is
printed (target: >= 1.7x on 2 cores).

``--propose-ms`` makes each proposal round wait that long (an LLM call's latency): with
the loop's default (``SearchConfig.overlap=None``) 2 workers pipeline the rounds, so the
wait overlaps the evaluations; lock-step rounds (1 worker, or an older loop) add it.

    python benchmarks/search_throughput.py [--evaluations 64] [--work-ms 40] [--propose-ms 0]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

from optiforge.agents.kit import RunContext, SearchConfig, run_search
from optiforge.evals.protocol import Score
from optiforge.sandboxes import ProcessExecutor
from optiforge.testing.toy_search import GaussianProposer, ToyProblem


def _spin(n: int) -> int:
    acc = 0
    for i in range(n):
        acc = (acc + i * i) % 1_000_003
    return acc


def calibrate(ms: float) -> int:
    """Loop count that takes about ``ms`` milliseconds here."""
    n = 100_000
    t = time.perf_counter()
    _spin(n)
    dt = time.perf_counter() - t
    return max(1, int(n * (ms / 1000.0) / dt))


class BusyEvaluator:
    """Trivial objective plus a fixed amount of CPU work (picklable)."""

    def __init__(self, spins: int) -> None:
        self.spins = spins

    def __call__(self, payload: dict[str, Any]) -> Score:
        _spin(self.spins)
        a, b = payload["a"], payload["b"]
        return Score(value=(a - 3) ** 2 + (b + 1) ** 2, passed=True)


class BusyProblem(ToyProblem):
    def __init__(self, spins: int) -> None:
        super().__init__()
        self.spins = spins

    def evaluator(self) -> BusyEvaluator:  # type: ignore[override]
        return BusyEvaluator(self.spins)


class SlowProposer(GaussianProposer):
    """``GaussianProposer`` whose every round waits ``delay_s`` first (an LLM call)."""

    def __init__(self, delay_s: float) -> None:
        super().__init__()
        self.delay_s = delay_s

    def propose(self, *args: Any, **kw: Any) -> Any:
        time.sleep(self.delay_s)
        return super().propose(*args, **kw)


def measure(workers: int, n_eval: int, spins: int, batch: int, propose_s: float = 0.0) -> float:
    with tempfile.TemporaryDirectory() as d, ProcessExecutor(workers) as ex:
        ex.submit(_spin, 10).result()  # start the workers before timing
        if workers > 1:
            for f in [ex.submit(_spin, 10) for _ in range(workers * 2)]:
                f.result()
        ctx = RunContext(executor=ex, run_dir=Path(d) / "run", seed=0)
        cfg = SearchConfig(max_evaluations=n_eval, proposals_per_round=batch, population_size=batch)
        t = time.perf_counter()
        res = run_search(BusyProblem(spins), SlowProposer(propose_s), ctx, cfg)
        dt = time.perf_counter() - t
    assert res.n_evaluations == n_eval
    return n_eval / dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--evaluations", type=int, default=65)
    ap.add_argument("--work-ms", type=float, default=40.0)
    ap.add_argument("--batch", type=int, default=8, help="proposals per round")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--propose-ms", type=float, default=0.0, help="wait per proposal round")
    args = ap.parse_args()
    spins = calibrate(args.work_ms)
    rows = []
    for r in range(args.repeats):
        one = measure(1, args.evaluations, spins, args.batch, args.propose_ms / 1000)
        two = measure(2, args.evaluations, spins, args.batch, args.propose_ms / 1000)
        rows.append((one, two))
        print(
            f"repeat {r + 1}: 1 worker {one:7.2f} eval/s | 2 workers {two:7.2f} eval/s | ratio {two / one:.2f}x"
        )
    best_one = max(r[0] for r in rows)
    best_two = max(r[1] for r in rows)
    print(
        f"\n| workers | evaluations/s |\n|---|---|\n| 1 | {best_one:.2f} |\n| 2 | {best_two:.2f} |"
    )
    print(
        f"ratio 2 vs 1 workers: {best_two / best_one:.2f}x (target >= 1.7x; evaluator {args.work_ms:.0f} ms CPU each)"
    )


if __name__ == "__main__":
    main()
