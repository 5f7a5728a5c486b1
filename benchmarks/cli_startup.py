"""Start-up time of the ``optiforge`` CLI, as a ratio to ``python -c pass``.

Runs each command N times, interleaved with the bare interpreter (so machine load hits
both alike), and prints medians and the ratio of medians. Targets (issue 13, on an idle
2-core machine): ``--help`` < 0.3 s, ``list agents`` < 0.5 s.

    .venv/bin/python benchmarks/cli_startup.py [--runs 15]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = {
    "--help": ["--help"],
    "list agents": ["list", "agents"],
    "list benchmarks": ["list", "benchmarks"],
    "run --help": ["run", "--help"],
}


def _time(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, capture_output=True, check=True)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    exe = str(Path(sys.executable).parent / "optiforge")
    bare = [sys.executable, "-c", "pass"]
    for cmd in [*COMMANDS.values(), []]:  # warm the page cache once
        subprocess.run([exe, *cmd] if cmd else bare, capture_output=True)
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    base: list[float] = []
    for _ in range(args.runs):
        base.append(_time(bare))
        for name, cmd in COMMANDS.items():
            times[name].append(_time([exe, *cmd]))
    b = statistics.median(base)
    print(f"{'python -c pass':18s} {b * 1000:7.0f} ms   1.0x")
    for name, ts in times.items():
        m = statistics.median(ts)
        print(f"{'optiforge ' + name:18s} {m * 1000:7.0f} ms  {m / b:5.1f}x")


if __name__ == "__main__":
    main()
