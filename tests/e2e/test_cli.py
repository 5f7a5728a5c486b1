"""The CLI as a user drives it: commands, files they write, one-line errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

CLI = [sys.executable, "-m", "optiforge.cli"]


def optiforge(
    *args: str, timeout: float = 1200, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the CLI; ``timeout`` is a hang guard, generous for a loaded machine."""
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run(
        [*CLI, *args], capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env
    )


def test_help_and_lists() -> None:
    assert optiforge("--help").returncode == 0
    out = optiforge("list", "agents")
    assert out.returncode == 0 and "evolve" in out.stdout
    out = optiforge("list", "benchmarks")
    assert out.returncode == 0 and "funcfit" in out.stdout
    out = optiforge("list", "providers")
    assert out.returncode == 0 and "ollama" in out.stdout and "anthropic" in out.stdout


@pytest.mark.slow
def test_doctor_reports_capabilities() -> None:
    out = optiforge("doctor", "--json")
    assert out.returncode == 0, out.stderr
    checks = {c["name"]: c for c in json.loads(out.stdout)}
    assert {"gpu", "docker engine", "bubblewrap", "warm sandbox", "ray", "embedding model"} <= set(
        checks
    )
    modes = [n for n in checks if n.startswith("sandbox ")]
    assert modes and "sandbox none" in checks, checks
    assert "containment" in checks["sandbox none"]["detail"]
    for c in checks.values():
        assert c["ok"] or c["consequence"], (
            f"{c['name']} is missing but says nothing about what that means"
        )


def test_sandbox_exec_json() -> None:
    out = optiforge(
        "sandbox", "exec", "--json", "--timeout", "10", "--", "python", "-c", "print(6*7)"
    )
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout)
    assert set(res) >= {
        "returncode",
        "timed_out",
        "duration_s",
        "peak_rss_mb",
        "killed_by",
        "stdout",
        "stderr",
        "protections",
    }
    assert res["stdout"].strip() == "42" and res["returncode"] == 0 and res["timed_out"] is False
    out = optiforge(
        "sandbox", "exec", "--json", "--timeout", "1", "--", "python", "-c", "while True: pass"
    )
    res = json.loads(out.stdout)
    assert res["timed_out"] is True and out.returncode != 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("run", "no-such-agent"), "unknown agent 'no-such-agent'"),
        (("run", "evolve", "--bench", "funcfit/nope"), "no task 'nope' in funcfit"),
        (("run", "evolve", "--bench", "nobench/x"), "unknown benchmark 'nobench'"),
        (("run", "evolve", "--set", "agent.typo=1", "--bench", "funcfit/quadratic"), "unknown key"),
        (("report", "/nonexistent/dir"), "no summary.json"),
        (("llm", "ping", "--model", "offline"), "nothing to ping"),
    ],
)
def test_bad_input_is_one_line_error(args: tuple[str, ...], needle: str) -> None:
    out = optiforge(*args)
    assert out.returncode == 2
    err = out.stderr.strip()
    assert needle in err, err
    assert "Traceback" not in err and len(err.splitlines()) == 1


def test_run_then_report(tmp_path: Path) -> None:
    out_dir = tmp_path / "run"
    out = optiforge(
        "run",
        "evolve",
        "--bench",
        "funcfit/quadratic",
        "--budget",
        "5",
        "--out",
        str(out_dir),
        "--memory",
        "none",
    )
    assert out.returncode == 0, out.stderr
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary["n_evaluations"] == 5 and summary["best_score"] is not None
    assert summary["best_score"] <= summary["baseline_score"]
    assert "evolve" in out.stdout and "seed (baseline)" in out.stdout
    # drawn by a detached process after the run (plot_later); `report` draws it too
    png = out_dir / "convergence.png"
    end = time.monotonic() + 300  # a hang guard, not a timing assertion
    while not png.is_file() and time.monotonic() < end:
        time.sleep(0.2)
    assert png.is_file()
    rep = optiforge("report", str(out_dir))
    assert rep.returncode == 0
    html = (out_dir / "report.html").read_text()
    assert "data:image/png;base64," in html and "best_score" in html
    # the sandboxed evaluations are in the run's event log
    kinds = [
        json.loads(line)["kind"] for line in (out_dir / "events.jsonl").read_text().splitlines()
    ]
    assert kinds.count("sandbox_run") >= 5 and kinds.count("evaluation") == 5


