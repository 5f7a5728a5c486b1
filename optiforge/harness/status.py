"""What a run or an eval ended as, and the exit code the CLI returns for it.

One table, used by the runner (``summary["status"]``, the manifest's ``status``) and by the
CLI (its exit code and final status line):

====  ==============  ==================================================================
code  status          meaning
====  ==============  ==================================================================
0     ``finished``    the run ended with a result the harness re-measured and verified
1     ``failed``      no verified result, the agent's LLM failed (an LLM error stopped
                      it, or not one LLM proposal was valid), or the agent crashed; for
                      an eval: a run crashed, or every run of the agent failed (runs
                      that failed on some tasks are results of the eval, counted in its
                      status line)
2     invalid input   a bad option, config key or task name, or a run directory that is
                      missing, taken or damaged (nothing ran)
3     ``stopped``     a spending cap (``--max-llm-calls``, ``--max-usd``, ``--max-wall-s``)
                      stopped the run; the result so far is written and verified
4     environment     a service the run needs is unavailable: the sandbox, the memory
                      store, the LLM provider (``llm ping``)
130   interrupted     Ctrl-C; the run's records are kept: continue with ``--resume``
====  ==============  ==================================================================
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from optiforge.errors import (
    ConfigError,
    InvalidTask,
    LLMError,
    MemoryStoreError,
    OptiforgeError,
    RunRecordError,
    SandboxError,
)


class ExitCode(IntEnum):
    """The CLI's exit codes (see the module docstring)."""

    FINISHED = 0
    FAILED = 1
    INVALID_INPUT = 2
    STOPPED = 3
    ENVIRONMENT = 4
    INTERRUPTED = 130


STATUS_EXIT = {
    "finished": ExitCode.FINISHED,
    "failed": ExitCode.FAILED,
    "stopped": ExitCode.STOPPED,
    "interrupted": ExitCode.INTERRUPTED,
}

# Stop reasons the agent kit writes (``agents.kit.search``) when a spending cap or the
# LLM ended a search early.
_CAP_PREFIX = "budget exhausted"
_LLM_PREFIX = "LLM error"


def llm_proposals_failure(counts: dict[str, int] | None) -> str | None:
    """Why a run failed when its LLM proposed and not one proposal was valid, else None.

    ``counts``: ``AgentOutcome.llm_proposals`` (``{"made", "valid"}``), None when the agent
    does not count or no LLM proposed.
    """
    if not counts or int(counts.get("made") or 0) <= 0 or int(counts.get("valid") or 0) > 0:
        return None
    return (
        f"0 of {int(counts['made'])} LLM proposals were valid: the result owes nothing to the model"
    )


def run_status(
    best_score: float | None,
    stop_reason: str,
    failure: str | None = None,
    llm_proposals: dict[str, int] | None = None,
) -> tuple[str, str]:
    """``(status, reason)`` of one finished ``run_task``.

    Args:
        best_score: the harness's re-measured value of the returned candidate (None: none
            passed).
        stop_reason: why the agent stopped (``AgentOutcome.stop_reason``).
        failure: the agent's own verdict that its run failed although it returned a
            candidate (``AgentOutcome.failure``), e.g. every LLM proposal was invalid.
        llm_proposals: the agent's count of its LLM proposals (``llm_proposals_failure``):
            the same verdict for every agent that counts, whether or not it says so itself.
    """
    failure = failure or llm_proposals_failure(llm_proposals)
    if failure:
        return "failed", failure
    if stop_reason.startswith(_LLM_PREFIX):
        return "failed", stop_reason
    if best_score is None:
        if stop_reason.startswith(_CAP_PREFIX):  # the cap came before any passing candidate
            return "stopped", f"{stop_reason}; no candidate passed before it"
        return "failed", "no candidate passed the harness's re-measurement"
    if stop_reason.startswith(_CAP_PREFIX):
        return "stopped", stop_reason
    return "finished", stop_reason


def eval_status(rows: list[dict[str, Any]], agent: str) -> tuple[str, str]:
    """``(status, reason)`` of an eval from its result rows (see the module table)."""
    crashed = [r for r in rows if "error" in r]
    mine = [r for r in rows if r.get("method") == agent and "error" not in r]
    if crashed:
        return "failed", f"{len(crashed)} of {len(rows)} runs crashed"
    if not rows:
        return "failed", "no runs"
    agent_rows = [r for r in rows if r.get("method") == agent]
    if agent_rows and all(r.get("status") == "failed" or r.get("best_score") is None for r in mine):
        return "failed", f"all {len(agent_rows)} {agent} runs failed"
    # A task the agent did not solve is a result of the eval (its score says so), not a
    # failure of the eval: it is counted in the reason.
    unsolved = [r for r in mine if r.get("status") == "failed"]
    note = f"; {len(unsolved)} of {len(agent_rows)} {agent} runs failed" if unsolved else ""
    stopped = [r for r in rows if r.get("status") == "stopped"]
    if stopped:
        return "stopped", f"a spending cap stopped {len(stopped)} of {len(rows)} runs{note}"
    return "finished", f"{len(rows)} runs{note}"


def error_exit(err: OptiforgeError) -> ExitCode:
    """Exit code of an error that escaped a command (see the module table)."""
    if isinstance(err, ConfigError | InvalidTask | RunRecordError):
        return ExitCode.INVALID_INPUT
    if isinstance(err, LLMError | SandboxError | MemoryStoreError):
        return ExitCode.ENVIRONMENT
    return ExitCode.FAILED
