"""The CLI tells the truth: a run that failed never exits 0, every bad input is one line.

One test per failure a new user hit (issue 13): each asserts the exit code of the table in
``optiforge.harness.status`` and the one-line message.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from optiforge.harness.status import ExitCode, eval_status, run_status
from optiforge.testing import OpenAICompatServer

CLI = [sys.executable, "-m", "optiforge.cli"]
GOOD = "```python\ndef f(x):\n    return x * x\n```"


def optiforge(
    *args: str, env: dict[str, str] | None = None, timeout: float = 1200
) -> subprocess.CompletedProcess[str]:
    """Run the CLI; ``timeout`` is a hang guard, generous for a loaded machine."""
    full = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}  # no key unless given
    full.update({"COLUMNS": "200", **(env or {})})
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, env=full)


def error_lines(proc: subprocess.CompletedProcess[str]) -> list[str]:
    return [ln for ln in proc.stderr.splitlines() if ln.startswith("error:")]


def status_line(proc: subprocess.CompletedProcess[str]) -> str:
    lines = [ln for ln in proc.stderr.splitlines() if ln.startswith("status:")]
    assert len(lines) == 1, proc.stderr[-2000:]
    return lines[0]


# ---------------------------------------------------------------------------- statuses


def test_run_status_rules() -> None:
    assert run_status(1.0, "evaluation budget spent") == ("finished", "evaluation budget spent")
    assert run_status(None, "evaluation budget spent")[0] == "failed"
    assert run_status(1.0, "LLM error: LLMAuthError: no key")[0] == "failed"
    assert run_status(1.0, "budget exhausted (max_calls): ...")[0] == "stopped"
    assert run_status(1.0, "max rounds reached", "none of 12 proposals was valid") == (
        "failed",
        "none of 12 proposals was valid",
    )


def test_eval_status_rules() -> None:
    ok = {"task": "a", "seed": 0, "method": "evolve", "best_score": 1.0, "status": "finished"}
    base = {**ok, "method": "seed"}
    bad = {**ok, "best_score": 1.0, "status": "failed"}
    assert eval_status([ok, base], "evolve")[0] == "finished"
    assert eval_status([bad, base], "evolve") == ("failed", "all 1 evolve runs failed")
    assert eval_status([ok, {"error": "X", "method": "seed"}], "evolve")[0] == "failed"
    # a task the agent did not solve is a result of the eval, counted in the reason
    status, reason = eval_status([ok, bad, base], "evolve")
    assert status == "finished" and "1 of 2 evolve runs failed" in reason


# ---------------------------------------------------------------------------- runs


def test_finished_run_exits_0_and_shows_the_best_candidate(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = optiforge("run", "evolve", "--bench", "funcfit/quadratic", "--budget", "4",
                     "--memory", "none", "--out", str(out))  # fmt: skip
    assert proc.returncode == ExitCode.FINISHED, proc.stderr[-2000:]
    # the run dir is named at the start, before any work
    assert proc.stderr.splitlines()[0].startswith(f"run {out}: evolve on funcfit/quadratic@dev")
    assert status_line(proc).startswith("status: finished")
    best = out / "best" / "candidate.py"
    assert f"best candidate: {best}" in proc.stdout
    assert "def f(x)" in best.read_text()
    metrics = json.loads((out / "best" / "metrics.json").read_text())
    summary = json.loads((out / "summary.json").read_text())
    assert metrics["best_score"] == summary["best_score"] and summary["status"] == "finished"
    assert summary["best_path"] == "best/candidate.py"
    assert json.loads((out / "best" / "lineage.json").read_text())[0]["origin"] == "seed"


def test_missing_key_fails_before_the_run_with_exit_4(tmp_path: Path) -> None:
    """No OPENAI_API_KEY: one line before anything runs (no run directory), exit 4."""
    out = tmp_path / "run"
    proc = optiforge("run", "evolve", "--bench", "funcfit/quadratic", "--budget", "4",
                     "--memory", "none", "--model", "openai/gpt-4o-mini", "--out", str(out))  # fmt: skip
    assert proc.returncode == ExitCode.ENVIRONMENT, proc.stderr[-2000:]
    assert error_lines(proc) == proc.stderr.strip().splitlines()
    assert len(error_lines(proc)) == 1
    assert "LLMAuthError" in proc.stderr and "OPENAI_API_KEY" in proc.stderr
    assert not out.exists()


def test_local_server_with_no_key_runs(tmp_path: Path, openai_server: OpenAICompatServer) -> None:
    """The README's OpenAI-compatible example works with no OPENAI_API_KEY set."""
    openai_server.default = {"content": GOOD}
    proc = optiforge("run", "evolve", "--bench", "funcfit/quadratic", "--budget", "3",
                     "--memory", "none", "--model", "openai/local", "--api-base",
                     openai_server.url, "--out", str(tmp_path / "run"))  # fmt: skip
    assert proc.returncode == ExitCode.FINISHED, proc.stderr[-2000:]
    assert openai_server.count >= 1
    # a local model has no price: the table says so instead of $0.0000
    row = next(ln for ln in proc.stdout.splitlines() if ln.startswith("│ evolve "))
    assert "unknown" in row and "$0.0000" not in row