def test_run_killed_then_resumed(tmp_path: Path) -> None:
    """Ctrl-C/kill mid-run keeps the records; --resume finishes without redoing evaluations."""
    import signal
    import time

    out_dir = tmp_path / "run"
    env = {**os.environ, "COLUMNS": "200"}
    # evaluations take milliseconds: a budget well above the kill point leaves the polling
    # parent room to be scheduled late on a loaded machine before the run could finish
    budget = 40
    proc = subprocess.Popen(
        [
            *CLI,
            "run",
            "evolve",
            "--bench",
            "funcfit/sine",
            "--budget",
            str(budget),
            "--out",
            str(out_dir),
            "--memory",
            "none",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    evals = out_dir / "evaluations.jsonl"
    deadline = time.time() + 900  # a hang guard
    while time.time() < deadline and not (
        evals.exists() and len(evals.read_text().splitlines()) >= 4
    ):
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    done_before = [json.loads(line)["id"] for line in evals.read_text().splitlines()]
    assert 4 <= len(done_before) < budget
    manifest = json.loads((out_dir / "manifest.json").read_text())
    assert manifest["status"] == "running"  # killed: never marked finished
    out = optiforge("run", "evolve", "--resume", str(out_dir))
    assert out.returncode == 0, out.stderr
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary["n_evaluations"] == budget
    ids = [json.loads(line)["id"] for line in evals.read_text().splitlines()]
    assert len(ids) - len(set(ids)) <= 1  # at most the evaluation in flight at the kill
    assert set(done_before) <= set(ids)
    kinds = [
        json.loads(line)["kind"] for line in (out_dir / "events.jsonl").read_text().splitlines()
    ]
    assert "run_resumed" in kinds and kinds[-1] == "run_finished"


def test_llm_ping_through_local_server(openai_server) -> None:  # type: ignore[no-untyped-def]
    openai_server.script(["pong"])
    env_key = {"OPENAI_API_KEY": "sk-test"}
    out = subprocess.run(
        [*CLI, "llm", "ping", "--model", "openai/test-model", "--api-base", openai_server.url],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env_key, "COLUMNS": "200"},
    )
    assert out.returncode == 0, out.stderr
    assert (
        "ok" in out.stdout and "tokens in" in out.stdout and "unknown" in out.stdout
    )  # no price for a local model
    assert openai_server.count == 1


_FAST_EXIT = r"""
import atexit, concurrent.futures, sys, threading
from pathlib import Path
import optiforge.cli

cli = sys.modules["optiforge.cli.main"]  # the module (the package's `main` is the function)

out = Path(sys.argv[1])
pool = concurrent.futures.ThreadPoolExecutor(2)  # idle non-daemon workers, as litellm leaves
pool.submit(lambda: None).result()
late = threading.Thread(target=lambda: (__import__("time").sleep(0.3), out.joinpath("thread").write_text("joined")))
late.start()
atexit.register(lambda: out.joinpath("atexit").write_text("ran"))

def fake_main():
    print("buffered output", end="")  # no newline: still in stdout's buffer
    sys.exit(int(sys.argv[2]))

cli.main = fake_main
cli.console_main()
"""


@pytest.mark.parametrize("code", [0, 3])
def test_console_exit_is_fast_but_complete(tmp_path: Path, code: int) -> None:
    """The console script skips interpreter teardown but not what an exit owes: idle
    executor threads are stopped (not waited on forever), other threads joined, atexit
    handlers run, output flushed, and the exit code kept."""
    script = tmp_path / "prog.py"
    script.write_text(_FAST_EXIT)
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path), str(code)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == code, proc.stderr
    assert proc.stdout == "buffered output"
    assert (tmp_path / "atexit").read_text() == "ran"
    assert (tmp_path / "thread").read_text() == "joined"
