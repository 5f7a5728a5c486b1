"""The ``terminal`` agent's graph node: ``episode`` works the task through the config's
harness (``run_episode``); ``outcome`` reads the run's result from the final state.

The candidate is ``{"commands": [...]}``, the commands the episode ran; the harness
re-scores it by replaying them from the task's initial files and running the hidden test
(``SaddleTask.evaluate``). Without an LLM the agent has nothing to act with: the run
fails with that reason (``optiforge.agents.terminal.testing`` holds a simulated model for tests
and for exercising AutoSaddler offline).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from langgraph.runtime import Runtime

from optiforge.agents.kit import RunContext
from optiforge.agents.kit.context import AgentContext
from optiforge.agents.kit.harness import Harness
from optiforge.agents.kit.harness_hooks import run_code_hook
from optiforge.agents.spec import AgentOutcome
from optiforge.agents.terminal.config import TerminalConfig
from optiforge.agents.terminal.problem import (
    FILES_HEAD,
    FORMAT_HINT,
    REPLY_CLIP,
    TAIL_CLIP,
    VERIFY_TEXT,
    TerminalState,
    clip,
    messages_for,
    observation,
)
from optiforge.agents.terminal.proposers import next_action
from optiforge.agents.terminal.report import TerminalExtra
from optiforge.evals.suites.saddle.protocol import SaddleTask
from optiforge.runs import Tracer

if TYPE_CHECKING:
    from optiforge.llm.base import LLM
    from optiforge.sandboxes.base import Sandbox

Ctx = AgentContext[SaddleTask, TerminalConfig]
"""The graph's runtime context: the run's handles, its saddle task and config."""

NO_LLM = "no LLM"
"""The stop reason of a run without a model."""


def episode(state: TerminalState, runtime: Runtime[Ctx]) -> dict[str, Any]:
    """One episode of the task through the config's harness (nothing without an LLM)."""
    ctx = runtime.context
    harness = ctx.config.load_harness()
    if ctx.llm is None:
        return {"episode": {"commands": [], "stop": NO_LLM, "steps": 0, "llm_calls": 0,
                            "tokens": 0, "turns": [], "harness": harness.version}}  # fmt: skip
    ep = run_episode(ctx.task, harness, ctx.llm, ctx.sandbox, temperature=ctx.config.temperature,
                     step_timeout_s=ctx.config.step_timeout_s, tracer=ctx.tracer)  # fmt: skip
    ctx.tracer.event("terminal_episode", task=ctx.task.name, stop=ep["stop"], steps=ep["steps"],
                     llm_calls=ep["llm_calls"], harness=harness.version)  # fmt: skip
    return {"episode": ep}


def outcome(state: dict[str, Any], ctx: RunContext) -> AgentOutcome:
    """The commands the episode ran as the candidate; a run without a model, or whose model
    failed, is a failed run."""
    ep = state.get("episode") or {}
    failure = None
    if ep.get("stop") == NO_LLM:
        failure = (
            "the terminal agent needs an LLM (--model ...): offline it has nothing to act with"
        )
    elif str(ep.get("stop", "")).startswith("llm error"):
        failure = ep["stop"]
    extra = TerminalExtra(steps=ep.get("steps"), llm_calls=ep.get("llm_calls"),
                          tokens=ep.get("tokens"), harness=ep.get("harness"))  # fmt: skip
    return AgentOutcome(
        best_candidate={"commands": ep.get("commands") or []},
        n_evaluations=0, stop_reason=str(ep.get("stop", "")), failure=failure,
        extra=extra.model_dump(),
    )  # fmt: skip


