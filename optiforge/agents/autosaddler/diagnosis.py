"""Diagnosing a failed terminal trajectory: the root cause, or only the last error.

``diagnose(episode, mode)`` names one failure category with its evidence.

- ``trace`` (AutoSaddler's diagnosis) reads the whole trajectory and names the first
  thing that made the rest fail, in this order: the LLM failed or ran out of calls;
  unusable replies wasted turns that the episode then lacked (``format``); a command
  failed and was never re-run successfully (``unverified_error``); the agent was still
  working when the turns ran out (``step_limit``); it submitted after older turns had been
  summarized away (``lost_instruction``); the output it acted on was clipped
  (``truncated_output``); else ``unknown``.
- ``last_error`` (the shallow-reflection ablation) reads only how the episode ended: the
  turn limit, an unusable last reply, a failed last command, or nothing visible.

``render(episode, mode)`` is the same evidence as text for an LLM diagnoser.
"""

from __future__ import annotations

from typing import Any

from optiforge.memory.provenance import quote_untrusted

CATEGORIES: dict[str, str] = {
    "format": "replies with no usable action wasted turns",
    "unverified_error": "a command failed and the agent went on without fixing it",
    "step_limit": "the agent ran out of turns while still working",
    "lost_instruction": "it submitted early after older turns were summarized away",
    "truncated_output": "it acted on clipped command output",
    "llm_limit": "it ran out of LLM calls",
    "llm_error": "the LLM failed",
    "unknown": "no pattern found in what the diagnosis reads",
}


def _key(cmd: str) -> str:
    parts = cmd.split(None, 1)
    return parts[1] if len(parts) > 1 else cmd


def unrepaired(turns: list[dict[str, Any]]) -> list[int]:
    """Indices of failed commands with no later successful command of the same text or the
    same arguments (a fix of the program name)."""
    out = []
    for i, t in enumerate(turns):
        if t.get("kind") != "command" or (t["returncode"] == 0 and not t["timed_out"]):
            continue
        fixed = any(
            u.get("kind") == "command" and u["returncode"] == 0
            and (u["command"] == t["command"] or _key(u["command"]) == _key(t["command"]))
            for u in turns[i + 1 :]
        )  # fmt: skip
        if not fixed:
            out.append(i)
    return out


def diagnose(ep: dict[str, Any], mode: str = "trace") -> dict[str, Any]:
    turns = ep.get("turns") or []
    stop = str(ep.get("stop", ""))
    if mode == "last_error":
        last = turns[-1] if turns else {}
        if stop == "step limit":
            return {"category": "step_limit", "evidence": "the episode ended at the turn limit"}
        if last.get("kind") == "invalid":
            return {
                "category": "format",
                "evidence": f"the last reply was unusable: {last.get('why')}",
            }
        if last.get("kind") == "command" and last["returncode"] != 0:
            return {"category": "unverified_error",
                    "evidence": f"the last command failed: {last['command'][:80]}"}  # fmt: skip
        return {"category": "unknown", "evidence": "the episode ended without a visible error"}
    if stop.startswith("llm error"):
        return {"category": "llm_error", "evidence": stop[:200]}
    if stop == "llm-call limit":
        return {"category": "llm_limit", "evidence": f"{ep.get('llm_calls')} LLM calls used"}
    invalid = [i for i, t in enumerate(turns) if t.get("kind") == "invalid"]
    bad = unrepaired(turns)
    if invalid and (stop == "step limit" or 3 * len(invalid) >= max(len(turns), 1)):
        return {"category": "format",
                "evidence": f"{len(invalid)} of {len(turns)} turns had no usable action "
                            f"(first: {turns[invalid[0]].get('why')}); stop: {stop}"}  # fmt: skip
    if bad:
        t = turns[bad[0]]
        return {"category": "unverified_error",
                "evidence": f"turn {bad[0] + 1} `{t['command'][:80]}` exited {t['returncode']} "
                            f"({t['stderr_tail'].strip()[-80:]}); never re-run successfully; stop: {stop}"}  # fmt: skip
    if stop == "step limit":
        return {"category": "step_limit", "evidence": f"all {len(turns)} turns used, no submit"}
    if stop == "submitted" and ep.get("summarized"):
        return {"category": "lost_instruction",
                "evidence": f"submitted after {len(turns)} turns, older ones summarized; the test failed"}  # fmt: skip
    clipped = [i for i, t in enumerate(turns) if t.get("clipped")]
    if clipped:
        return {
            "category": "truncated_output",
            "evidence": f"output of turn {clipped[0] + 1} was clipped",
        }
    return {
        "category": "unknown",
        "evidence": f"stop: {stop}; no failed command, no unusable reply",
    }


def render(ep: dict[str, Any], mode: str = "trace") -> str:
    """The trajectory as text for an LLM diagnoser (``last_error``: only its end)."""
    head = f"Task {ep.get('task')}: {str(ep.get('instruction', ''))[:600]}\n"
    turns = ep.get("turns") or []
    if mode == "last_error":
        last = turns[-1] if turns else None
        body = "Last turn: " + (_turn_line(len(turns) - 1, last) if last else "(none)")
        return head + body + f"\nEnded: {ep.get('stop')}; hidden test: failed"
    lines = [_turn_line(i, t) for i, t in enumerate(turns)]
    return (head + "\n".join(lines) + f"\nEnded: {ep.get('stop')} after {len(turns)} turns, "
            f"{ep.get('llm_calls')} LLM calls; hidden test: failed")  # fmt: skip


def _turn_line(i: int, t: dict[str, Any]) -> str:
    if t.get("kind") == "invalid":
        return f"{i + 1}. unusable reply ({t.get('why')}): {t.get('reply', '')[:120]!r}"
    if t.get("kind") == "check":
        return f"{i + 1}. submit -> the harness asked it to check its work first"
    err = t.get("stderr_tail", "").strip()[-160:]
    out = t.get("stdout_tail", "").strip()[-160:]
    return (f"{i + 1}. `{t.get('command', '')[:200]}` -> exit {t.get('returncode')}"
            + (" (timed out)" if t.get("timed_out") else "") + (" [output clipped]" if t.get("clipped") else "")
            # what the commands printed is the environment's output: quoted as data
            + (f"; stdout (end, quoted below)\n{quote_untrusted(out)}" if out else "")
            + (f"\nstderr (end, quoted below)\n{quote_untrusted(err)}" if err else ""))  # fmt: skip
