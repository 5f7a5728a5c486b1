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
  in ``fresh-process`` mode (the evaluator runs each candidate with ``subprocess.run``),
  ``in-process`` mode (the evaluator imports the candidate in OpenEvolve's persistent pool
  worker: OpenEvolve's own pre-started evaluator) and ``fork`` mode (the pool worker forks
  once per candidate: a warm fork without a sandbox; written here, OpenEvolve 0.4.0 offers
  no pre-started isolated evaluator). Each row is labelled with its isolation.

Same conditions for both tools (the earlier version of this script favoured optiforge):

- scheduling: each tool's whole command starts in a new session (``start_new_session``),
  and every candidate child of both tools starts its own session too (optiforge's sandbox
  always does; the OpenEvolve evaluators here do the same), so Linux's autogroup scheduler
  gives neither tool's candidates a larger share of a loaded machine;
- threads: ``OMP_NUM_THREADS=MKL_NUM_THREADS=OPENBLAS_NUM_THREADS=1`` for both;
- optiforge runs with its default memory (the run's own store), not ``--memory none``;
- ratios are paired: configurations run interleaved within each repeat (order reversed
  on odd repeats), a ratio is taken per repeat, then the median and a 95% interval (a
  t-interval on the log-ratios: the geometric mean's) over repeats are printed;
- the load average is recorded before every run and printed with the results.

Reported: evaluations per minute at 1 and 2 workers, end to end (the whole command: the
interpreter, imports, setup, the search and teardown) and for the loop alone (optiforge:
``run_started`` to the last ``round_done`` in events.jsonl; OpenEvolve: ``controller.run()``);
medians over ``--repeats`` (runs interleaved so machine noise spreads over all systems);
paired ratios optiforge/OpenEvolve and 2-vs-1-worker scaling; and where optiforge's time goes
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
import math
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
# The project venv's python (a git worktree has none of its own: then this interpreter).
OPTIFORGE_PYTHON = (
    ROOT / ".venv" / "bin" / "python"
    if (ROOT / ".venv" / "bin" / "python").exists()
    else Path(sys.executable)
)
OE_MODES = ("fresh-process", "in-process", "fork")
ISOLATION = {
    "fresh-process": "fresh process per candidate (subprocess, own session, no sandbox)",
    "in-process": "in-process (OpenEvolve's persistent pool worker, evaluator loaded once; "
    "no isolation)",
    "fork": "warm fork per candidate (fork of the pool worker, own session, no sandbox; "
    "not an OpenEvolve option)",
}
THREAD_ENV = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}


def _launch(
    cmd: list[str], env: dict[str, str], timeout_s: float, cwd: str | Path | None = None
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run one tool's whole command as both tools are run (so neither gets a scheduling or
    threading advantage): in a new session, with ``THREAD_ENV`` over the environment;
    ``env`` adds the tool's own variables. Returns the result and its wall seconds."""
    t = time.perf_counter()
    res = subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env={**os.environ, **THREAD_ENV, **env},
        timeout=timeout_s,
        cwd=cwd,
        start_new_session=True,
    )
    return res, time.perf_counter() - t


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
        site = Path(tempfile.gettempdir()) / f"optiforge-site-{os.getpid()}"
        site.mkdir(exist_ok=True)
        (site / "sitecustomize.py").write_text(_SITECUSTOMIZE)
        return {
            "argv": [str(OPTIFORGE_PYTHON), "-m", "optiforge.cli"],
            "env": {"PYTHONPATH": f"{site}{os.pathsep}{ROOT}"},
            "cwd": None,
            "commit": desc,
        }
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
        "argv": [str(OPTIFORGE_PYTHON), "-m", "optiforge.cli"],
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
        "--workers",
        str(workers),
        "--out",
        str(out),
        "--set",
        f"agent.search.proposals_per_round={proposals}",
    ]
    env = {"OPENAI_API_KEY": os.environ.get("OPENAI_API_KEY", "instant"), **launcher["env"]}
    t_launch = time.time()
    res, wall = _launch(cmd, env, timeout_s, cwd=launcher["cwd"])
    t_exit = time.time()
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
        "warm_runs": sum(1 for e in search_sandbox if e.get("warm")),
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
    res, wall = _launch(cmd, {}, timeout_s)
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
    runner on one candidate, each as a plain subprocess (no sandbox; its own session like
    every candidate), per interpreter (interleaved, so machine noise hits them alike)."""
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
                    subprocess.run(
                        [py, *argv], capture_output=True, check=True, start_new_session=True
                    )
                    times[label][name].append(time.perf_counter() - t)
    return {p: {k: statistics.median(v) for k, v in d_.items()} for p, d_ in times.items()}


# ----------------------------------------------------------------------------- report


def med(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def per_min(n: float, s: float) -> float:
    return 60.0 * n / s if s > 0 else float("nan")


def isolation_label(r: dict[str, Any]) -> str:
    """What a row's candidates ran in (the table's isolation column)."""
    if r["system"] == "OpenEvolve":
        return ISOLATION[r["mode"]]
    how = "warm sandboxed fork" if r.get("warm_runs") else "sandboxed fresh process"
    return f"{how} per candidate ({'/'.join(r['isolation'])}, own session)"


RATES: dict[str, Any] = {
    "e2e": lambda r: per_min(r["n_evaluations"], r["wall_s"]),
    "loop": lambda r: per_min(r["n_evaluations"], r["loop_s"]),
    "steady": lambda r: steady_per_min(r["eval_done_ts"]),
}


def summarize(results: list[dict[str, Any]]) -> dict[tuple[str, str, int], dict[str, Any]]:
    groups: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for r in results:
        groups.setdefault((r["system"], r["mode"], r["workers"]), []).append(r)
    table: dict[tuple[str, str, int], dict[str, Any]] = {}
    for key, rs in groups.items():
        table[key] = {
            "isolation": isolation_label(rs[0]),
            "repeats": len(rs),
            "n_evaluations": med([r["n_evaluations"] for r in rs]),
            "wall_s": med([r["wall_s"] for r in rs]),
            "loop_s": med([r["loop_s"] for r in rs]),
            "e2e_per_min": med([RATES["e2e"](r) for r in rs]),
            "loop_per_min": med([RATES["loop"](r) for r in rs]),
            "steady_per_min": med([RATES["steady"](r) for r in rs]),
            "load_1min": med([r["load_before"][0] for r in rs]),
        }
    return table


def print_table(table: dict[tuple[str, str, int], dict[str, Any]]) -> None:
    print(
        "\n| system | candidate isolation | workers | evals | wall s (e2e) | evals/min (e2e) "
        "| loop s | evals/min (loop) | evals/min (steady) | load 1-min | repeats |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for (system, _mode, w), row in sorted(table.items()):
        print(
            f"| {system} | {row['isolation']} | {w} | {row['n_evaluations']:.0f} "
            f"| {row['wall_s']:.2f} | {row['e2e_per_min']:.0f} | {row['loop_s']:.2f} "
            f"| {row['loop_per_min']:.0f} | {row['steady_per_min']:.0f} "
            f"| {row['load_1min']:.2f} | {row['repeats']} |"
        )


_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306}


def paired_ratios(
    results: list[dict[str, Any]],
    num: tuple[str, str, int],
    den: tuple[str, str, int],
    rate: str,
) -> list[float]:
    """Per repeat, ``rate`` of configuration ``num`` over that of ``den`` (same repeat)."""
    by = {(r["system"], r["mode"], r["workers"], r["repeat"]): r for r in results}
    out = []
    for rep in sorted({r["repeat"] for r in results}):
        a, b = by.get((*num, rep)), by.get((*den, rep))
        if a and b:
            x, y = RATES[rate](a), RATES[rate](b)
            if x == x and y == y and y > 0:  # nan-safe
                out.append(x / y)
    return out


def ratio_cell(xs: list[float]) -> str:
    """``median [lo, hi]`` of paired ratios; the interval is the 95% t-interval of the
    geometric mean (log-ratios), ``n=1``: no interval."""
    if not xs:
        return "n/a"
    m = statistics.median(xs)
    if len(xs) < 2:
        return f"{m:.2f}"
    logs = [math.log(x) for x in xs]
    half = _T975.get(len(xs) - 1, 1.96) * statistics.stdev(logs) / math.sqrt(len(xs))
    mu = statistics.mean(logs)
    return f"{m:.2f} [{math.exp(mu - half):.2f}, {math.exp(mu + half):.2f}]"


def print_ratios(
    results: list[dict[str, Any]],
    table: dict[tuple[str, str, int], dict[str, Any]],
    workers: list[int],
    ofs: list[str],
    modes: list[str],
) -> dict[str, list[float]]:
    """Paired ratio tables; returns every list of per-repeat ratios printed (for --json)."""
    printed: dict[str, list[float]] = {}
    print(
        "\nPaired ratios optiforge / OpenEvolve (evals/min, one ratio per repeat; median "
        "[95% interval]; <1 means optiforge is slower):"
    )
    print("| optiforge | workers | vs OpenEvolve | e2e | loop | steady |")
    print("|---|---|---|---|---|---|")
    for system in ofs:
        for w in workers:
            for mode in modes:
                cells = []
                for rate in RATES:
                    xs = paired_ratios(
                        results, (system, "sandboxed", w), ("OpenEvolve", mode, w), rate
                    )
                    printed[f"{system} w{w} / OpenEvolve {mode} w{w} {rate}"] = xs
                    cells.append(ratio_cell(xs))
                print(f"| {system} | {w} | {mode} | " + " | ".join(cells) + " |")
    if len(workers) >= 2:
        lo, hi = workers[0], workers[-1]
        print(f"\nPaired scaling {lo} -> {hi} workers (evals/min ratio per repeat; median [95%]):")
        print("| system | candidate isolation | e2e | loop | steady |")
        print("|---|---|---|---|---|")
        for system, mode in (
            *((s_, "sandboxed") for s_ in ofs),
            *(("OpenEvolve", m) for m in modes),
        ):
            if (system, mode, lo) not in table:
                continue
            cells = []
            for rate in RATES:
                xs = paired_ratios(results, (system, mode, hi), (system, mode, lo), rate)
                printed[f"{system} {mode} w{hi} / w{lo} {rate}"] = xs
                cells.append(ratio_cell(xs))
            print(
                f"| {system} | {table[(system, mode, lo)]['isolation']} | "
                + " | ".join(cells)
                + " |"
            )
    return printed


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
    loop's own work: proposing, materializing, dispatch, events, checkpoints) where
    nothing overlaps; the loop proposes while it evaluates (already at 1 worker: the
    next proposal's LLM call runs during an evaluation), so the parts are sums of busy
    time and "the rest" goes negative by the overlap: not a decomposition of the wall."""
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
                "the rest (loop overhead minus overlap; negative: LLM calls and runs overlap)": (
                    per_eval - 1000 * sb - llm_share
                ),
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
    for mode in OE_MODES:
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
    ap.add_argument(
        "--modes",
        nargs="+",
        choices=OE_MODES,
        default=list(OE_MODES),
        help="OpenEvolve evaluator modes (rows): "
        + "; ".join(f"{k}: {v}" for k, v in ISOLATION.items()),
    )
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
    pythons = {"optiforge": str(OPTIFORGE_PYTHON), "openevolve": str(py)}
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
        print(
            "OpenEvolve 0.4.0 pre-started evaluator: its process pool's workers load "
            "evaluator.py once and stay up (max_tasks_per_child=None): the in-process row; "
            "it offers no pre-started *isolated* evaluator (evaluator.distributed, "
            "memory_limit_mb, cpu_limit are 'not implemented' in its config), so the fork "
            "row's evaluator is written here",
            flush=True,
        )
        for rep in range(args.repeats):
            elapsed = time.perf_counter() - t_all
            per_repeat = (time.perf_counter() - t_bench) / max(1, repeats_done)
            if rep > 0 and elapsed + per_repeat > args.max_wall_s:
                print(f"stopping after {rep} repeat(s): --max-wall-s {args.max_wall_s:.0f}")
                break
            # reversed on odd repeats: no configuration always follows the same one
            for system, mode, w in configs if rep % 2 == 0 else configs[::-1]:
                out = base / f"{system}-{mode}-w{w}-r{rep}"
                if out.exists():
                    shutil.rmtree(out)
                before = server.requests()
                load_before = os.getloadavg()
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
                r["load_before"] = load_before
                results.append(r)
                print(
                    f"repeat {rep + 1} {system:18s} {mode:13s} w={w}: "
                    f"{r['n_evaluations']} evals ({r['n_passed']} passed), "
                    f"{r['server_requests']} LLM requests, wall {r['wall_s']:.2f} s, "
                    f"loop {r['loop_s']:.2f} s, "
                    f"{per_min(r['n_evaluations'], r['wall_s']):.0f}/min e2e, "
                    f"load before {load_before[0]:.2f}",
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
        f"{os.cpu_count()} CPUs, medians of {repeats_done} repeat(s); same session "
        f"treatment and thread env ({' '.join(f'{k}={v}' for k, v in THREAD_ENV.items())}) "
        f"for both; optiforge default memory; load average now {os.getloadavg()}"
    )
    print_table(table)
    ratios = print_ratios(results, table, sorted(args.workers), list(launchers), args.modes)
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
                    "paired_ratios": ratios,
                    "profile": prof,
                    "runs": results,
                },
                indent=1,
            )
        )


if __name__ == "__main__":
    main()
