"""One OpenEvolve run of the funcfit/quadratic toy task (run with OpenEvolve's own venv).

Started by ``benchmarks/vs_openevolve.py`` with the interpreter of the OpenEvolve venv; it
writes the initial program, the evaluator and the config into ``--out``, runs
``OpenEvolve.run(iterations=evaluations - 1)`` (the initial program is evaluated too, so
the run makes ``evaluations`` evaluations and ``evaluations - 1`` LLM calls, like an
optiforge run with ``--budget evaluations``) and prints one ``RESULT {json}`` line.

Modes (``--mode``):

- ``in-process``: the evaluator imports the candidate file with importlib inside
  OpenEvolve's worker process and calls ``f`` there (the style of most OpenEvolve examples).
- ``fresh-process``: the evaluator runs the candidate in a new ``python`` process per
  evaluation (``subprocess.run``), the same runner logic as optiforge's funcfit sandbox
  runner, and scores its printed output.
- ``fork``: the evaluator forks OpenEvolve's warm pool worker (numpy already imported)
  once per candidate and runs it in the child: the isolation of optiforge's warm fork
  without its sandbox (namespaces, rlimits, seccomp). OpenEvolve 0.4.0 offers no
  pre-started isolated evaluator of its own (``evaluator.distributed``, ``memory_limit_mb``
  and ``cpu_limit`` are "not implemented"); its one pre-started thing is the process pool
  whose workers load ``evaluator.py`` once (``max_tasks_per_child=None``), which the
  ``in-process`` mode uses. This mode is written here, not offered by OpenEvolve.

Scheduling: every candidate child (fresh-process, fork) starts its own session, as
optiforge's sandbox does with each of its candidates, so that on a loaded Linux machine
the autogroup scheduler treats both tools' candidates alike.

The evaluator appends one JSON line per evaluation to ``OUT/evals.jsonl`` (start, end, pid)
so the caller can count evaluations and time them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import time
from pathlib import Path

INITIAL_PROGRAM = "import numpy as np\n\n\ndef f(x):\n    return 0.0 * x\n"

# The target of optiforge's funcfit/quadratic: 3x^2 - 2x + 1 on 41 points of [-2, 2].
_COMMON = """
import json, math, os, sys, time
import numpy as np

XS = np.linspace(-2.0, 2.0, 41)
YS = 3 * XS**2 - 2 * XS + 1
LOG = __LOG__


def _log(t0, ok):
    with open(LOG, "a") as fh:
        fh.write(json.dumps({"t0": t0, "t1": time.time(), "pid": os.getpid(), "ok": ok}) + "\\n")


def _score(ys, t0):
    ys = np.asarray(ys, dtype=float)
    if ys.shape != XS.shape or not np.all(np.isfinite(ys)):
        _log(t0, False)
        return {"combined_score": 0.0, "mse": 1e30, "error": 1.0}
    mse = float(np.mean((ys - YS) ** 2))
    _log(t0, True)
    return {"combined_score": 1.0 / (1.0 + mse), "mse": mse}
"""

IN_PROCESS_EVALUATOR = (
    _COMMON
    + """
import importlib.util, uuid


