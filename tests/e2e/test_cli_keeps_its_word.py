"""A CLI that keeps its word (issue 42): hard caps, early provider errors, --out, --config.

Exit codes are the table of ``optiforge.harness.status``. No timed assertions: a cap test
passes when the run ends (its fake provider blocks for ever) with exit 3, the budget named
and the records written. The caps (12 s) leave a loaded machine time to start the run, so
that there is a run directory to record the stop in.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from optiforge.harness.status import ExitCode
from optiforge.testing import OpenAICompatServer, SilentServer

CLI = [sys.executable, "-m", "optiforge.cli"]
RUN = ["run", "evolve", "--bench", "funcfit/quadratic", "--memory", "none"]


def optiforge(
    *args: str, timeout: float = 600, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the CLI; ``timeout`` is a hang guard, generous for a loaded machine."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["COLUMNS"] = "200"
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout,
                          env=env, cwd=cwd)  # fmt: skip


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), proc.stderr[-2000:]
    return lines[0]


# ---------------------------------------------------------------------------- caps


def _assert_stopped_by_wall(proc: subprocess.CompletedProcess[str], out: Path) -> None:
    assert proc.returncode == ExitCode.STOPPED, proc.stderr[-3000:]
    status = [ln for ln in proc.stderr.splitlines() if ln.strip().startswith("status:")]
    assert status and "stopped" in status[-1] and "wall_s" in status[-1], proc.stderr[-3000:]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "stopped"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "stopped" and "wall_s" in summary["status_reason"]


@pytest.mark.slow
def test_wall_cap_stops_a_run_whose_provider_never_answers(tmp_path: Path) -> None:
    """The provider accepts and never answers (each call would wait 60 s, four retries):
    the run ends at the cap with exit 3, the wall budget named, its records written."""
    server = SilentServer()
    out = tmp_path / "run"
    try:
        proc = optiforge(*RUN, "--budget", "50", "--model", "openai/x", "--api-base",
                         server.url, "--max-wall-s", "12", "--out", str(out))  # fmt: skip
    finally:
        server.close()
    _assert_stopped_by_wall(proc, out)


CAPPED_PIPELINE = """
name: capped
description: one evolve node under a wall cap
budget:
  max_wall_s: 12
nodes:
  - id: fit
    agent: evolve
    task: funcfit/quadratic@dev
    budget: 50
"""


@pytest.mark.slow
def test_pipeline_wall_cap_stops_a_blocked_node(tmp_path: Path) -> None:
    server = SilentServer()
    spec = tmp_path / "capped.yaml"
    spec.write_text(CAPPED_PIPELINE)
    out = tmp_path / "pipe"
    try:
        proc = optiforge("pipeline", "run", str(spec), "--model", "openai/x", "--api-base",
                         server.url, "--out", str(out), cwd=tmp_path)  # fmt: skip
    finally:
        server.close()
    assert proc.returncode == ExitCode.STOPPED, proc.stderr[-3000:]
    assert "wall_s" in proc.stderr
    assert json.loads((out / "manifest.json").read_text())["status"] == "stopped"
    assert json.loads((out / "summary.json").read_text())["status"] == "stopped"


HARD_STOP = """
import sys, time
from optiforge.llm.litellm_client import LiteLLM
def sleep_forever(self, *a, **k):
    time.sleep(600)  # a call nothing can cancel (a model load, an uninterruptible library)
