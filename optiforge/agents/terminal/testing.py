"""Simulated shell models for the ``terminal`` agent (the scripted AutoSaddler proposer is
``optiforge.agents.autosaddler.testing``, the simulated AutoREM writer
``optiforge.agents.autorem.testing``).

Two simulated models, labelled in every result:

- ``SimulatedShellModel`` (**rule-matched**, the sanity check): four planted defects, each
  cured by exactly one patch of the rule library, so tuning's gain is true by construction;
  it checks that the machinery finds and keeps the cures.
- ``UnmatchedShellModel`` (**not rule-matched**): stochastic defects that no single patch
  removes, a defect that only two patches together cure, a defect no patch cures (so the
  ceiling is below 100%), and a defect whose cure is control logic the switches do not
  offer (a code hook). See its docstring.

``SimulatedShellModel`` is NOT a model of anything real: it is an oracle that knows every
``saddle`` task's reference solution and follows it, with four defects whose rates are
parameters. It exists so that AutoSaddler's machinery (diagnosis, patches, the validation
gate) can be exercised end to end without an LLM, and its numbers are labelled as such;
they are not evidence that harness tuning helps a real model.

Its defects, and which harness mechanisms it responds to (it ignores prose advice):

- **format slips**: without usage examples in the system message (``Examples:``), each
  reply is a Markdown code block instead of the JSON action with probability
  ``p_format``; right after a "No usable action" message it always answers well, and
  when the action is asked for with a schema it is always well-formed (as under
  constrained decoding).
- **exploration**: unless the first message lists the work dir's files
  (``list_files_first``), its first command is ``ls -la``.
- **a slip**: with probability ``p_slip`` one non-display command of the solution is run
  with a typo (it fails, exit 127). With probability ``p_notice`` it notices at once and
  re-runs it correctly; otherwise it goes on, and repairs (re-runs the solution from the
  slip on) only when the harness asks it to check its work (``verify_before_submit``).
- **instruction drift**: with probability ``p_drift``, when older turns have been
  summarized away and the last message does not restate the task
  (``reread_instruction``), it submits before the solution's last non-display command
  (it forgot that requirement); a check request brings it back.

Every draw is a function of ``(seed, instruction)`` (and the turn, for format slips), and
its progress is read back from the conversation it is shown, so a run is reproducible and
a harness change changes only what the harness changes.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from typing import Any

import numpy as np

from optiforge.agents.terminal.problem import FILES_HEAD, REMINDER_HEAD, SUMMARY_HEAD, VERIFY_TEXT

DISPLAY = ("cat ", "ls", "head ", "tail ", "wc ", "echo ")
_SUMMARY_CMD = re.compile(r"^\d+\. `.*` -> exit ")


@functools.cache
def _solutions() -> dict[str, tuple[str, ...]]:
    from optiforge.evals.registry import get_benchmark

    bench = get_benchmark("saddle")
    out: dict[str, tuple[str, ...]] = {}
    for split in bench.splits:
        for t in bench.tasks(split):
            out[t.instruction] = tuple(t.solution())
    return out


def _rng(*salt: Any) -> np.random.Generator:
    h = hashlib.sha256(json.dumps([str(s) for s in salt]).encode()).hexdigest()
    return np.random.default_rng(int(h[:16], 16))


def _typo(cmd: str) -> str:
    first = cmd.split()[0]
    return cmd.replace(first, first + "_", 1)


def _episode_view(messages: list[dict[str, Any]]) -> tuple[str, str, str, str] | None:
    """What both simulated models read from a prompt: the first user message, the task's
    instruction found in it (None when it names no known task), the last message and the
    harness's summary of earlier commands."""
    first_user = str(messages[1]["content"]) if len(messages) > 1 else ""
    instruction = next((i for i in _solutions() if i in first_user), None)
    if instruction is None:
        return None
    last = str(messages[-1]["content"])
    summary = first_user.split(SUMMARY_HEAD, 1)[1] if SUMMARY_HEAD in first_user else ""
    return first_user, instruction, last, summary