def evaluate(program_path):
    t0 = time.time()
    try:
        spec = importlib.util.spec_from_file_location("cand_" + uuid.uuid4().hex, program_path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        ys = np.asarray(mod.f(XS), dtype=float) * np.ones_like(XS)
    except Exception as e:
        _log(t0, False)
        return {"combined_score": 0.0, "mse": 1e30, "error": 1.0}
    return _score(ys, t0)
"""
)

FRESH_PROCESS_EVALUATOR = (
    _COMMON
    + """
import subprocess

RUNNER = __RUNNER__
INPUTS = __INPUTS__


def evaluate(program_path):
    t0 = time.time()
    try:
        res = subprocess.run(
            [sys.executable, RUNNER, program_path, INPUTS],
            capture_output=True, text=True, timeout=10, start_new_session=True,
        )
        out = json.loads(res.stdout.strip().splitlines()[-1])
        if res.returncode != 0 or not out.get("ok"):
            raise RuntimeError(out.get("error", "exit %d" % res.returncode))
        ys = out["y"]
    except Exception:
        _log(t0, False)
        return {"combined_score": 0.0, "mse": 1e30, "error": 1.0}
    return _score(ys, t0)
"""
)

FORK_EVALUATOR = (
    _COMMON
    + """
import signal


def evaluate(program_path):
    t0 = time.time()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its own session, like every candidate of both tools
        code = 0
        try:
            os.close(r)
            os.setsid()
            signal.alarm(10)
            ns = {"np": np, "math": math}
            exec(compile(open(program_path).read(), "candidate.py", "exec"), ns)
            ys = np.asarray(ns["f"](XS), dtype=float) * np.ones_like(XS)
            os.write(w, json.dumps({"ok": True, "y": ys.tolist()}).encode())
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(w)
    chunks = []
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    try:
        out = json.loads(b"".join(chunks).decode())
        if status != 0 or not out.get("ok"):
            raise RuntimeError("child failed")
        ys = out["y"]
    except Exception:
        _log(t0, False)
        return {"combined_score": 0.0, "mse": 1e30, "error": 1.0}
    return _score(ys, t0)
"""
)

# Same logic as optiforge's funcfit sandbox runner, with the paths as arguments.
RUNNER = r"""
import json, sys
import numpy as np
ns = {"np": np, "math": __import__("math")}
src = open(sys.argv[1]).read()
xs = np.array(json.load(open(sys.argv[2])), dtype=float)
try:
    exec(compile(src, "candidate.py", "exec"), ns)
    f = ns["f"]
    ys = np.asarray(f(xs), dtype=float) * np.ones_like(xs)
    print(json.dumps({"ok": True, "y": ys.tolist()}))
except Exception as e:
    print(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"}))
"""


def write_task(out: Path, mode: str) -> tuple[Path, Path]:
    """Initial program and evaluator files in ``out``; returns their paths."""
    out.mkdir(parents=True, exist_ok=True)
    log = out / "evals.jsonl"
    log.write_text("")
    prog = out / "initial_program.py"
    prog.write_text(INITIAL_PROGRAM)
    ev = out / "evaluator.py"
    if mode == "in-process":
        ev.write_text(IN_PROCESS_EVALUATOR.replace("__LOG__", repr(str(log))))
    elif mode == "fork":
        ev.write_text(FORK_EVALUATOR.replace("__LOG__", repr(str(log))))
    else:
        import numpy as np

        runner = out / "runner.py"
        runner.write_text(RUNNER)
        inputs = out / "inputs.json"
        inputs.write_text(json.dumps(np.linspace(-2.0, 2.0, 41).tolist()))
        ev.write_text(
            FRESH_PROCESS_EVALUATOR.replace("__LOG__", repr(str(log)))
            .replace("__RUNNER__", repr(str(runner)))
            .replace("__INPUTS__", repr(str(inputs)))
        )
    return prog, ev


def make_config(api_base: str, workers: int, evaluations: int, log_level: str):
    from openevolve.config import Config

    return Config.from_dict(
        {
            "max_iterations": evaluations - 1,
            "log_level": log_level,
            "random_seed": 42,
            # The instant server answers with a whole program in one code block.
            "diff_based_evolution": False,
            "llm": {
                "api_base": api_base,
                "api_key": "instant",
                "models": [{"name": "instant", "weight": 1.0}],
                "timeout": 60,
                "retries": 0,
            },
            "evaluator": {
                "parallel_evaluations": workers,
                "timeout": 10,
                # One-stage evaluator: cascade would re-import evaluator.py per
                # evaluation and then fall back to the direct call anyway.
                "cascade_evaluation": False,
            },
        }
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["in-process", "fresh-process", "fork"], required=True)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--evaluations", type=int, default=100)
    ap.add_argument("--api-base", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--log-level", default="INFO")
    args = ap.parse_args()
    t_start = time.time()
    import openevolve
    from openevolve import OpenEvolve

    out = Path(args.out)
    prog, ev = write_task(out, args.mode)
    cfg = make_config(args.api_base, args.workers, args.evaluations, args.log_level)
    t_init = time.time()
    oe = OpenEvolve(str(prog), str(ev), cfg, output_dir=str(out / "openevolve_output"))
    t_loop = time.time()
    best = asyncio.run(oe.run(iterations=args.evaluations - 1))
    t_end = time.time()
    logging.shutdown()
    evals = [json.loads(line) for line in (out / "evals.jsonl").read_text().splitlines() if line]
    result = {
        "openevolve_version": openevolve.__version__,
        "mode": args.mode,
        "workers": args.workers,
        "n_evaluations": len(evals),
        "n_passed": sum(1 for e in evals if e["ok"]),
        "eval_s": [e["t1"] - e["t0"] for e in evals],
        "eval_pids": sorted({e["pid"] for e in evals}),
        "eval_done_ts": sorted(e["t1"] - t_loop for e in evals),
        "import_s": t_init - t_start,
        "init_s": t_loop - t_init,
        "loop_s": t_end - t_loop,
        "best_mse": (best.metrics.get("mse") if best is not None else None),
        "programs": len(oe.database.programs),
    }
    print("RESULT " + json.dumps(result), flush=True)
    sys.stdout.flush()
    os._exit(0)  # don't wait on stray pool threads at interpreter exit


if __name__ == "__main__":
    main()