LiteLLM._send = sleep_forever
import optiforge.harness.runner as runner
runner._verify = sleep_forever  # the re-measurement too: whenever the cap comes, it blocks
from optiforge.cli import console_main
sys.argv = ["optiforge", *sys.argv[1:]]
console_main()
"""


@pytest.mark.slow
def test_wall_cap_hard_stops_what_cannot_be_cancelled(
    tmp_path: Path, openai_server: OpenAICompatServer
) -> None:
    out = tmp_path / "run"
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    proc = subprocess.run(
        [sys.executable, "-c", HARD_STOP, *RUN, "--budget", "50", "--model", "openai/x",
         "--api-base", openai_server.url, "--max-wall-s", "12", "--out", str(out)],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    _assert_stopped_by_wall(proc, out)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["hard_stop"] is True
    assert json.loads((out / "summary.json").read_text())["verified"] is False


# ---------------------------------------------------------------------------- provider


def _dead_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}/v1"


@pytest.mark.parametrize(
    ("command", "model", "needle"),
    [
        ("run", ["--model", "openai/gpt-4o-mini"], "OPENAI_API_KEY is not set"),
        ("run", ["--model", "nosuchprovider/m"], "unknown provider 'nosuchprovider'"),
        ("run", ["--model", "openai/x", "--api-base", "DEAD"], "nothing answers at 127.0.0.1"),
        ("eval", ["--model", "nosuchprovider/m"], "unknown provider"),
        ("pipeline", ["--model", "openai/x", "--api-base", "DEAD"], "nothing answers"),
    ],
)
def test_bad_provider_is_one_line_and_exit_4_before_anything_runs(
    command: str, model: list[str], needle: str, tmp_path: Path
) -> None:
    model = [_dead_url() if a == "DEAD" else a for a in model]
    out = tmp_path / "out"
    head = {
        "run": RUN,
        "eval": ["eval", "evolve", "--tasks", "quadratic", "--seeds", "1", "--memory", "none"],
        "pipeline": ["pipeline", "run", "diagnose"],
    }[command]
    proc = optiforge(*head, *model, "--out", str(out), cwd=tmp_path)
    assert proc.returncode == ExitCode.ENVIRONMENT, proc.stderr[-2000:]
    assert needle in one_error_line(proc)
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["autorem", "adapt", "--model", "nosuchprovider/m"], "unknown provider"),
        (["saddle", "tune", "--model", "openai/x", "--api-base", "DEAD"], "nothing answers"),
        (["saddle", "tune", "--agent-model", "nosuchprovider/m"], "unknown provider"),
        (
            ["saddle", "measure", "--agent-model", "openai/x", "--api-base", "DEAD"],
            "nothing answers",
        ),
    ],
)
def test_agent_commands_check_the_provider_first(
    args: list[str], needle: str, tmp_path: Path
) -> None:
    """autorem and saddle take the same provider check as run: one line, exit 4, nothing
    written (their memory database and --out directory are not created)."""
    args = [_dead_url() if a == "DEAD" else a for a in args]
    out = tmp_path / "out"
    db = tmp_path / "memory.db"
    extra = ["--memory", f"sqlite:///{db}"] if args[0] == "autorem" else ["--out", str(out)]
    if args[:2] == ["saddle", "measure"]:
        extra = []
    proc = optiforge(*args, *extra, cwd=tmp_path)
    assert proc.returncode == ExitCode.ENVIRONMENT, proc.stderr[-2000:]
    assert needle in one_error_line(proc)
    assert not out.exists() and not db.exists()


# ---------------------------------------------------------------------------- --out


def test_out_refuses_a_directory_that_is_neither_empty_nor_a_run(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "module.py").write_text("x = 1\n")
    proc = optiforge(*RUN, "--budget", "2", "--out", str(src))
    assert proc.returncode == ExitCode.INVALID_INPUT, proc.stderr[-2000:]
    assert "not an optiforge run" in one_error_line(proc)
    assert sorted(p.name for p in src.iterdir()) == ["module.py"]  # nothing written
    ev = optiforge("eval", "evolve", "--tasks", "quadratic", "--out", str(src))
    assert ev.returncode == ExitCode.INVALID_INPUT and "not an optiforge run" in ev.stderr


def test_out_takes_an_empty_directory_and_a_run_keeps_its_own_rules(tmp_path: Path) -> None:
    out = tmp_path / "empty"
    out.mkdir()
    first = optiforge(*RUN, "--budget", "2", "--out", str(out))
    assert first.returncode == ExitCode.FINISHED, first.stderr[-2000:]
    again = optiforge(*RUN, "--budget", "2", "--out", str(out))
    assert again.returncode == ExitCode.INVALID_INPUT
    assert "already holds a finished run" in again.stderr


# ---------------------------------------------------------------------------- --config


@pytest.mark.parametrize(
    ("make", "needle"),
    [
        (lambda p: p.mkdir(), "is a directory"),
        (lambda p: p.write_bytes(b"model: \xff\xfe\n"), "is not UTF-8 text"),
        (lambda p: p.write_text("a: [1,\n b: 2\n"), "is not valid YAML"),
        (lambda p: p.write_text("modle: x\n"), "unknown key 'modle'"),
    ],
)
def test_every_config_error_is_one_line_naming_the_file(
    make: object, needle: str, tmp_path: Path
) -> None:
    cfg = tmp_path / "preset.yaml"
    make(cfg)  # type: ignore[operator]
    proc = optiforge(*RUN, "--budget", "2", "--config", str(cfg), "--out", str(tmp_path / "o"))
    assert proc.returncode == ExitCode.INVALID_INPUT, proc.stderr[-2000:]
    line = one_error_line(proc)
    assert needle in line and str(cfg) in line