class SimulatedShellModel:
    """See the module doc. Call it as a ``FunctionLLM`` function, or use ``llm()``."""

    def __init__(self, seed: int = 0, *, p_format: float = 0.3, p_slip: float = 0.5,
                 p_notice: float = 0.3, p_drift: float = 0.7) -> None:  # fmt: skip
        self.seed = seed
        self.p_format, self.p_slip, self.p_notice, self.p_drift = (
            p_format,
            p_slip,
            p_notice,
            p_drift,
        )

    def llm(self) -> Any:
        from optiforge.testing.scripted import FunctionLLM

        return FunctionLLM(self, model=f"simulated-shell-s{self.seed}")

    def plan(self, instruction: str) -> dict[str, Any]:
        """The episode's draws: the two passes and whether it drifts."""
        sol = list(_solutions().get(instruction, ()))
        r = _rng("episode", self.seed, instruction)
        work = [i for i, c in enumerate(sol) if not c.lstrip().startswith(DISPLAY)]
        slip = int(r.choice(work)) if work and r.random() < self.p_slip else None
        notice = bool(r.random() < self.p_notice)
        drift = bool(r.random() < self.p_drift)
        first = list(sol)
        repair: list[str] = []
        if slip is not None:
            first = sol[:slip] + [_typo(sol[slip])] + (sol[slip:] if notice else sol[slip + 1 :])
            repair = [] if notice else sol[slip:]
        last_req = _typo(sol[work[-1]]) if work and slip == work[-1] and not notice else (
            sol[work[-1]] if work else None)  # fmt: skip
        return {"first": first, "repair": repair, "drift": drift, "last_required": last_req}

    def __call__(self, messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        # progress, read back from what the harness shows: summary lines and verbatim turns
        view = _episode_view(messages)
        if view is None:
            return json.dumps({"submit": True})
        first_user, instruction, last, summary = view
        commands = [ln for ln in summary.splitlines() if _SUMMARY_CMD.match(ln)]
        n_cmds = len(commands)
        checked = "asked to check" in summary
        for m in messages[2:]:
            if m["role"] == "assistant" and '"command"' in str(m["content"]):
                n_cmds += 1
            if m["role"] == "user" and str(m["content"]).startswith(VERIFY_TEXT[:30]):
                checked = True
        p = self.plan(instruction)
        explore = 0 if FILES_HEAD in first_user else 1
        n = n_cmds - explore
        turn = sum(1 for m in messages if m["role"] == "assistant")
        reasked = last.startswith("No usable action")
        if n < 0:
            action: dict[str, Any] = {"command": "ls -la"}
        elif n < len(p["first"]):
            nxt = p["first"][n]
            forgets = (p["drift"] and not checked and SUMMARY_HEAD in first_user
                       and REMINDER_HEAD not in last and nxt == p["last_required"])  # fmt: skip
            action = {"submit": True} if forgets else {"command": nxt}
        elif checked and n - len(p["first"]) < len(p["repair"]):
            action = {"command": p["repair"][n - len(p["first"])]}
        else:
            action = {"submit": True}
        has_examples = "\nExamples:\n" in str(messages[0]["content"])
        if schema is not None:  # decoding constrained to the schema: always well-formed
            return json.dumps({"command": action.get("command", ""), "submit": "submit" in action})
        if not reasked and not has_examples and _rng("format", self.seed, instruction,
                                                     turn).random() < self.p_format:  # fmt: skip
            body = action.get("command", "submit")
            return f"I'll do this next:\n```bash\n{body}\n```"
        return json.dumps(action)


class UnmatchedShellModel(SimulatedShellModel):
    """A simulated shell model whose defects are NOT each matched to a library rule
    (an oracle like ``SimulatedShellModel``, labelled so; it measures AutoSaddler, not a model).

    It follows each task's reference solution, with these defects (draws depend on the
    seed, the instruction and the turn, so runs are reproducible):

    - **stochastic format slips**: each reply is a fenced block instead of a JSON action
      with probability ``p_format`` (halved when the system message shows usage
      examples); half of those blocks are cut off (no closing fence: no parser reads
      them); a re-ask is answered well only with probability ``p_reask``; under an action
      schema the reply is empty (neither command nor submit) with probability
      ``p_empty``. Examples, re-asks, code blocks and schemas each remove part of it, none
      all of it.
    - **a slip only a code hook cures**: as the rule-matched model, one work command may
      run with a typo (``p_slip``), noticed at once with probability ``p_notice``. It
      repairs it (re-runs the solution from the slip) only when a message NAMES the
      failed command (e.g. ``Not submitted ... `cmd` failed``): the generic
      ``verify_before_submit`` request and prose advice do not move it. The library's
      ``verify_failed_commands`` code hook (``before_submit``) names it; no switch does.
    - **a defect two patches cure together**: with probability ``p_drift``, once older
      turns are summarized, it submits before the last work command, unless the last
      message restates the task (``reread_instruction``) AND at least 8 turns are kept
      verbatim (``keep_turns >= 8``, it sees 8 verbatim turns): either alone changes
      nothing; or unless nothing was summarized at all.
    - **a defect nothing cures**: on a fixed fraction ``p_unknown`` of tasks (by the
      instruction's hash), and on ``p_unknown_run`` of other runs, it does not know the
      last work command and leaves it out; every check request is answered with a submit.
      So pass@1 stays below 1 under any harness.
    - exploration: unless the work dir's files are listed first, its first command is
      ``ls -la`` (it costs a turn).
    """

    def __init__(self, seed: int = 0, *, p_format: float = 0.25, p_reask: float = 0.6,
                 p_empty: float = 0.1, p_slip: float = 0.5, p_notice: float = 0.2,
                 p_drift: float = 0.6, p_unknown: float = 0.15,
                 p_unknown_run: float = 0.08) -> None:  # fmt: skip
        super().__init__(seed, p_format=p_format, p_slip=p_slip, p_notice=p_notice, p_drift=p_drift)
        self.p_reask, self.p_empty = p_reask, p_empty
        self.p_unknown, self.p_unknown_run = p_unknown, p_unknown_run

    def llm(self) -> Any:
        from optiforge.testing.scripted import FunctionLLM

        return FunctionLLM(self, model=f"unmatched-shell-s{self.seed}")

    def plan(self, instruction: str) -> dict[str, Any]:
        p = super().plan(instruction)
        sol = list(_solutions().get(instruction, ()))
        work = [i for i, c in enumerate(sol) if not c.lstrip().startswith(DISPLAY)]
        r = _rng("unknown", self.seed, instruction)
        unknown = (_rng("unknown-task", instruction).random() < self.p_unknown
                   or r.random() < self.p_unknown_run)  # fmt: skip
        if unknown and work:
            last = sol[work[-1]]
            p["first"] = [c for c in p["first"] if c != last]
            p["repair"] = [c for c in p["repair"] if c != last]
        p["unknown"] = unknown
        return p

    def __call__(self, messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        view = _episode_view(messages)
        if view is None:
            return json.dumps({"submit": True})
        first_user, instruction, last, summary = view
        n_cmds = sum(1 for ln in summary.splitlines() if _SUMMARY_CMD.match(ln))
        verbatim = 0
        for m in messages[2:]:
            if m["role"] == "assistant":
                verbatim += 1
                n_cmds += _ran_command(str(m["content"]))
        p = self.plan(instruction)
        # a repair starts when a message named the slipped command (a code hook's note)
        slipped = next(
            (c for c in p["first"] if c not in p["repair"] and c.split()[0].endswith("_")), None
        )
        named = slipped is not None and any(
            m["role"] == "user" and f"`{slipped}` failed" in str(m["content"]) for m in messages[1:]
        )
        explore = 0 if FILES_HEAD in first_user else 1
        n = n_cmds - explore
        # the episode's turn index: summarized turns count too (a draw keyed on the verbatim
        # window alone would repeat forever once the window is full)
        turn = verbatim + sum(1 for ln in summary.splitlines() if re.match(r"^\d+\. ", ln))
        reasked = last.startswith("No usable action")
        if n < 0:
            action: dict[str, Any] = {"command": "ls -la"}
        elif n < len(p["first"]):
            nxt = p["first"][n]
            both = REMINDER_HEAD in last and verbatim >= 8
            forgets = (p["drift"] and SUMMARY_HEAD in first_user and not both
                       and nxt == p["last_required"])  # fmt: skip
            action = {"submit": True} if forgets else {"command": nxt}
        elif (named or n > len(p["first"])) and n - len(p["first"]) < len(p["repair"]):
            # once started (named by a message), the repair goes on to its end
            action = {"command": p["repair"][n - len(p["first"])]}
        else:
            action = {"submit": True}
        draw = _rng("format", self.seed, instruction, turn).random()
        if schema is not None:
            if draw < self.p_empty:
                return json.dumps({"command": "", "submit": False})
            return json.dumps({"command": action.get("command", ""), "submit": "submit" in action})
        has_examples = "\nExamples:\n" in str(messages[0]["content"])
        rate = self.p_format / (2 if has_examples else 1)
        if reasked:
            slip = _rng("reask", self.seed, instruction, turn).random() >= self.p_reask
        else:
            slip = draw < rate
        if slip:
            body = action.get("command", "submit")
            if _rng("cut", self.seed, instruction, turn).random() < 0.5:
                return f"Next I will run:\n```bash\n{body}"
            return f"I'll do this next:\n```bash\n{body}\n```"
        return json.dumps(action)


def _ran_command(reply: str) -> bool:
    """Was this reply a command (not a submit: under a schema both have a "command" key)?"""
    try:
        obj = json.loads(reply)
    except ValueError:
        return False
    return isinstance(obj, dict) and bool(str(obj.get("command") or "").strip())


def unmatched_llm(seed: int = 0, **rates: float) -> Any:
    """A ``FunctionLLM`` answering as ``UnmatchedShellModel(seed, **rates)``."""
    return UnmatchedShellModel(seed, **rates).llm()


def simulated_llm(seed: int = 0, **rates: float) -> Any:
    """A ``FunctionLLM`` answering as ``SimulatedShellModel(seed, **rates)``."""
    return SimulatedShellModel(seed, **rates).llm()


__all__ = ["SimulatedShellModel", "UnmatchedShellModel", "simulated_llm", "unmatched_llm"]
