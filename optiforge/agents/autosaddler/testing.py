"""A scripted AutoSaddler proposer (``scripted_proposer``): fixed rules read the proposal
prompt, so the LLM-proposer path (prompt, structured reply, patch parsing, gate) runs
without a model. Labelled so wherever it is used; it measures no model."""

from __future__ import annotations

import json
import re
from typing import Any

from optiforge.agents.autosaddler.targets import VERIFY_FAILED_HOOK


def _harness_settings(prompt: str) -> dict[str, Any]:
    """The ``harness.json`` shown in an AutoSaddler proposal prompt."""
    m = re.search(r"--- harness\.json ---\n(\{.*?\n\})", prompt, re.S)
    return json.loads(m.group(1)) if m else {}


def scripted_proposer_reply(prompt: str, whole: bool) -> dict[str, Any]:
    """What the scripted proposer answers (see ``scripted_proposer``)."""
    h = _harness_settings(prompt)
    failures = prompt.split("\nFailure 1:\n", 1)[-1]
    hooks = h.get("hooks", [])
    found: list[tuple[str, str, dict[str, Any]]] = []
    if "unusable reply" in failures:
        if not h.get("tool_examples"):
            found.append(("format", "replies were not JSON actions",
                          {"target": "tool_examples", "op": "append",
                           "value": '{"command": "ls -la"} or {"submit": true}'}))  # fmt: skip
        else:
            found.append(("format", "replies were not JSON actions",
                          {"target": "retries", "op": "set", "value": int(h.get("retries", 0)) + 1}))  # fmt: skip
    if re.search(r"-> exit [1-9]", failures) and "verify_before_submit" not in hooks:
        found.append(("unverified_error", "a failed command was never fixed",
                      {"target": "hooks", "op": "append", "value": "verify_before_submit"}))  # fmt: skip
    elif re.search(r"-> exit [1-9]", failures) and not h.get("code_hooks"):
        # the switch is in and failed commands still go unfixed: write the check as code
        found.append(("unverified_error", "failed commands go unfixed despite the check request",
                      {"target": "code_hooks", "op": "append",
                       "value": {"name": "verify_failed_commands", "point": "before_submit",
                                 "source": VERIFY_FAILED_HOOK}}))  # fmt: skip
    if "Ended: step limit" in failures:
        found.append(("step_limit", "the turns ran out",
                      {"target": "max_steps", "op": "set", "value": 2 * int(h.get("max_steps", 6))}))  # fmt: skip
    if "reread_instruction" not in hooks:
        found.append(("lost_instruction", "the task was forgotten late in the episode",
                      {"target": "hooks", "op": "append", "value": "reread_instruction"}))  # fmt: skip
    if not found:
        found.append(("unknown", "nothing visible",
                      {"target": "system_prompt", "op": "append", "value": "Work carefully."}))  # fmt: skip
    cat, cause, patch = found[0]
    out: dict[str, Any] = {
        "root_cause": cause,
        "category": cat,
        "evidence": "from the trajectories",
    }
    if whole:
        out["patches"] = [{**p, "why": c} for _, c, p in found]
    else:
        out["patch"] = {**patch, "why": cause}
    return out


def scripted_proposer() -> Any:
    """A scripted LLM for AutoSaddler's LLM proposer path: it answers a ``Proposal`` (or
    ``WholeProposal``) by reading the prompt's text (the harness settings and the rendered
    failures) with fixed rules, so the prompt, the structured reply, the patch parsing and
    the gate are exercised without a model."""
    from optiforge.testing.scripted import FunctionLLM

    def fn(messages: list[dict[str, Any]], tools: Any, schema: Any) -> str:
        prompt = str(messages[-1]["content"])
        whole = getattr(schema, "__name__", "") == "WholeProposal"
        return json.dumps(scripted_proposer_reply(prompt, whole))

    return FunctionLLM(fn, model="scripted-saddler")


__all__ = ["scripted_proposer", "scripted_proposer_reply"]