def run_episode(
    task: SaddleTask,
    harness: Harness,
    llm: LLM,
    sandbox: Sandbox | None,
    *,
    temperature: float = 0.7,
    step_timeout_s: float = 30.0,
    tracer: Tracer | None = None,
) -> dict[str, Any]:
    """Work ``task`` with ``llm`` through ``harness`` (``problem`` says what each part
    does): the trajectory (every turn, the commands run, why it stopped, turns, LLM calls,
    tokens). The reward is never the agent's: whoever runs the episode replays
    ``{"commands": ...}`` from the task's initial files and runs the hidden test
    (``SaddleTask.evaluate``)."""
    t0 = time.perf_counter()
    instruction = task.instruction
    files = task.initial_files()
    turns: list[dict[str, Any]] = []
    commands: list[str] = []
    calls = tokens = 0
    checked = False
    stop = "step limit"
    first_extra = ""
    if "list_files_first" in harness.hooks:
        _, res = task.step(files, "find . -type f | sort | head -n 100", sandbox, step_timeout_s)
        first_extra = FILES_HEAD + "\n" + clip(res["stdout"].strip() or "(none)", 2000)[0]
    hook_errors: list[str] = []

    def hooks_at(point: str) -> str | None:
        """The notes of the code hooks at ``point`` (None: none spoke)."""
        notes = []
        for hk in harness.code_hooks_at(point):
            obs = hook_obs(point, instruction, harness, turns, submits)
            note, err = run_code_hook(hk.source, obs, sandbox)
            if err:
                hook_errors.append(f"{hk.name}@{point}: {err}")
            if note:
                notes.append(note)
        return "\n".join(notes) or None

    submits = 0
    while len(turns) < harness.max_steps:
        msgs = messages_for(harness, instruction, first_extra, turns)
        note = hooks_at("before_action") if harness.code_hooks else None
        if note:
            msgs = [
                *msgs[:-1],
                {**msgs[-1], "content": f"{msgs[-1]['content']}\n\n{HOOK_NOTE}\n{note}"},
            ]
        turn = next_action(llm, harness, msgs, temperature=temperature, calls=calls)
        calls += turn["calls"]
        tokens += turn["tokens"]
        if turn["stop"]:
            stop = turn["stop"]
            break
        action, reasks = turn["action"], turn["reasks"]
        reply_text = clip(turn["text"], REPLY_CLIP)[0]
        if action is None:
            turns.append({"kind": "invalid", "reply": reply_text, "why": turn["why"], "reasks": reasks,
                          "shown": f"No usable action: {turn['why']}. {FORMAT_HINT}"})  # fmt: skip
            continue
        if "submit" in action:
            submits += 1
            block = hooks_at("before_submit") if harness.code_hooks else None
            if block:
                turns.append({"kind": "check", "reply": reply_text, "reasks": reasks,
                              "shown": block, "hook": True})  # fmt: skip
                continue
            if "verify_before_submit" in harness.hooks and not checked:
                checked = True
                turns.append(
                    {"kind": "check", "reply": reply_text, "reasks": reasks, "shown": VERIFY_TEXT}
                )
                continue
            stop = "submitted"
            break
        cmd = action["command"]
        files, res = task.step(files, cmd, sandbox, step_timeout_s)
        commands.append(cmd)
        shown, clipped = observation(res, harness.output_chars)
        turns.append({"kind": "command", "reply": reply_text, "command": cmd, "reasks": reasks,
                      "returncode": res["returncode"], "timed_out": res["timed_out"],
                      "stdout_tail": res["stdout"][-TAIL_CLIP:], "stderr_tail": res["stderr"][-TAIL_CLIP:],
                      "clipped": clipped, "shown": shown})  # fmt: skip
        note = hooks_at("after_observation") if harness.code_hooks else None
        if note:
            turns[-1]["shown"] += f"\n\n{HOOK_NOTE}\n{note}"
        if tracer is not None:
            tracer.event(
                "terminal_step", task=task.name, command=cmd[:200], returncode=res["returncode"]
            )
    return {
        "task": task.name,
        "instruction": instruction,
        "harness": harness.version,
        "commands": commands,
        "turns": turns,
        "stop": stop,
        "steps": len(turns),
        "llm_calls": calls,
        "tokens": tokens,
        "summarized": len(turns) > harness.keep_turns,
        "hook_errors": hook_errors[:20],
        "seconds": round(time.perf_counter() - t0, 3),
    }


HOOK_NOTE = "Harness note:"


def hook_obs(
    point: str, instruction: str, harness: Harness, turns: list[dict[str, Any]], submits: int
) -> dict[str, Any]:
    """What a code hook reads (plain data; ``harness_hooks`` says what it may do with it):
    ``point``, ``instruction``, ``step`` (turns so far), ``max_steps``, ``submits`` (submit
    attempts so far), ``turns`` (each ``{"kind": "command"|"check"|"invalid", "command",
    "returncode", "timed_out", "stdout", "stderr"}``, the outputs' last 300 characters)."""
    return {
        "point": point, "instruction": instruction, "step": len(turns),
        "max_steps": harness.max_steps, "submits": submits,
        "turns": [{"kind": t["kind"], "command": t.get("command", ""),
                   "returncode": t.get("returncode", 0), "timed_out": bool(t.get("timed_out")),
                   "stdout": t.get("stdout_tail", ""), "stderr": t.get("stderr_tail", "")}
                  for t in turns],
    }  # fmt: skip
