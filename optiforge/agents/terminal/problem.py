"""The terminal agent's domain: the action format and the conversation a harness builds.

The harness (``optiforge.agents.kit.harness.Harness``) decides everything around the
model: the system message (prompt, tools, usage examples), the first user message (the
instance template), how many turns and LLM calls it gets, whether a fenced shell block
counts as a command, how often an unusable reply is re-asked before the turn is lost, how
much of a command's output it sees (head and tail), how much history it keeps verbatim
(older turns shrink to one line each), and its hooks:

- ``list_files_first``: the work dir's file list is run before the first turn and shown
  in the first message;
- ``verify_before_submit``: the first ``submit`` is answered with a request to check the
  work against the task first (the next ``submit`` ends the episode);
- ``reread_instruction``: every later user message ends with the task's instruction.

The model answers each turn with one JSON object: ``{"command": "..."}`` (run by
``SaddleTask.step`` in a fresh sandbox run over the work dir's files) or
``{"submit": true}`` (``parse_action``). ``agent.run_episode`` drives the turns.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypedDict

from optiforge.agents.kit.harness import Harness
from optiforge.errors import ConfigError

TOOLS = {
    "shell": '{"command": "<one shell command>"} runs it with /bin/sh in the task\'s work dir. '
    "Files persist between commands; shell state (cd, variables) does not.",
    "submit": '{"submit": true} ends the task; hidden tests then check the work dir.',
}
VERIFY_TEXT = (
    "Before you submit: check your work against every requirement of the task (look at the "
    "files you were asked to produce, and at any command that failed), fix what is wrong, "
    'then reply {"submit": true} again.'
)
FORMAT_HINT = 'Reply with exactly one JSON object: {"command": "..."} or {"submit": true}.'
SUMMARY_HEAD = "Earlier turns, summarized:"
REMINDER_HEAD = "Reminder of the task:"
FILES_HEAD = "Files in the work dir:"
REPLY_CLIP = 600
TAIL_CLIP = 300


def base_harness() -> Harness:
    """The untuned harness AutoSaddler starts from: a plain prompt, no usage examples, 6
    turns, no re-asks, 1500 output characters, 4 turns of verbatim history, no hooks.
    Deliberately minimal (the paper's base harnesses are too); every limit is one patch away."""
    return Harness(
        name="terminal",
        system_prompt=(
            "You are an agent that completes tasks in a Linux shell. The task's files are in "
            "your work dir. Work step by step: look at the files, run commands, and submit "
            "when the task is done."
        ),
        instance_template="Task:\n{instruction}",
        tools=["shell", "submit"],
        max_steps=6,
        retries=0,
        output_chars=1500,
        keep_turns=4,
    )


class TerminalState(TypedDict, total=False):
    """The graph's state: the finished episode (``nodes.run_episode``'s trajectory)."""

    episode: dict[str, Any]


def system_message(h: Harness) -> str:
    unknown = [t for t in h.tools if t not in TOOLS]
    if unknown:
        raise ConfigError(f"harness tools {unknown} unknown (known: {', '.join(TOOLS)})")
    text = h.system_prompt.strip() + "\n\nTools (reply with exactly one JSON object per turn):\n"
    text += "\n".join(f"- {t}: {TOOLS[t]}" for t in h.tools)
    if h.tool_examples:
        text += "\n\nExamples:\n" + "\n".join(f"- {e}" for e in h.tool_examples)
    return text


def clip(text: str, limit: int) -> tuple[str, bool]:
    """Head and tail of ``text`` within ``limit`` characters; whether it was clipped."""
    if len(text) <= limit:
        return text, False
    note = f"\n[... {len(text) - limit} characters clipped ...]\n"
    keep = max(limit - len(note), 0)
    return text[: keep // 2] + note + text[len(text) - (keep - keep // 2) :], True


_FENCE = re.compile(r"```(?:bash|sh|shell|console)?[ \t]*\n(.*?)```", re.S)


def parse_action(text: str, codeblocks: bool = False) -> tuple[dict[str, Any] | None, str]:
    """The reply's action (``{"command": str}`` or ``{"submit": True}``), or None and why.
    ``codeblocks``: without a JSON action, the first fenced shell block's non-comment lines
    (joined with `` && ``) are the command."""
    for m in re.finditer(r"\{", text or ""):
        try:
            obj, _ = json.JSONDecoder().raw_decode(text[m.start() :])
        except ValueError:
            continue
        if isinstance(obj, dict):
            cmd = obj.get("command")
            if isinstance(cmd, str) and cmd.strip():
                if "\x00" in cmd:
                    return None, "the command holds a NUL byte"
                return {"command": cmd}, ""
            if obj.get("submit") is True:
                return {"submit": True}, ""
    if codeblocks:
        for m in _FENCE.finditer(text or ""):
            lines = [ln.strip() for ln in m.group(1).splitlines()]
            lines = [ln.removeprefix("$ ") for ln in lines if ln and not ln.startswith("#")]
            if lines and "\x00" not in m.group(1):
                return {"command": " && ".join(lines)}, ""
    if not (text or "").strip():
        return None, "the reply was empty"
    return None, "the reply holds no JSON object with a non-empty command or submit: true"


def observation(result: dict[str, Any], limit: int) -> tuple[str, bool]:
    body = f"exit code: {result['returncode']}" + (" (timed out)" if result["timed_out"] else "")
    out, err = result["stdout"], result["stderr"]
    if out:
        body += "\nstdout:\n" + out.rstrip("\n")
    if err:
        body += "\nstderr:\n" + err.rstrip("\n")
    return clip(body, limit)


def _summary_line(i: int, turn: dict[str, Any]) -> str:
    if turn["kind"] == "command":
        return f"{i + 1}. `{turn['command'][:120]}` -> exit {turn['returncode']}"
    if turn["kind"] == "check":
        return f"{i + 1}. submit -> asked to check the work first"
    return f"{i + 1}. (no usable action)"


def messages_for(
    h: Harness, instruction: str, first_extra: str, turns: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The conversation the model sees before its next turn."""
    first = h.instance_template.replace("{instruction}", instruction)
    if first_extra:
        first += "\n\n" + first_extra
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": system_message(h)},
        {"role": "user", "content": first},
    ]
    old, recent = turns[: max(len(turns) - h.keep_turns, 0)], turns[-h.keep_turns :]
    if old:
        lines = [_summary_line(i, t) for i, t in enumerate(old)]
        msgs[-1]["content"] += "\n\n" + SUMMARY_HEAD + "\n" + "\n".join(lines)
    for t in recent:
        msgs.append({"role": "assistant", "content": t["reply"]})
        msgs.append({"role": "user", "content": t["shown"]})
    if turns and "reread_instruction" in h.hooks:
        msgs[-1]["content"] += f"\n\n{REMINDER_HEAD}\n{instruction}"
    return msgs
