"""Per-candidate wall time of the funcfit evaluator, cold vs warm sandbox (issue 14).

    .venv/bin/python benchmarks/warm_sandbox.py [--n 30]

Cold: ``LocalSandbox()`` (a fresh sandbox and interpreter per candidate, numpy
imported each time). Warm: ``LocalSandbox(warm=task.warm_modules)``, as a run builds it
(each candidate a fresh, equally isolated fork of a zygote that imported numpy, json and
math). Prints the median of ``n``
evaluations each and the cold/warm ratio; the zygote's one-off start is reported apart.
"""

from __future__ import annotations

import argparse
import statistics
import time

from optiforge.evals.suites.funcfit import FuncFitBenchmark
from optiforge.sandboxes import LocalSandbox

CANDIDATE = {"code": "def f(x):\n    return 3*x**2 - 2*x + 1 + 0.01*np.sin(x)\n"}


def _times(sb: LocalSandbox, n: int) -> list[float]:
    task = FuncFitBenchmark().tasks("dev")[0]
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        score = task.evaluate(CANDIDATE, sb)
        out.append(time.perf_counter() - t0)
        assert score.passed, score.details
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=30)
    args = ap.parse_args()
    cold = LocalSandbox()
    warm = LocalSandbox(warm=list(FuncFitBenchmark().tasks("dev")[0].warm_modules))
    print(f"isolation: {cold.isolation}; warm active: {warm.warm_active()}")
    if not warm.warm_active():
        print(f"warm unavailable here: {warm.protections().notes}")
    _times(cold, 2)  # page cache, probes
    t0 = time.perf_counter()
    _times(warm, 1)  # starts the zygote
    start = time.perf_counter() - t0
    c = statistics.median(_times(cold, args.n))
    w = statistics.median(_times(warm, args.n))
    warm.close()
    print(f"zygote start + first warm evaluation: {start * 1e3:.1f} ms")
    print(f"cold per candidate (median of {args.n}): {c * 1e3:.1f} ms")
    print(f"warm per candidate (median of {args.n}): {w * 1e3:.1f} ms")
    print(f"cold/warm ratio: {c / w:.2f}x")


if __name__ == "__main__":
    main()