@pytest.mark.slow
def test_cassette_miss_is_a_failed_run(tmp_path: Path) -> None:
    cassette = tmp_path / "empty.jsonl"
    cassette.write_text("")
    proc = optiforge("run", "evolve", "--bench", "funcfit/quadratic", "--budget", "3",
                     "--memory", "none", "--model", "openai/gpt-4o-mini", "--replay",
                     str(cassette), "--out", str(tmp_path / "run"))  # fmt: skip
    assert proc.returncode == ExitCode.FAILED, proc.stderr[-2000:]
    assert "CassetteMiss" in status_line(proc)


def test_eval_whose_agent_runs_all_failed_exits_1(
    tmp_path: Path, openai_server: OpenAICompatServer
) -> None:
    # a server that refuses the key: the check before the run passes (it listens), the
    # agent's calls fail
    openai_server.default = {"status": 401, "error": "invalid api key"}
    proc = optiforge("eval", "evolve", "--tasks", "quadratic", "--seeds", "1", "--budget", "3",
                     "--memory", "none", "--model", "openai/x", "--api-base", openai_server.url,
                     "--baselines", "seed", "--out", str(tmp_path / "ev"))  # fmt: skip
    assert proc.returncode == ExitCode.FAILED, proc.stderr[-2000:]
    assert status_line(proc).startswith("status: failed (all 1 evolve runs failed)")


