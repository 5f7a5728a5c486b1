"""Screenshots of ``optiforge report`` for one run and one eval, to look at the page.

Runs, offline::

    optiforge run kernel-discovery --bench hdbo/levy4_in_25 --budget 30 --memory none --out WORK/run
    optiforge eval evolve --bench funcfit --split dev --seeds 2 --budget 8 --memory none --out WORK/eval

then ``optiforge report`` on both, and screenshots each ``report.html`` with headless
Chromium (``apt-get install -y chromium``)::

    python benchmarks/report_screenshot.py --out /work/notes
    python benchmarks/report_screenshot.py --out /work/notes --reuse WORK   # no new runs

writes ``OUT/report_run.png`` and ``OUT/report_eval.png``. The run takes a few minutes on
2 busy cores; ``--reuse`` renders and screenshots existing directories only.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

CLI = [sys.executable, "-m", "optiforge.cli"]
RUN = [
    "run",
    "kernel-discovery",
    "--bench",
    "hdbo/levy4_in_25",
    "--budget",
    "30",
    "--memory",
    "none",
]
EVAL = ["eval", "evolve", "--bench", "funcfit", "--split", "dev", "--seeds", "2", "--budget", "8",
        "--memory", "none"]  # fmt: skip


def _optiforge(*args: str) -> None:
    print("+ optiforge", " ".join(args), flush=True)
    subprocess.run([*CLI, *args], check=True)


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    raise SystemExit("no chromium: apt-get install -y chromium")


def screenshot(page: Path, png: Path, height: int = 4000) -> Path:
    """``png``: the top ``height`` pixels of ``page`` at 1280 wide, headless."""
    subprocess.run(
        [_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--screenshot={png}", f"--window-size=1280,{height}", page.resolve().as_uri()],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    return png


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("/work/notes"), help="where the PNGs go")
    ap.add_argument("--reuse", type=Path, help="a work dir from an earlier call (has run/, eval/)")
    ap.add_argument("--height", type=int, default=4000, help="run page height in pixels")
    args = ap.parse_args()
    work = args.reuse or Path(tempfile.mkdtemp(prefix="optiforge-report-"))
    run_dir, eval_dir = work / "run", work / "eval"
    if args.reuse is None:
        _optiforge(*RUN, "--out", str(run_dir))
        _optiforge(*EVAL, "--out", str(eval_dir))
    args.out.mkdir(parents=True, exist_ok=True)
    for name, d, height in (("run", run_dir, args.height), ("eval", eval_dir, 2900)):
        _optiforge("report", str(d))
        png = screenshot(d / "report.html", args.out / f"report_{name}.png", height)
        print(f"{name}: {d}/report.html -> {png}")


if __name__ == "__main__":
    main()
