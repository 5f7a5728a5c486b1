"""Terminal-agent rows on the saddle suite's dev tasks: each task's reference shell solution
played through the agent's own episode driver (``run_episode``, the base harness), one row
per turn.

Format ``action-json``: the conversation the harness builds before a turn (system message
with the tools, the task, the turns so far); the reply is one JSON action,
``{"command": "..."}`` or ``{"submit": true}`` (``parse_action``). A trajectory counts only
when its commands, replayed by the suite, pass the hidden test.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from optiforge.agents.terminal.agent import run_episode
from optiforge.agents.terminal.problem import SUMMARY_HEAD, base_harness, parse_action
from optiforge.harness.posttrain.capture import CaptureLLM, prompt_messages
from optiforge.harness.posttrain.data import Row, Verdict, make_row

AGENT, SUITE, FORMAT = "terminal", "saddle", "action-json"
_SUMMARY = re.compile(r"^\d+\. `(.*)` -> exit -?\d+$")


def _sandbox() -> Any:
    from optiforge.sandboxes import get_sandbox

    return get_sandbox("local")


def _task(task: str) -> Any:
    from optiforge.evals.registry import resolve_task

    return resolve_task(task)


def action_text(action: dict[str, Any]) -> str:
    """An action as the reply (one JSON object)."""
    return json.dumps(action)


def episode_requests(
    task: Any, actions: list[dict[str, Any]], sandbox: Any
) -> tuple[list[list[dict[str, str]]], dict[str, Any]]:
    """The requests of an episode whose model answers ``actions`` in turn (base harness,
    commands really run), and the episode record."""
    replies = iter(actions)

    def answer(_messages: list[dict[str, Any]], _schema: Any) -> str:
        return action_text(next(replies, {"submit": True}))

    llm = CaptureLLM(answer)
    ep = run_episode(task, base_harness(), llm, sandbox, temperature=0.7)
    return [prompt_messages(r) for r in llm.requests], ep


def history_commands(messages: list[dict[str, Any]]) -> tuple[list[str], bool]:
    """The commands already run, read from the conversation (summary lines, then the
    verbatim turns); whether one was shown truncated (a summary keeps 120 characters)."""
    cmds: list[str] = []
    cut = False
    for i, m in enumerate(messages):
        if m["role"] == "user" and i == 1 and SUMMARY_HEAD in m["content"]:
            block = m["content"].split(SUMMARY_HEAD, 1)[1]
            for line in block.strip().splitlines():
                hit = _SUMMARY.match(line.strip())
                if hit:
                    cmds.append(hit.group(1))
                    cut = cut or len(hit.group(1)) >= 120
        if m["role"] == "assistant":
            action, _ = parse_action(m["content"])
            if action and "command" in action:
                cmds.append(action["command"])
    return cmds, cut


def verify(
    task: str, messages: list[dict[str, Any]], reply: str, sandbox: Any | None = None
) -> Verdict:
    """The reply parses as an action (``parse_action``, the base harness's parser). A
    submit is valid when the commands run so far pass the hidden test; a command is valid
    when it runs (exit 0) after them and the work is still finishable: those commands, it,
    and the reference commands not yet run, replayed by the suite, pass the test.
    score: the reward of that replay (0 or 1)."""
    sandbox = sandbox or _sandbox()
    t = _task(task)
    action, why = parse_action(reply)
    if action is None:
        return Verdict(valid=False, detail=why)
    done, cut = history_commands(messages)
    note = "; a summarized command was truncated" if cut else ""
    if "submit" in action:
        s = t.evaluate({"commands": done}, sandbox)
        ok = s.passed and s.value == 1.0
        return Verdict(valid=ok, score=float(s.value) if s.passed else 0.0,
                       detail=("the work passes the hidden test" if ok else "submitted unfinished work") + note)  # fmt: skip
    cmd = action["command"]
    ran = [*done, cmd]
    rest = [c for c in t.solution() if c not in ran]
    s = t.evaluate({"commands": [*ran, *rest]}, sandbox)
    failed = {f["index"] for f in s.details.get("failed_commands", [])}
    if len(done) in failed:
        return Verdict(valid=False, score=0.0, detail=f"the command failed{note}")
    ok = s.passed and s.value == 1.0
    return Verdict(valid=ok, score=float(s.value) if s.passed else 0.0,
                   detail=("finishable" if ok else "the reference steps no longer finish the task") + note)  # fmt: skip


def rows(
    scale: int = 1, progress: Callable[[str], None] | None = None, limit: int | None = None
) -> Iterator[Row]:
    """One row per turn of each dev task's reference episode (``scale`` has no effect)."""
    from optiforge.evals.registry import get_benchmark

    sandbox = _sandbox()
    made = 0
    for t in get_benchmark(SUITE).tasks("dev")[:limit]:
        ref = f"{SUITE}/{t.name}"
        actions = [{"command": c} for c in t.solution()] + [{"submit": True}]
        requests, ep = episode_requests(t, actions, sandbox)
        if (
            ep["stop"] != "submitted"
            or t.evaluate({"commands": ep["commands"]}, sandbox).value != 1.0
        ):
            if progress:
                progress(
                    f"{AGENT}: {ref}: the reference episode did not pass ({ep['stop']}): no rows"
                )
            continue
        for msgs, action in zip(requests, actions, strict=False):
            reply = action_text(action)
            v = verify(ref, msgs, reply, sandbox)
            if v.valid:
                made += 1
                yield make_row(
                    AGENT, FORMAT, ref, msgs, reply, "terminal.reference-solution", v, t.metric
                )
    if progress:
        progress(f"{AGENT}: {made} rows")


def heldout_texts() -> list[dict[str, Any]]:
    """The held-out splits' tasks: their first-turn prompt, their reference commands of 40
    characters or more as answers (``cat out.txt`` is every task's), their instructions
    as distinctive content."""
    from optiforge.agents.terminal.problem import messages_for
    from optiforge.evals.registry import get_benchmark

    b = get_benchmark(SUITE)
    out = []
    for split in b.splits:
        if "heldout" not in split:
            continue
        for t in b.tasks(split):
            first = prompt_messages(messages_for(base_harness(), t.instruction, "", []))
            out.append({"task": f"{SUITE}/{t.name}", "prompts": [first], "answers": [c for c in t.solution() if len(c) >= 40],
                        "distinctive": [t.instruction]})  # fmt: skip
    return out