def _sigint_as_at_a_terminal() -> None:
    """In the child before exec: SIGINT back to its default disposition, as a terminal's
    foreground job has it. A suite started as a background job of a non-interactive shell
    (``make test &``) inherits SIGINT ignored, and Python then installs no KeyboardInterrupt
    handler, so the run would rightly never see this test's Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def test_ctrl_c_says_how_to_resume_and_the_run_is_reportable(tmp_path: Path) -> None:
    out = tmp_path / "run"
    proc = subprocess.Popen(
        [*CLI, "run", "evolve", "--bench", "funcfit/quadratic", "--budget", "100000",
         "--memory", "none", "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=_sigint_as_at_a_terminal,  # noqa: PLW1509 - only a signal() call
    )  # fmt: skip
    deadline = time.monotonic() + 900  # a hang guard: a loaded machine starts runs slowly
    log = out / "evaluations.jsonl"
    while time.monotonic() < deadline and not (log.exists() and log.read_text().count("\n") >= 3):
        time.sleep(0.2)
    assert log.exists() and log.read_text().count("\n") >= 3, "the run never got going"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == ExitCode.INTERRUPTED, err[-2000:]
    assert f"continue with `optiforge run evolve --resume {out}`" in err
    assert json.loads((out / "manifest.json").read_text())["status"] == "interrupted"
    rep = optiforge("report", str(out))
    assert rep.returncode == 0, rep.stderr
    page = (out / "report.html").read_text()
    assert "interrupted" in page and "not re-measured" in page


# ---------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "evolve", "--budget", "0"], "'--budget'"),
        (["run", "evolve", "--budget", "-3"], "'--budget'"),
        (["run", "evolve", "--budget", "1000000000000"], "'--budget'"),
        (["eval", "evolve", "--seeds", "0"], "'--seeds'"),
        (["eval", "evolve", "--seeds", "-1"], "'--seeds'"),
        (["run", "evolve", "--workers", "0"], "'--workers'"),
        (["sandbox", "exec", "--timeout", "inf", "--", "true"], "'--timeout'"),
        (["run", "nope"], "unknown agent 'nope'"),
        (["run", "kernel-discovery", "--bench", "funcfit/quadratic"], "runs on hdbo tasks"),
        (["eval", "evolve", "--bench", "hdbo"], "runs on funcfit tasks"),
        (
            ["run", "evolve", "--model", "local", "--api-base", "http://127.0.0.1:9/v1"],
            "served by optiforge itself",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], needle: str, tmp_path: Path) -> None:
    proc = (
        optiforge(*args, "--out", str(tmp_path / "o")) if args[0] != "sandbox" else optiforge(*args)
    )
    assert proc.returncode == ExitCode.INVALID_INPUT, proc.stderr[-2000:]
    lines = error_lines(proc)
    assert len(lines) == 1 and needle in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "o").exists()  # nothing was started


def test_resume_with_the_wrong_agent_is_refused_and_harms_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    first = optiforge("run", "evolve", "--bench", "funcfit/quadratic", "--budget", "2",
                      "--memory", "none", "--out", str(out))  # fmt: skip
    assert first.returncode == 0, first.stderr[-2000:]
    before = (out / "manifest.json").read_text()
    proc = optiforge("run", "hawkeye", "--resume", str(out))
    assert proc.returncode == ExitCode.INVALID_INPUT
    (line,) = error_lines(proc)
    assert f"continue it with `optiforge run evolve --resume {out}`" in line
    assert (out / "manifest.json").read_text() == before


def test_memory_import_of_a_binary_file_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"\xff\xfe\x00 not text")
    proc = optiforge("memory", "--memory", f"sqlite:///{tmp_path / 'm.db'}", "--no-embed",
                     "import", str(bad))  # fmt: skip
    assert proc.returncode != 0 and "Traceback" not in proc.stderr
    (line,) = error_lines(proc)
    assert "not a UTF-8 JSONL file" in line


def test_every_llm_proposal_invalid_is_a_failed_run(
    tmp_path: Path, openai_server: OpenAICompatServer
) -> None:
    """Replies with no code: the seed is all the run has, and the run says it failed."""
    openai_server.default = {"content": "I am sorry, I cannot write code today."}
    out = tmp_path / "run"
    proc = optiforge("run", "evolve", "--bench", "funcfit/quadratic", "--budget", "6",
                     "--memory", "none", "--model", "openai/local", "--api-base",
                     openai_server.url, "--out", str(out))  # fmt: skip
    assert proc.returncode == ExitCode.FAILED, proc.stderr[-2000:]
    assert "not one of the" in status_line(proc) and "LLM proposals was valid" in status_line(proc)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["best_score"] is not None  # the seed


def test_offline_search_whose_mutations_all_fail_is_still_a_result() -> None:
    """The rule is about the LLM: an offline proposer's misses are results of the search."""
    from optiforge.agents.kit import Evaluated, SearchResult, search_outcome

    seed = Evaluated(id="s", key="k", payload={}, round=0, passed=True, value=1.0)
    miss = Evaluated(id="m", key="", payload={}, round=1, error="invalid: no code")
    result = SearchResult(best=seed, history=[seed, miss], population=[seed], n_evaluations=1,
                          n_duplicates=0, n_invalid=1, rounds=2, stop_reason="max rounds reached")  # fmt: skip
    assert search_outcome(result, proposer="p", higher_is_better=False, llm=False).failure is None
    failure = search_outcome(result, proposer="p", higher_is_better=False, llm=True).failure
    assert (
        failure
        == "not one of the 1 LLM proposals was valid (1 rejected before evaluation, 0 failed it)"
    )


