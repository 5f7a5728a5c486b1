"""Overhead of ``LocalSandbox.run`` against a bare ``subprocess.run`` of the same command.

Runs ``python -c pass`` N times each, interleaved (so machine load hits both alike),
and prints medians and the median ratio per isolation mode (each mode meets the
containment promise it reports; see ``sandboxes.base.CONTAINMENT_PROMISE``).
Target: <= 2.0x per mode.

Same conditions on both sides: the sandbox starts every command in a new session, so
the bare baseline does too (``start_new_session=True``); on a loaded Linux machine the
autogroup scheduler gives each session its own CPU share, and a baseline left in the
benchmark's session ran slower than the sandbox (0.35-0.44x, "faster than bare"). No
pre-imports on either side: both start a cold interpreter (the sandbox's warm zygote is
off here; ``benchmarks/warm_sandbox.py`` measures warm runs). The load average is printed.

    .venv/bin/python benchmarks/sandbox_overhead.py [--runs 30] [--modes bwrap,none]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

from optiforge.sandboxes.local import LocalSandbox, available_isolations


def _bare(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    # a new session, as the sandbox gives every command (same scheduler treatment)
    subprocess.run(cmd, capture_output=True, check=True, start_new_session=True)
    return time.perf_counter() - t0


def _sandboxed(sb: LocalSandbox, cmd: list[str]) -> float:
    t0 = time.perf_counter()
    r = sb.run(cmd, timeout_s=30)
    elapsed = time.perf_counter() - t0
    if not r.ok:
        raise SystemExit(f"sandboxed run failed: rc={r.returncode} {r.stderr[-300:]}")
    return elapsed


def measure(mode: str, runs: int, python: str) -> dict[str, float]:
    """Interleaved timings for one isolation mode; seconds and the ratio of medians."""
    sb = LocalSandbox(isolation=mode, warm=None)  # type: ignore[arg-type]  # cold, like bare
    cmd = [python, "-c", "pass"]
    _bare(cmd), _sandboxed(sb, cmd)  # warm the page cache and the host probe
    bare: list[float] = []
    boxed: list[float] = []
    for i in range(runs):
        # Alternate which goes first so neither always follows the other.
        if i % 2:
            bare.append(_bare(cmd))
            boxed.append(_sandboxed(sb, cmd))
        else:
            boxed.append(_sandboxed(sb, cmd))
            bare.append(_bare(cmd))
    ratios = [b / a for a, b in zip(bare, boxed, strict=True)]
    return {
        "bare_ms": 1e3 * statistics.median(bare),
        "sandbox_ms": 1e3 * statistics.median(boxed),
        "ratio_of_medians": statistics.median(boxed) / statistics.median(bare),
        "median_paired_ratio": statistics.median(ratios),
        "overhead_ms": 1e3 * (statistics.median(boxed) - statistics.median(bare)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--modes", default=",".join(available_isolations()))
    ap.add_argument("--python", default=sys.executable)
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    print(
        f"python -c pass, {args.runs} interleaved runs each, medians; both sides in a new "
        f"session, cold interpreter, no pre-imports; load average {os.getloadavg()}"
    )
    print(f"{'mode':12s} {'bare ms':>9s} {'sandbox ms':>11s} {'overhead ms':>12s} "
          f"{'ratio':>7s} {'paired':>7s}")  # fmt: skip
    for mode in modes:
        m = measure(mode, args.runs, args.python)
        label = mode
        print(
            f"{label:12s} {m['bare_ms']:9.1f} {m['sandbox_ms']:11.1f} {m['overhead_ms']:12.1f} "
            f"{m['ratio_of_medians']:6.2f}x {m['median_paired_ratio']:6.2f}x"
        )
    print(f"load average at the end {os.getloadavg()}")


if __name__ == "__main__":
    main()
