"""Search-loop throughput, optiforge vs OpenEvolve 0.4.0, on the same toy task and instant LLM.

Both systems evolve ``f(x)`` (numpy) scored by MSE against funcfit/quadratic's target
(3x^2 - 2x + 1 on 41 points of [-2, 2]); both talk to the same OpenAI-compatible server on
127.0.0.1 (``benchmarks/_instant_llm.py``) that answers at once with a new program per
request, so the measurement is about the loops, not the model. Each run spends
``--evaluations`` evaluations (the seed/initial program included) and one LLM call per
other evaluation.

- optiforge: ``optiforge run evolve --bench funcfit/quadratic`` through its CLI, of the
  working tree and/or of git revisions (``--optiforge worktree 3cc6015``). Candidates
  always run in a fresh sandboxed Python process (the local sandbox, bwrap/unshare where
  the host allows): there is no in-process mode by design (trust boundary), so its one
  number is compared with both OpenEvolve modes.
- OpenEvolve: ``OpenEvolve(...).run()`` in its own venv (``--venv``, created and
  ``pip install openevolve==0.4.0`` on first use), via ``benchmarks/_openevolve_driver.py``,
  in ``fresh-process`` mode (the evaluator runs each candidate with ``subprocess.run``) and
  ``in-process`` mode (the evaluator imports the candidate in OpenEvolve's worker process).

Reported: evaluations per minute at 1 and 2 workers, end to end (the whole command: the
interpreter, imports, setup, the search and teardown) and for the loop alone (optiforge:
``run_started`` to the last ``round_done`` in events.jsonl; OpenEvolve: ``controller.run()``);
medians over ``--repeats`` (runs interleaved so machine noise spreads over all systems);
ratios optiforge/OpenEvolve and 2-vs-1-worker scaling; and where optiforge's time goes
per evaluation (sandboxed process, LLM client, loop overhead, outside the loop).

The toy's evaluations cost ~1 ms of the candidate's own work, so both loops are measured
by their overhead, and adding a worker helps only where the overhead is in the
evaluations. ``--burn-ms 50`` makes every LLM-written program spend 50 ms of CPU first
(the same programs for both systems): there the evaluations are the work, and the
1 -> 2 worker scaling says whether both cores are kept busy.

    .venv/bin/python benchmarks/vs_openevolve.py [--evaluations 100] [--repeats 3]
        [--optiforge worktree REV ...] [--venv benchmarks/.venv-openevolve]
        [--workers 1 2] [--burn-ms 0] [--json out.json] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OPENEVOLVE_VERSION = "0.4.0"
DEFAULT_VENV = HERE / ".venv-openevolve"
OPTIFORGE = ROOT / ".venv" / "bin" / "optiforge"
THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


# ----------------------------------------------------------------------------- setup


def venv_python(venv: Path) -> Path:
    return venv / "bin" / "python"


def installed_version(py: Path) -> str | None:
    if not py.exists():
        return None
    res = subprocess.run(
        [str(py), "-c", "import importlib.metadata as m; print(m.version('openevolve'))"],
        capture_output=True,
        text=True,
    )
    return res.stdout.strip() if res.returncode == 0 else None


def ensure_openevolve(venv: Path) -> str:
    """OpenEvolve ``OPENEVOLVE_VERSION`` in ``venv`` (created / installed when missing)."""
    py = venv_python(venv)
    if not py.exists():
        print(f"creating venv {venv}", flush=True)
        base = shutil.which("python3") or sys.executable
        subprocess.run([base, "-m", "venv", str(venv)], check=True)
    version = installed_version(py)
    if version != OPENEVOLVE_VERSION:
        print(f"installing openevolve=={OPENEVOLVE_VERSION} into {venv}", flush=True)
        subprocess.run(
            [str(py), "-m", "pip", "install", "-q", f"openevolve=={OPENEVOLVE_VERSION}"],
            check=True,
        )
        version = installed_version(py)
    if version is None:
        raise SystemExit(f"openevolve is not importable from {py}")
    return version


class InstantServer:
    """``_instant_llm.py`` as a child process on a free port."""

    def __init__(self, burn_ms: float = 0.0) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(HERE / "_instant_llm.py"),
                "--port",
                "0",
                "--burn-ms",
                str(burn_ms),
            ],  # fmt: skip
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("PORT "):
            self.close()
            raise SystemExit(f"instant LLM server did not start: {line!r}")
        self.port = int(line.split()[1])
        self.api_base = f"http://127.0.0.1:{self.port}/v1"

    def requests(self) -> int:
        import urllib.request

        with urllib.request.urlopen(f"{self.api_base}/stats", timeout=5) as r:
            return int(json.load(r)["requests"])

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()


# ----------------------------------------------------------------------------- runs

_SITECUSTOMIZE = """# written by benchmarks/vs_openevolve.py: let PYTHONPATH's optiforge win over the
# editable install's import finder (in the CLI and in spawned executor workers alike)
import sys
sys.meta_path[:] = [
    f for f in sys.meta_path
    if not getattr(f, "__module__", "").startswith("__editable___optiforge")
]
"""


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def optiforge_launcher(rev: str) -> dict[str, Any]:
    """How to start optiforge at ``rev``: ``worktree`` (the working tree, through the venv's
    ``optiforge`` script) or a git revision (its ``optiforge/`` exported with ``git archive``
    to a temp folder, run with the same venv, that folder first on PYTHONPATH)."""
    if rev == "worktree":
        dirty = bool(_git("status", "--porcelain", "--", "optiforge"))
        desc = _git("rev-parse", "--short", "HEAD") + ("+uncommitted" if dirty else "")
        return {"argv": [str(OPTIFORGE)], "env": {}, "cwd": None, "commit": desc}
    import io
    import tarfile

    sha = _git("rev-parse", "--short=10", f"{rev}^{{commit}}")
    dest = Path(tempfile.gettempdir()) / f"optiforge-src-{sha}"
    if not (dest / "optiforge" / "__init__.py").exists():
        tmp = dest.with_name(dest.name + ".part")
        shutil.rmtree(tmp, ignore_errors=True)
        tar = subprocess.run(
            ["git", "-C", str(ROOT), "archive", "--format=tar", sha, "optiforge"],
            capture_output=True,
            check=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(tar)) as tf:
            tf.extractall(tmp, filter="data")
        (tmp / "sitecustomize.py").write_text(_SITECUSTOMIZE)
        shutil.rmtree(dest, ignore_errors=True)
        tmp.rename(dest)
    return {
        "argv": [str(ROOT / ".venv" / "bin" / "python"), "-m", "optiforge.cli"],
        "env": {"PYTHONPATH": str(dest)},
        "cwd": str(dest),
        "commit": sha,
    }


def _jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run_optiforge(
    launcher: dict[str, Any],
    system: str,
    api_base: str,
    workers: int,
    n_eval: int,
    proposals: int,
    out: Path,
    timeout_s: float,
) -> dict[str, Any]:
    cmd = [
        *launcher["argv"],
        "run",
        "evolve",
        "--bench",
        "funcfit/quadratic",
        "--budget",
        str(n_eval),
        "--model",
        "openai/instant",
        "--api-base",
        api_base,
        "--memory",
        "none",
        "--workers",
        str(workers),
        "--out",
        str(out),
        "--set",
        f"agent.search.proposals_per_round={proposals}",
    ]
    env = {**os.environ, "OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "instant")}
    env.update(launcher["env"])
    t, t_launch = time.perf_counter(), time.time()
    res = subprocess.run(
        cmd, capture_output=True, text=True, env=env, timeout=timeout_s, cwd=launcher["cwd"]
    )
    wall, t_exit = time.perf_counter() - t, time.time()
    if res.returncode != 0:
        raise RuntimeError(
            f"optiforge exited {res.returncode}:\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}"
        )
    events = _jsonl(out / "events.jsonl")
    evals = _jsonl(out / "evaluations.jsonl")
    summary = json.loads((out / "summary.json").read_text())
    ts = {
        k: [e["ts"] for e in events if e["kind"] == k]
        for k in ("run_started", "round_done", "run_finished", "proposed", "evaluation")
    }
    t0 = ts["run_started"][0]
    loop_end = max(ts["round_done"])
    llm = [e for e in events if e["kind"] == "llm_call"]
    search_sandbox = [e for e in events if e["kind"] == "sandbox_run" and e["ts"] <= loop_end]
    return {
        "system": system,
        "commit": launcher["commit"],
        "mode": "sandboxed",
        "workers": workers,
        "n_evaluations": int(summary["n_evaluations"]),
        "n_passed": sum(1 for e in evals if e.get("passed")),
        "wall_s": wall,
        "loop_s": loop_end - t0,
        "run_s": ts["run_finished"][-1] - t0,
        "first_proposal_s": ts["proposed"][0] - t0,
        "launch_to_run_started_s": t0 - t_launch,
        "run_finished_to_exit_s": t_exit - ts["run_finished"][-1],
        "round0_done_s": min(ts["round_done"]) - t0,
        "eval_done_ts": sorted(x - t0 for x in ts["evaluation"]),
        "best_mse": summary.get("best_score"),
        "sandbox_s": [float(e["metrics"]["sandbox_s"]) for e in evals],
        "llm_latency_s": [float(e["latency_s"]) for e in llm],
        "llm_ts": [float(e["ts"]) - t0 for e in llm],
        "n_llm_calls": len(llm),
        "n_rounds": len(ts["round_done"]),
        "isolation": sorted({e.get("isolation", "?") for e in search_sandbox}),
        "post_loop_sandbox_runs": sum(
            1 for e in events if e["kind"] == "sandbox_run" and e["ts"] > loop_end
        ),
    }


def run_openevolve(
    py: Path, api_base: str, mode: str, workers: int, n_eval: int, out: Path, timeout_s: float
) -> dict[str, Any]:
    cmd = [
        str(py),
        str(HERE / "_openevolve_driver.py"),
        "--mode",
        mode,
        "--workers",
        str(workers),
        "--evaluations",
        str(n_eval),
        "--api-base",
        api_base,
        "--out",
        str(out),
    ]
    env = {**os.environ, **THREAD_ENV}
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout_s)
    wall = time.perf_counter() - t
    (out / "driver.log").write_text(res.stdout + "\n--- stderr ---\n" + res.stderr)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")]
    if res.returncode != 0 or not lines:
        raise RuntimeError(f"OpenEvolve driver exited {res.returncode}:\n{res.stderr[-3000:]}")
    r = json.loads(lines[-1][len("RESULT ") :])
    r.update(system="OpenEvolve", wall_s=wall)
    return r


# ----------------------------------------------------------------------------- baselines


def bare_fresh_process(pythons: dict[str, str], reps: int = 10) -> dict[str, dict[str, float]]:
    """Median seconds of ``python -c pass``, ``python -c 'import numpy'`` and the funcfit
    runner on one candidate, each as a plain subprocess (no sandbox), per interpreter
    (interleaved, so machine noise hits them alike)."""
    from _openevolve_driver import RUNNER  # same runner logic as funcfit's sandbox runner

    with tempfile.TemporaryDirectory() as d:
        runner, cand, inputs = Path(d, "runner.py"), Path(d, "cand.py"), Path(d, "inputs.json")
        runner.write_text(RUNNER)
        cand.write_text("import numpy as np\n\ndef f(x):\n    return 3.0 * x**2 - 2.0 * x + 1.0\n")
        inputs.write_text(json.dumps([-2.0 + 0.1 * i for i in range(41)]))
        argvs = {
            "python_pass_s": ["-c", "pass"],
            "python_numpy_s": ["-c", "import numpy"],
            "runner_s": [str(runner), str(cand), str(inputs)],
        }
        times: dict[str, dict[str, list[float]]] = {p: {k: [] for k in argvs} for p in pythons}
        for _ in range(reps):
            for name, argv in argvs.items():
                for label, py in pythons.items():
                    t = time.perf_counter()
                    subprocess.run([py, *argv], capture_output=True, check=True)
                    times[label][name].append(time.perf_counter() - t)
    return {p: {k: statistics.median(v) for k, v in d_.items()} for p, d_ in times.items()}


# ----------------------------------------------------------------------------- report


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def per_min(n: float, s: float) -> float:
    return 60.0 * n / s if s > 0 else float("nan")


def summarize(results: list[dict[str, Any]]) -> dict[tuple[str, str, int], dict[str, float]]:
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault((r["system"], r["mode"], r["workers"]), []).append(r)
    table = {}
    for key, rs in groups.items():
        table[key] = {
            "repeats": len(rs),
            "n_evaluations": med([r["n_evaluations"] for r in rs]),
            "wall_s": med([r["wall_s"] for r in rs]),
            "loop_s": med([r["loop_s"] for r in rs]),
            "e2e_per_min": med([per_min(r["n_evaluations"], r["wall_s"]) for r in rs]),
            "loop_per_min": med([per_min(r["n_evaluations"], r["loop_s"]) for r in rs]),
            "steady_per_min": med([steady_per_min(r["eval_done_ts"]) for r in rs]),
        }
    return table


def print_table(table: dict[tuple[str, str, int], dict[str, float]]) -> None:
    print(
        "\n| system | candidate runs | workers | evals | wall s (e2e) | evals/min (e2e) "
        "| loop s | evals/min (loop) | evals/min (steady) | repeats |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (system, mode, w), row in sorted(table.items()):
        print(
            f"| {system} | {mode} | {w} | {row['n_evaluations']:.0f} | {row['wall_s']:.2f} "
            f"| {row['e2e_per_min']:.0f} | {row['loop_s']:.2f} | {row['loop_per_min']:.0f} "
            f"| {row['steady_per_min']:.0f} | {row['repeats']} |"
        )


def print_ratios(
    table: dict[tuple[str, str, int], dict[str, float]], workers: list[int], ofs: list[str]
) -> None:
    print("\nRatios optiforge / OpenEvolve (evals/min; <1 means optiforge is slower):")
    print(
        "| optiforge | workers | vs OE fresh-process: e2e | loop | steady "
        "| vs OE in-process: e2e | loop | steady |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for system in ofs:
        for w in workers:
            of = table.get((system, "sandboxed", w))
            cells = []
            for mode in ("fresh-process", "in-process"):
                oe = table.get(("OpenEvolve", mode, w))
                for k in ("e2e_per_min", "loop_per_min", "steady_per_min"):
                    cells.append(f"{of[k] / oe[k]:.3f}" if of and oe else "n/a")
            print(f"| {system} | {w} | " + " | ".join(cells) + " |")
    if len(workers) >= 2:
        lo, hi = workers[0], workers[-1]
        print(f"\nScaling {lo} -> {hi} workers (evals/min ratio):")
        print("| system | candidate runs | e2e | loop | steady |")
        print("|---|---|---|---|---|")
        for system, mode in (
            *((s_, "sandboxed") for s_ in ofs),
            ("OpenEvolve", "fresh-process"),
            ("OpenEvolve", "in-process"),
        ):
            a, b = table.get((system, mode, lo)), table.get((system, mode, hi))
            if a and b:
                print(
                    f"| {system} | {mode} | {b['e2e_per_min'] / a['e2e_per_min']:.2f}x "
                    f"| {b['loop_per_min'] / a['loop_per_min']:.2f}x "
                    f"| {b['steady_per_min'] / a['steady_per_min']:.2f}x |"
                )


def steady_per_min(done_ts: list[float]) -> float:
    """Evaluations per minute after the first 10% of completions (start-up transients out)."""
    ts = sorted(done_ts)
    k = max(1, len(ts) // 10)
    if len(ts) - 1 <= k:
        return float("nan")
    return per_min(len(ts) - 1 - k, ts[-1] - ts[k])


def profile(results: list[dict[str, Any]], bare: dict[str, float]) -> dict[str, Any]:
    """Where optiforge's time goes (means over repeats), per worker count.

    Steady state is the window from the end of the first LLM call to the last
    ``round_done``: it holds every evaluation but the seed's and every LLM call but the
    first, so per evaluation: window / (n - 1) = sandboxed run + LLM call + the rest (the
    loop's own work: proposing, materializing, dispatch, events, checkpoints), exactly so
    at 1 worker (everything is serial); at 2 workers runs overlap and the parts are sums
    of busy time, not a decomposition of the wall."""
    out: dict[str, Any] = {}
    for system, w in sorted(
        {(r["system"], r["workers"]) for r in results if r["mode"] == "sandboxed"}
    ):
        rs = [r for r in results if r["system"] == system and r["workers"] == w]

        def mean(f: Any, rs: list[dict[str, Any]] = rs) -> float:
            return statistics.mean(f(r) for r in rs)

        n = mean(lambda r: r["n_evaluations"])
        window = mean(lambda r: r["loop_s"] - r["llm_ts"][0])
        sb = mean(lambda r: statistics.mean(r["sandbox_s"][1:]))
        llm = mean(lambda r: statistics.mean(r["llm_latency_s"][1:]))
        calls = mean(lambda r: len(r["llm_latency_s"]) - 1)
        per_eval = 1000 * window / (n - 1)
        llm_share = 1000 * llm * calls / (n - 1)
        out[f"{system}, {w} worker(s)"] = {
            "commit": rs[0]["commit"],
            "n_evaluations": n,
            "rounds": mean(lambda r: r["n_rounds"]),
            "isolation": sorted({i for r in rs for i in r["isolation"]}),
            "steady_ms_per_eval": {
                "wall per evaluation (steady window / (n-1))": per_eval,
                "sandboxed candidate run (sandbox_run duration)": 1000 * sb,
                "  reference: bare cold subprocess python + numpy + runner (no sandbox)": 1000
                * bare["runner_s"],
                "  sandbox run - bare cold subprocess (isolation, boot, contention; <0: warm fork)": 1000
                * (sb - bare["runner_s"]),
                "LLM call (llm_call latency; instant server)": llm_share,
                (
                    "loop overhead (the rest)"
                    if w == 1
                    else "the rest (negative: runs overlap at >1 worker, not a decomposition)"
                ): per_eval - 1000 * sb - llm_share,
            },
            "one_off_s": {
                "launch -> run_started (CLI, imports, config)": mean(
                    lambda r: r["launch_to_run_started_s"]
                ),
                "run_started -> first proposal (agent build, imports, executor start)": mean(
                    lambda r: r["first_proposal_s"]
                ),
                "seed evaluation + round 0": mean(
                    lambda r: r["round0_done_s"] - r["first_proposal_s"]
                ),
                "round 0 -> first LLM call sent (proposer/litellm set-up)": mean(
                    lambda r: r["llm_ts"][0] - r["llm_latency_s"][0] - r["round0_done_s"]
                ),
                "first LLM call latency": mean(lambda r: r["llm_latency_s"][0]),
                "steady window (all other evaluations)": window,
                "last round -> run_finished (verification of best, summary)": mean(
                    lambda r: r["run_s"] - r["loop_s"]
                ),
                "run_finished -> exit (report, plot, interpreter exit)": mean(
                    lambda r: r["run_finished_to_exit_s"]
                ),
                "total wall": mean(lambda r: r["wall_s"]),
            },
            "medians": {
                "sandbox_run_ms": 1000 * med([x for r in rs for x in r["sandbox_s"]]),
                "llm_call_ms": 1000 * med([x for r in rs for x in r["llm_latency_s"][1:]]),
                "sandbox busy fraction of loop per worker": mean(
                    lambda r: sum(r["sandbox_s"]) / r["loop_s"]
                )
                / w,
            },
        }
    return out


def print_profile(prof: dict[str, Any], bare: dict[str, float], oe: list[dict[str, Any]]) -> None:
    for name, p in prof.items():
        print(
            f"\nprofile {name} [commit {p['commit']}] ({p['n_evaluations']:.0f} evaluations, "
            f"{p['rounds']:.0f} rounds, sandbox isolation {','.join(p['isolation'])}):"
        )
        print("| steady state, per evaluation | ms |\n|---|---|")
        for k, v in p["steady_ms_per_eval"].items():
            print(f"| {k} | {v:.1f} |")
        print("\n| one-off / phase | s |\n|---|---|")
        for k, v in p["one_off_s"].items():
            print(f"| {k} | {v:.3f} |")
        m = p["medians"]
        print(
            f"medians: sandbox run {m['sandbox_run_ms']:.1f} ms, LLM call {m['llm_call_ms']:.1f} ms; "
            f"sandbox busy {100 * m['sandbox busy fraction of loop per worker']:.0f}% of the loop per worker"
        )
    print(
        f"\nbare subprocess here (medians, sampled through the run, no sandbox, optiforge venv "
        f"python): python -c pass "
        f"{1000 * bare['python_pass_s']:.0f} ms, python -c 'import numpy' "
        f"{1000 * bare['python_numpy_s']:.0f} ms, funcfit runner {1000 * bare['runner_s']:.0f} ms"
    )
    for mode in ("fresh-process", "in-process"):
        xs = [x for r in oe if r["mode"] == mode for x in r["eval_s"]]
        if xs:
            print(f"OpenEvolve {mode}: evaluate() median {1000 * med(xs):.1f} ms per evaluation")
    for key in ("import_s", "init_s"):
        xs = [r[key] for r in oe]
        if xs:
            print(f"OpenEvolve {key} (driver): median {med(xs):.3f} s")


# ----------------------------------------------------------------------------- main


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--evaluations", type=int, default=100)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--venv", type=Path, default=DEFAULT_VENV, help="OpenEvolve's venv")
    ap.add_argument(
        "--proposals-per-round",
        type=int,
        default=4,
        help="optiforge agent.search.proposals_per_round (OpenEvolve keeps 5 iterations in "
        "flight at 1-2 workers: one per island)",
    )
    ap.add_argument("--modes", nargs="+", default=["fresh-process", "in-process"])
    ap.add_argument(
        "--burn-ms",
        type=float,
        default=0.0,
        help="CPU milliseconds every LLM-written program spends when evaluated (0: the toy's "
        "~1 ms); with e.g. 50 the evaluations are the work and worker scaling shows",
    )
    ap.add_argument(
        "--optiforge",
        nargs="*",
        default=["worktree"],
        help="optiforge versions to measure: 'worktree' and/or git revisions (none: skip)",
    )
    ap.add_argument("--keep", type=Path, default=None, help="keep run directories here")
    ap.add_argument("--json", type=Path, default=None, help="write all numbers here")
    ap.add_argument("--run-timeout-s", type=float, default=300.0)
    ap.add_argument(
        "--max-wall-s",
        type=float,
        default=540.0,
        help="skip further repeats once this much time is spent",
    )
    args = ap.parse_args()

    t_all = time.perf_counter()
    version = ensure_openevolve(args.venv.resolve())
    py = venv_python(args.venv.resolve())
    print(f"OpenEvolve {version} in {args.venv}; load average {os.getloadavg()}", flush=True)
    sys.path.insert(0, str(HERE))
    pythons = {"optiforge": str(ROOT / ".venv" / "bin" / "python"), "openevolve": str(py)}
    bare_samples: list[dict[str, dict[str, float]]] = [bare_fresh_process(pythons)]

    launchers = {f"optiforge@{rev}": optiforge_launcher(rev) for rev in args.optiforge}
    for name, la in launchers.items():
        print(f"{name}: commit {la['commit']}", flush=True)
    configs: list[tuple[str, str, int]] = []
    for w in args.workers:
        for name in launchers:
            configs.append((name, "sandboxed", w))
        for mode in args.modes:
            configs.append(("OpenEvolve", mode, w))

    base = args.keep or Path(tempfile.mkdtemp(prefix="vs_openevolve-"))
    base.mkdir(parents=True, exist_ok=True)
    server = InstantServer(args.burn_ms)
    results: list[dict[str, Any]] = []
    repeats_done = 0
    t_bench = time.perf_counter()
    try:
        for rep in range(args.repeats):
            elapsed = time.perf_counter() - t_all
            per_repeat = (time.perf_counter() - t_bench) / max(1, repeats_done)
            if rep > 0 and elapsed + per_repeat > args.max_wall_s:
                print(f"stopping after {rep} repeat(s): --max-wall-s {args.max_wall_s:.0f}")
                break
            for system, mode, w in configs:
                out = base / f"{system}-{mode}-w{w}-r{rep}"
                if out.exists():
                    shutil.rmtree(out)
                before = server.requests()
                if system in launchers:
                    # the bare-process baseline under the same machine load as this run
                    bare_samples.append(bare_fresh_process(pythons, reps=3))
                    r = run_optiforge(
                        launchers[system],
                        system,
                        server.api_base,
                        w,
                        args.evaluations,
                        args.proposals_per_round,
                        out,
                        args.run_timeout_s,
                    )
                else:
                    r = run_openevolve(
                        py, server.api_base, mode, w, args.evaluations, out, args.run_timeout_s
                    )
                r["server_requests"] = server.requests() - before
                r["repeat"] = rep
                results.append(r)
                print(
                    f"repeat {rep + 1} {system:18s} {mode:13s} w={w}: "
                    f"{r['n_evaluations']} evals ({r['n_passed']} passed), "
                    f"{r['server_requests']} LLM requests, wall {r['wall_s']:.2f} s, "
                    f"loop {r['loop_s']:.2f} s, "
                    f"{per_min(r['n_evaluations'], r['wall_s']):.0f}/min e2e",
                    flush=True,
                )
            repeats_done += 1
    finally:
        server.close()
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)

    bare, bare_oe = (
        {k: med([b[label][k] for b in bare_samples]) for k in bare_samples[0][label]}
        for label in ("optiforge", "openevolve")
    )
    table = summarize(results)
    print(
        f"\nOpenEvolve {version} vs optiforge, funcfit/quadratic, {args.evaluations} evaluations "
        f"per run, instant local LLM, programs burning {args.burn_ms:g} CPU ms, "
        f"{os.cpu_count()} CPUs, medians of {repeats_done} repeat(s)"
    )
    print_table(table)
    print_ratios(table, sorted(args.workers), list(launchers))
    prof = profile(results, bare)
    print_profile(prof, bare, [r for r in results if r["system"] == "OpenEvolve"])
    print(
        f"the same, OpenEvolve venv python: python -c pass {1000 * bare_oe['python_pass_s']:.0f} ms, "
        f"python -c 'import numpy' {1000 * bare_oe['python_numpy_s']:.0f} ms, "
        f"runner {1000 * bare_oe['runner_s']:.0f} ms"
    )
    print(
        f"\ntotal benchmark wall {time.perf_counter() - t_all:.0f} s; load average {os.getloadavg()}"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "openevolve_version": version,
                    "evaluations": args.evaluations,
                    "burn_ms": args.burn_ms,
                    "optiforge_commits": {k: v["commit"] for k, v in launchers.items()},
                    "repeats": repeats_done,
                    "bare_optiforge_python": bare,
                    "bare_openevolve_python": bare_oe,
                    "bare_samples": bare_samples,
                    "load_average_end": os.getloadavg(),
                    "table": {"/".join(map(str, k)): v for k, v in table.items()},
                    "profile": prof,
                    "runs": results,
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