def test_http_500_forever_is_a_failed_run(
    tmp_path: Path, openai_server: OpenAICompatServer
) -> None:
    """A provider that answers 500 to every retry: the run ends failed, its status says why."""
    from optiforge.config import RunSettings
    from optiforge.evals.registry import resolve_task
    from optiforge.harness.runner import run_task
    from optiforge.llm import LiteLLM

    openai_server.default = {"status": 500, "error": "upstream exploded"}
    llm = LiteLLM("openai/local", api_base=openai_server.url, timeout_s=5.0, max_retries=2,
                  backoff_base_s=0.001, backoff_max_s=0.01)  # fmt: skip
    summary = run_task("evolve", resolve_task("funcfit/quadratic@dev"),
                       RunSettings(budget=4, memory="none",
                                   agent={"search": {"proposals_per_round": 1}}), tmp_path / "r",
                       with_baseline=False, llm=llm)  # fmt: skip
    assert openai_server.count == 3  # the first try and two retries
    assert summary.status == "failed"
    assert "LLMProviderError" in summary.status_reason and "3 attempts" in summary.status_reason
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert manifest["status"] == "failed"


def test_runs_pin_one_blas_thread_unless_told(tmp_path: Path) -> None:
    """Thread count changes BO numbers (and 2 threads were 7x slower on 2 cores): the CLI
    pins 1 by default, a user's own setting wins, and the manifest records it."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "MKL_NUM_THREADS")}
    for given, want in ((None, "1"), ("2", "2")):
        run_env = {**env, **({"OMP_NUM_THREADS": given} if given else {})}
        out = tmp_path / f"t{want}"
        proc = subprocess.run([*CLI, "run", "evolve", "--budget", "2", "--memory", "none",
                               "--out", str(out)], capture_output=True, text=True, env=run_env)  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        threads = json.loads((out / "manifest.json").read_text())["threads"]
        assert threads["OMP_NUM_THREADS"] == want


@pytest.mark.slow
def test_resume_keeps_the_recorded_model_and_names_ignored_flags(
    tmp_path: Path, openai_server: OpenAICompatServer
) -> None:
    """--resume prints the run's own model (not 'offline'), names the flags it ignores in
    one warning line, honours a spending cap, and keeps the LLM ledger (issue 42)."""
    openai_server.default = {"content": GOOD}
    out = tmp_path / "run"
    first = optiforge("run", "evolve", "--bench", "funcfit/quadratic", "--budget", "3",
                      "--memory", "none", "--model", "openai/local", "--api-base",
                      openai_server.url, "--out", str(out))  # fmt: skip
    assert first.returncode == ExitCode.FINISHED, first.stderr[-2000:]
    before = json.loads((out / "summary.json").read_text())
    assert before["llm_calls"] >= 1
    again = optiforge("run", "evolve", "--resume", str(out), "--budget", "9", "--seed", "4",
                      "--max-llm-calls", "50")  # fmt: skip
    assert again.returncode == ExitCode.FINISHED, again.stderr[-2000:]
    header = next(ln for ln in again.stderr.splitlines() if ln.startswith("resuming "))
    assert "model openai/local" in header and "seed 0" in header
    (warning,) = [ln for ln in again.stderr.splitlines() if ln.startswith("warning: --resume")]
    assert "--budget (kept: 3)" in warning and "--seed (kept: 0)" in warning
    assert "ignored --max-llm-calls" not in warning and "--max-llm-calls" in warning
    summary = json.loads((out / "summary.json").read_text())
    for key in ("llm_calls", "tokens", "n_evaluations"):
        assert summary[key] == before[key], key
